// The fiber core: Boost.Context fibers on pooled, guard-protected stacks. See fiber.hpp.
#include "fiber.hpp"

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/detail/fcontext.hpp>
#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Boost.Context's context-switch layer (make_fcontext / jump_fcontext), the layer its own
// fiber and callcc types are built on. We use it directly because a suspended context is then
// a plain pointer: dropping one (a failed work-group) needs no unwinding and no record, and
// stacks are ours to pool. (Measured on the 2-core VM: a ring of 256 contexts switches in
// ~13 ns with jump_fcontext, ~26 ns with boost::context::fiber; see docs/design.md.)
namespace fctx = boost::context::detail;

// AddressSanitizer must be told about every switch between stacks (Debian's Boost has no
// sanitizer hooks), or it reports false errors. Only compiled into ASan builds.
#if defined(__SANITIZE_ADDRESS__)
#define KI_FIBER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define KI_FIBER_ASAN 1
#endif
#endif
#ifndef KI_FIBER_ASAN
#define KI_FIBER_ASAN 0
#endif
#if KI_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// ThreadSanitizer must know which fiber runs, or it mixes up the shadow stacks of the fibers
// and reports nonsense. Each stack gets one TSan fiber (a stack hosts one fiber at a time), the
// thread's own stack is the thread's fiber, and every switch announces its target. Switches
// synchronise (flag 0): the work-items of a group run one at a time, in the order we choose.
#if defined(__SANITIZE_THREAD__)
#define KI_FIBER_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define KI_FIBER_TSAN 1
#endif
#endif
#ifndef KI_FIBER_TSAN
#define KI_FIBER_TSAN 0
#endif
#if KI_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#include <unordered_map>
#endif

namespace ki::reference::detail {
namespace {

// jump_fcontext resumes the other context with an indirect jmp, not a ret, so the return address
// that its call pushed on the CPU's return-stack buffer is never popped: every later ret of the
// resumed fiber (switch_to's, the barrier's, the kernel's ...) is then predicted one frame off
// and mispredicts. On x86-64 jump() calls it from a stub that, where it lands, first pops that
// entry with a ret that goes exactly where the buffer predicts (once: r11 says whether it was
// done), then returns normally. Measured with tools/bench on the 2-core VM (medians): a ring of
// 256 fibers switching through fiber_core::switch_to goes from ~22 to ~15 ns per switch, a
// barrier from ~40 to ~26 ns per work-item.
#if defined(__x86_64__) && defined(__linux__)
extern "C" fctx::transfer_t ki_reference_jump_fcontext(fctx::fcontext_t to, void* data);
asm(R"(
  .text
  .p2align 4
  .globl ki_reference_jump_fcontext
  .hidden ki_reference_jump_fcontext
  .type ki_reference_jump_fcontext, @function
ki_reference_jump_fcontext:
  subq $8, %rsp
  xorl %r11d, %r11d
  call jump_fcontext@PLT
1:
  testq %r11, %r11
  jnz 2f
  movl $1, %r11d
  leaq 1b(%rip), %rcx
  pushq %rcx
  ret
2:
  addq $8, %rsp
  ret
  .size ki_reference_jump_fcontext, .-ki_reference_jump_fcontext
)");
inline fctx::transfer_t jump(fctx::fcontext_t to, void* data) { return ki_reference_jump_fcontext(to, data); }
#else
inline fctx::transfer_t jump(fctx::fcontext_t to, void* data) { return fctx::jump_fcontext(to, data); }
#endif

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// Large enough that a frame with a big local array still lands in it rather than beyond.
constexpr std::size_t guard_bytes = 64 * 1024;

// Stack colouring. Stacks are mapped one after another, so without it every fiber's top frames
// sit at the same address modulo 64 KiB, and the frames of a group's fibers compete for the
// same cache and TLB sets (on the 2-core VM a hand-written switch in a ring of 256 stacks 320 KiB
// apart costs 3x more than with coloured ones; with tools/bench's fiber_core ring and barrier
// benchmarks colouring saves ~5%). Stack k therefore starts colour_step * k (mod colour_span)
// bytes below the end of its mapping, which is colour_span larger than guard + usable: the
// usable size is never less than asked for, and the extra is untouched address space.
constexpr std::size_t colour_span = 64 * 1024;
constexpr std::size_t colour_step = 65 * 64;  // one page and one cache line

struct stack {
  char* base;         // start of the mapping (the guard region)
  std::size_t total;  // mapping size: guard + usable + colour_span
  std::size_t colour; // the initial stack pointer is this far below the end of the mapping
  char* top() const { return base + total - colour; }
};

thread_local fiber_core::fault* tl_fault = nullptr;  // set while run_guarded runs
thread_local sigjmp_buf* tl_jump = nullptr;
thread_local const std::vector<stack>* tl_stacks = nullptr;
thread_local int tl_signal = 0;  // the signal that ended the last guarded run

struct sigaction previous_segv, previous_bus;

void on_fault(int sig, siginfo_t* info, void* uctx) {
  if (tl_jump != nullptr && tl_fault != nullptr) {
    auto* addr = static_cast<char*>(info->si_addr);
    tl_fault->happened = true;
    tl_fault->address = addr;
    tl_fault->stack_overflow = false;
    if (tl_stacks != nullptr)
      for (const stack& s : *tl_stacks)
        if (addr >= s.base && addr < s.base + guard_bytes) tl_fault->stack_overflow = true;
    tl_signal = sig;
    siglongjmp(*tl_jump, 1);
  }
  // Not ours: behave as if we were not installed.
  const struct sigaction& prev = sig == SIGSEGV ? previous_segv : previous_bus;
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, uctx);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  } else {
    ::signal(sig, SIG_DFL);
    ::raise(sig);
  }
}

bool handler_is_ours(int sig) {
  struct sigaction cur {};
  ::sigaction(sig, nullptr, &cur);
  return (cur.sa_flags & SA_SIGINFO) != 0 && cur.sa_sigaction == &on_fault;
}

// Checked before the first guarded run of each launch, not once: test frameworks (Catch2 around
// each test case)
// and crash reporters install their own SIGSEGV handler and later restore the one they found,
// which would silently turn a reported stack overflow into a crash. The same goes for the
// alternate signal stack, which they may disable again when they are done.
void install_handlers() {
  // (Not before every guarded run: the check costs three system calls, about 1 us per
  // work-group on the 2-core VM, more than a whole group of 256 barrier-free work-items.)
  if (!handler_is_ours(SIGSEGV) || !handler_is_ours(SIGBUS)) {
    static std::mutex m;
    std::lock_guard lock(m);
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    // Whatever was installed meanwhile becomes the handler we defer to for faults not ours.
    if (!handler_is_ours(SIGSEGV)) ::sigaction(SIGSEGV, &sa, &previous_segv);
    if (!handler_is_ours(SIGBUS)) ::sigaction(SIGBUS, &sa, &previous_bus);
  }
  // A stack overflow cannot run its handler on the overflowed stack.
  stack_t cur{};
  ::sigaltstack(nullptr, &cur);
  if ((cur.ss_flags & SS_DISABLE) != 0) {
    static constexpr std::size_t alt_size = 64 * 1024;
    thread_local std::unique_ptr<char[]> alt(new char[alt_size]);
    stack_t ss{};
    ss.ss_sp = alt.get();
    ss.ss_size = alt_size;
    ::sigaltstack(&ss, nullptr);
  }
}

std::atomic<std::uint64_t> handler_generation{1};   // bumped by recheck_fault_handlers
thread_local std::uint64_t tl_checked_generation = 0;  // the generation this thread checked

}  // namespace

struct fiber_core::impl {
  std::size_t usable;
  std::vector<stack> stacks;  // every stack this thread ever made
  std::vector<char*> free;    // tops of the free ones
  std::vector<fctx::fcontext_t> slots;  // suspended contexts; nullptr: empty
  int live = 0;                          // non-empty slots (so that reset() need not scan them)
  struct region {  // a stack, for AddressSanitizer (unused otherwise)
    const void* bottom = nullptr;
    std::size_t size = 0;
  };
#if KI_FIBER_ASAN
  std::vector<region> slot_region;  // the stack of the context kept in each slot
  /// Before leaving the running context for one on `target` (dying: the running one ends).
  static void leave(void** fake, region target) { __sanitizer_start_switch_fiber(fake, target.bottom, target.size); }
  /// After arriving: note the stack of the context that switched to us, if it is kept.
  void landed(void* fake) {
    const void* bottom = nullptr;
    std::size_t size = 0;
    __sanitizer_finish_switch_fiber(fake, &bottom, &size);
    if (from >= 0) {
      if (slot_region.size() < slots.size()) slot_region.resize(slots.size());
      slot_region[static_cast<std::size_t>(from)] = {bottom, size};
    }
  }
  region region_of(int slot) const {
    return static_cast<std::size_t>(slot) < slot_region.size() ? slot_region[static_cast<std::size_t>(slot)] : region{};
  }
#else
  region region_of(int) const { return {}; }
#endif

#if KI_FIBER_TSAN
  std::vector<void*> slot_tsan;                 // the TSan fiber of the context kept in each slot
  std::unordered_map<char*, void*> tsan_stack;  // the TSan fiber of each stack (by its top)
  void* tsan_thread = nullptr;                  // the thread's own fiber, during run_guarded
  /// Before switching to the context on TSan fiber `to`: remember ours for slot `from_slot`.
  void tsan_leave(int from_slot, void* to) {
    if (from_slot >= 0) {
      if (slot_tsan.size() < slots.size()) slot_tsan.resize(slots.size(), nullptr);
      slot_tsan[static_cast<std::size_t>(from_slot)] = __tsan_get_current_fiber();
    }
    __tsan_switch_to_fiber(to, 0);
  }
  void* tsan_of_slot(int slot) const { return slot_tsan[static_cast<std::size_t>(slot)]; }
  void* tsan_of_stack(char* top) {
    void*& f = tsan_stack[top];
    if (f == nullptr) f = __tsan_create_fiber(0);
    return f;
  }
#endif

  /// Suspends the running context into slot `from_slot` and resumes c, whose stack is `target`.
  void go(int from_slot, fctx::fcontext_t c, region target) {
    from = from_slot;
#if KI_FIBER_ASAN
    void* fake = nullptr;
    leave(&fake, target);
    const fctx::transfer_t t = jump(c, this);
    landed(fake);
    arrived(t);
#else
    (void)target;
    arrived(jump(c, this));
#endif
  }
  int from = -1;      // slot of the context switching away; -1: it has ended (nothing to keep)
  entry_fn entry = nullptr;  // what the next spawned fiber runs
  void* arg = nullptr;
  char* entry_stack = nullptr;
  fault last_fault;  // written by the signal handler, read after siglongjmp

  char* get_stack() {
    if (!free.empty()) {
      char* top = free.back();
      free.pop_back();
      return top;
    }
    const std::size_t total = guard_bytes + usable + colour_span;
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::mprotect(p, guard_bytes, PROT_NONE);
    stacks.push_back({static_cast<char*>(p), total, stacks.size() * colour_step % colour_span});
    return stacks.back().top();
  }

  fctx::fcontext_t take(int i) {
    fctx::fcontext_t c = std::exchange(slots[static_cast<std::size_t>(i)], nullptr);
    if (c == nullptr) throw std::logic_error("ki::reference: internal error: resuming an empty fiber slot");
    --live;
    return c;
  }
  /// Where every switch lands: keep the context that switched away, unless it has ended.
  void arrived(fctx::transfer_t t) {
    if (from >= 0) slots[static_cast<std::size_t>(from)] = t.fctx, ++live;
  }

  // First code of every fiber. It never returns (a returning fcontext ends the process): when
  // the entry is done, the stack goes back to the pool and the fiber jumps away for good.
  static void trampoline(fctx::transfer_t t) {
    impl* self = static_cast<impl*>(t.data);
#if KI_FIBER_ASAN
    self->landed(nullptr);
#endif
    self->arrived(t);
    char* const my_stack = self->entry_stack;
    const int next = self->entry(self->arg);
    self->free.push_back(my_stack);  // safe: nothing runs on this thread before we leave it
    fctx::fcontext_t to = self->take(next);
    self->from = -1;
#if KI_FIBER_ASAN
    leave(nullptr, self->region_of(next));  // nullptr: this fiber's stack dies
#endif
#if KI_FIBER_TSAN
    self->tsan_leave(-1, self->tsan_of_slot(next));
#endif
    jump(to, nullptr);
    std::abort();  // unreachable: nobody resumes an ended fiber
  }
};

fiber_core::fiber_core(std::size_t stack_size) : impl_(std::make_unique<impl>()) {
  const std::size_t p = page_size();
  impl_->usable = (stack_size + p - 1) / p * p;
  install_handlers();
}

fiber_core::~fiber_core() {
  abandon_all();
#if KI_FIBER_TSAN
  for (auto& [top, f] : impl_->tsan_stack) __tsan_destroy_fiber(f);
#endif
  for (const stack& s : impl_->stacks) ::munmap(s.base, s.total);
}

std::size_t fiber_core::stack_size() const noexcept { return impl_->usable; }

void fiber_core::reset(int slots) {
  // After a group that finished normally every slot is empty and every stack is free.
  if (impl_->live != 0) abandon_all();
  if (impl_->slots.size() < static_cast<std::size_t>(slots)) impl_->slots.resize(static_cast<std::size_t>(slots), nullptr);
}

void fiber_core::spawn(int from, entry_fn entry, void* arg) {
  impl* s = impl_.get();
  char* top = s->get_stack();
  const fctx::fcontext_t c = fctx::make_fcontext(top, s->usable, &impl::trampoline);
  s->entry = entry;
  s->arg = arg;
  s->entry_stack = top;
#if KI_FIBER_TSAN
  s->tsan_leave(from, s->tsan_of_stack(top));
#endif
  s->go(from, c, {top - s->usable, s->usable});
}

void fiber_core::switch_to(int from, int to) {
  impl* s = impl_.get();
  const fctx::fcontext_t c = s->take(to);
#if KI_FIBER_TSAN
  s->tsan_leave(from, s->tsan_of_slot(to));
#endif
  s->go(from, c, s->region_of(to));
}

fiber_core::fault fiber_core::run_guarded(void (*body)(void*), void* arg) {
  fault& result = impl_->last_fault;
  result = {};
  sigjmp_buf jump;
  if (const std::uint64_t g = handler_generation.load(std::memory_order_relaxed); g != tl_checked_generation) {
    install_handlers();
    tl_checked_generation = g;
  }
  tl_fault = &result;
  tl_stacks = &impl_->stacks;
  tl_jump = &jump;
#if KI_FIBER_TSAN
  impl_->tsan_thread = __tsan_get_current_fiber();
#endif
  // No saved signal mask: saving it costs a sigprocmask system call per work-group. The only
  // change a fault makes to the mask is that the handler's own signal stays blocked after
  // siglongjmp; it was unblocked before (a synchronous fault of a blocked signal kills the
  // process without calling any handler), so unblocking it restores the mask exactly.
  if (sigsetjmp(jump, 0) == 0) {
    body(arg);
  } else {
    sigset_t fired;
    sigemptyset(&fired);
    sigaddset(&fired, tl_signal);
    ::pthread_sigmask(SIG_UNBLOCK, &fired, nullptr);
#if KI_FIBER_TSAN
    __tsan_switch_to_fiber(impl_->tsan_thread, 0);  // siglongjmp left a fiber's stack
#endif
    abandon_all();
  }
  tl_jump = nullptr;
  tl_fault = nullptr;
  return impl_->last_fault;
}

void fiber_core::recheck_fault_handlers() noexcept { handler_generation.fetch_add(1, std::memory_order_relaxed); }

void fiber_core::abandon_all() noexcept {
  for (auto& c : impl_->slots) c = nullptr;  // a dropped context is just forgotten, never unwound
  impl_->live = 0;
  impl_->free.clear();
  for (const stack& s : impl_->stacks) {
#if KI_FIBER_ASAN
    // The dropped fibers' frames never returned: clear ASan's marks before the stack is reused.
    __asan_unpoison_memory_region(s.base + guard_bytes, s.total - guard_bytes);
#endif
    impl_->free.push_back(s.top());
  }
}

}  // namespace ki::reference::detail
