// The fiber core: work-item contexts on pooled, guard-protected stacks, switched by hand-written
// code on x86-64 (Boost.Context elsewhere). See fiber.hpp.
#include <ki/cpu/fiber.hpp>

#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <csetjmp>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// Switching stacks. On x86-64 ELF (Linux, the BSDs) our own ten instructions (below); elsewhere
// Boost.Context's context-switch layer (make_fcontext / jump_fcontext), which its fiber and
// callcc types are built on. Either way a suspended context is a plain pointer, the stack
// pointer it left: dropping one (a failed work-group) needs no unwinding, and stacks are ours
// to pool. Why our own where we can (docs/design.md, "Fiber switches"): Boost's switch also saves
// and restores the x87 control word and MXCSR (ldmxcsr is slow) and resumes with an indirect jmp,
// which leaves the CPU's return-stack buffer one entry off, so every later ret of the resumed
// fiber mispredicts. Ours resumes with a ret from the one call site every switch goes through, so
// the returns of a work-item that suspended at a barrier and is resumed there are predicted.
#if KI_FIBER_OWN_SWITCH
// ki_fiber_switch(save, sp, pc, bp): pushes the callee-saved registers (System V ABI: rbp, rbx,
// r12-r15) on the running stack, stores the stack pointer in save->sp and the address of the
// code that pops them again (1: below) in save->pc, then resumes the context (sp, pc, bp): loads
// rbp and rsp and jumps to pc (falling through when pc is 1: itself, the common case between
// out-of-line switches: an indirect jump there cost ~2 ns per switch on the 2-core VM). That is the one way every context is resumed, whoever suspended
// it: this function (pc = 1:, which pops the registers and returns to switch_stacks' caller: the
// return is predicted, see above), ki_fiber_start (a new context), or the inline barrier switch
// of ki/detail/cpu/barrier.hpp, which saves nothing but sp, pc and rbp because its asm tells
// the compiler that every other register is clobbered. The floating-point control state
// (MXCSR, x87 control word) is not switched: the work-items of a group share their thread's, as
// code running on that thread would (documented in docs/design.md).
// ki_fiber_start is a new context's pc: its stack holds the function to call and its argument
// (placed there by make_context); it never returns.
extern "C" void ki_fiber_start();  // ki_fiber_switch is declared in fiber.hpp
// Both are targets of an indirect jump: with -fcf-protection they start with endbr64.
#if defined(__CET__)
#define KI_FIBER_ENDBR "endbr64"
#else
#define KI_FIBER_ENDBR ""
#endif
asm(R"(
  .text
  .p2align 4
  .globl ki_fiber_switch
  .hidden ki_fiber_switch
  .type ki_fiber_switch, @function
ki_fiber_switch:
  .cfi_startproc
  pushq %rbp
  .cfi_adjust_cfa_offset 8
  pushq %rbx
  .cfi_adjust_cfa_offset 8
  pushq %r12
  .cfi_adjust_cfa_offset 8
  pushq %r13
  .cfi_adjust_cfa_offset 8
  pushq %r14
  .cfi_adjust_cfa_offset 8
  pushq %r15
  .cfi_adjust_cfa_offset 8
  movq %rsp, (%rdi)
  leaq 1f(%rip), %rax
  movq %rax, 8(%rdi)
  movq %rcx, %rbp
  movq %rsi, %rsp
  cmpq %rax, %rdx
  jne 2f
1:
  )" KI_FIBER_ENDBR R"(
  .cfi_remember_state
  popq %r15
  .cfi_adjust_cfa_offset -8
  popq %r14
  .cfi_adjust_cfa_offset -8
  popq %r13
  .cfi_adjust_cfa_offset -8
  popq %r12
  .cfi_adjust_cfa_offset -8
  popq %rbx
  .cfi_adjust_cfa_offset -8
  popq %rbp
  .cfi_adjust_cfa_offset -8
  ret
  .cfi_restore_state
2:
  jmpq *%rdx
  .cfi_endproc
  .size ki_fiber_switch, .-ki_fiber_switch

  .p2align 4
  .globl ki_fiber_start
  .hidden ki_fiber_start
  .type ki_fiber_start, @function
ki_fiber_start:
  .cfi_startproc
  .cfi_undefined rip
  )" KI_FIBER_ENDBR R"(
  popq %rax
  popq %rdi
  xorl %ebp, %ebp
  callq *%rax
  ud2
  .cfi_endproc
  .size ki_fiber_start, .-ki_fiber_start
)");
#else
#include <boost/context/detail/fcontext.hpp>
namespace fctx = boost::context::detail;
#endif

// AddressSanitizer must be told about every switch between stacks (Debian's Boost has no
// sanitizer hooks), or it reports false errors. Only compiled into ASan builds (KI_FIBER_ASAN,
// fiber.hpp).
#if KI_FIBER_ASAN
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#endif

// ThreadSanitizer must know which fiber runs, or it mixes up the shadow stacks of the fibers
// and reports nonsense. Each stack gets one TSan fiber (a stack hosts one fiber at a time), the
// thread's own stack is the thread's fiber, and every switch announces its target. Switches
// synchronise (flag 0): the work-items of a group run one at a time, in the order we choose.
// Only compiled into TSan builds (KI_FIBER_TSAN, fiber.hpp).
#if KI_FIBER_TSAN
#include <sanitizer/tsan_interface.h>
#include <unordered_map>
#endif

namespace ki::detail::cpu {
namespace {

#if !KI_FIBER_OWN_SWITCH
// With Boost.Context, a new context's pc field holds its start argument (Boost keeps no pc of
// its own): switch_stacks leaves it here for boost_start.
thread_local void* tl_start_arg = nullptr;
#endif

/// The one call site of every switch (so that the resumed side's returns are predicted, see
/// above): saves the running context in *save and resumes the context `to`.
/// (The context comes as three words, in registers: a 24-byte struct would be passed in memory,
/// and reading it back as a whole right after storing it in parts stalls store forwarding.)
[[gnu::noinline]] void switch_stacks(fiber_context* save, void* sp, [[maybe_unused]] void* pc,
                                     [[maybe_unused]] void* bp) {
#if KI_FIBER_OWN_SWITCH
  ki_fiber_switch(save, sp, pc, bp);
#else
  tl_start_arg = pc;  // (null for a context that was suspended: only its sp is kept)
  // Boost hands the context that switched to us over on arrival: store it where its side asked.
  const fctx::transfer_t t = fctx::jump_fcontext(sp, save);
  static_cast<fiber_context*>(t.data)->sp = t.fctx;
#endif
}

#if !KI_FIBER_OWN_SWITCH
// Boost's first code of a new context: records the creator's context, then runs the entry.
thread_local void (*tl_start_fn)(void*) = nullptr;  // what every new context of this thread runs (always the same)
void boost_start(fctx::transfer_t t) {
  void* const arg = tl_start_arg;  // before anything else can switch on this thread
  static_cast<fiber_context*>(t.data)->sp = t.fctx;
  tl_start_fn(arg);
  std::abort();  // the entry never returns
}
#endif

/// A new context on the stack below `top` (16-byte aligned) that, when first resumed, calls
/// fn(arg) on that stack; fn must never return (it switches away for good instead). It holds
/// all it needs (nothing is left in thread-local storage), so any number of them can wait to be
/// started, and anybody that resumes contexts can start it.
fiber_context make_context(char* top, std::size_t size, void (*fn)(void*), void* arg) {
#if KI_FIBER_OWN_SWITCH
  (void)size;
  // What ki_fiber_start pops: fn, then arg; the stack pointer is then `top`, 16-byte aligned,
  // as a call needs it.
  auto** sp = reinterpret_cast<void**>(top) - 2;
  sp[0] = reinterpret_cast<void*>(fn);
  sp[1] = arg;
  return {sp, reinterpret_cast<void*>(&ki_fiber_start), nullptr};
#else
  tl_start_fn = fn;
  return {fctx::make_fcontext(top, size, &boost_start), arg, nullptr};
#endif
}

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
  char* base;          // start of the mapping (the guard region)
  std::size_t total;   // mapping size: guard + usable + colour_span
  std::size_t colour;  // the initial stack pointer is this far below the end of the mapping
  char* top() const { return base + total - colour; }
};

thread_local fiber_core::fault* tl_fault = nullptr;  // set while run_guarded runs
thread_local sigjmp_buf* tl_jump = nullptr;
thread_local const std::vector<stack>* tl_stacks = nullptr;
thread_local int tl_signal = 0;  // the signal that ended the last guarded run
#if KI_FIBER_ASAN
// run_guarded's own stack, where a fault's siglongjmp lands (found once per thread).
thread_local const void* tl_thread_stack_bottom = nullptr;
thread_local std::size_t tl_thread_stack_size = 0;
#endif

// The synchronous signals a work-item's own code can raise, and the handlers found before ours.
constexpr int fault_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
struct sigaction previous[std::size(fault_signals)];
struct sigaction& previous_of(int sig) {
  for (std::size_t k = 0; k < std::size(fault_signals); ++k)
    if (fault_signals[k] == sig) return previous[k];
  std::abort();
}

void on_fault(int sig, siginfo_t* info, void* uctx) {
  if (tl_jump != nullptr && tl_fault != nullptr) {
    auto* addr = static_cast<char*>(info->si_addr);
    tl_fault->happened = true;
    tl_fault->address = addr;
    tl_fault->signal = sig;
    tl_fault->code = info->si_code;
    tl_fault->stack_overflow = false;
    if (tl_stacks != nullptr && (sig == SIGSEGV || sig == SIGBUS))
      for (const stack& s : *tl_stacks)
        if (addr >= s.base && addr < s.base + guard_bytes) tl_fault->stack_overflow = true;
    tl_signal = sig;
#if KI_FIBER_ASAN
    // The faulting fiber dies here: the jump to run_guarded's stack is a switch ASan must be
    // told of (no fake stack to keep), or it goes on taking the fiber's stack for the current
    // one and reports false errors on the thread's stack afterwards.
    __sanitizer_start_switch_fiber(nullptr, tl_thread_stack_bottom, tl_thread_stack_size);
#endif
    siglongjmp(*tl_jump, 1);
  }
  // Not ours: behave as if we were not installed.
  const struct sigaction& prev = previous_of(sig);
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
  bool all_ours = true;
  for (const int sig : fault_signals) all_ours = all_ours && handler_is_ours(sig);
  if (!all_ours) {
    static std::mutex m;
    std::lock_guard lock(m);
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    // Whatever was installed meanwhile becomes the handler we defer to for faults not ours.
    for (const int sig : fault_signals)
      if (!handler_is_ours(sig)) ::sigaction(sig, &sa, &previous_of(sig));
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

std::atomic<std::uint64_t> handler_generation{1};      // bumped by recheck_fault_handlers
thread_local std::uint64_t tl_checked_generation = 0;  // the generation this thread checked

}  // namespace

struct fiber_core::impl {
  std::size_t usable;
  std::vector<stack> stacks;  // every stack this thread ever made
  std::vector<char*> free;    // the tops of the free ones: the first nfree (one entry per stack)
  std::size_t nfree = 0;
  explicit impl(fiber_core& c) : core(c) {}
  fiber_core& core;  // its slots hold the suspended contexts
  int live = 0;      // non-empty slots (so that reset() need not scan them)
  struct region {    // a stack, for AddressSanitizer (unused otherwise)
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
      if (slot_region.size() < static_cast<std::size_t>(core.count_))
        slot_region.resize(static_cast<std::size_t>(core.count_));
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
      if (slot_tsan.size() < static_cast<std::size_t>(core.count_))
        slot_tsan.resize(static_cast<std::size_t>(core.count_), nullptr);
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

  /// Suspends the running context into slot `from_slot` (-1: it has ended) and resumes c,
  /// whose stack is `target`.
  void go(int from_slot, fiber_context c, region target) {
    from = from_slot;
    fiber_context* save = &dropped;
    if (from_slot >= 0) save = &core.slot(from_slot), ++live;
#if KI_FIBER_ASAN
    void* fake = nullptr;
    leave(from_slot >= 0 ? &fake : nullptr, target);
    switch_stacks(save, c.sp, c.pc, c.bp);
    landed(fake);
#else
    (void)target;
    switch_stacks(save, c.sp, c.pc, c.bp);
#endif
  }
  fiber_context dropped;  // where an ended context "saves" itself
  int from = -1;          // slot of the context switching away; -1: it has ended (nothing to keep)
  fault last_fault;       // written by the signal handler, read after siglongjmp

  char* get_stack() {
    if (nfree != 0) return free[--nfree];
    const std::size_t total = guard_bytes + usable + colour_span;
    void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    ::mprotect(p, guard_bytes, PROT_NONE);
    free.reserve(stacks.size() + 1);
    stacks.push_back({static_cast<char*>(p), total, stacks.size() * colour_step % colour_span});
    free.resize(stacks.size());  // (room for every stack: putting one back never allocates)
    return stacks.back().top();
  }
  void put_back(char* top) { free[nfree++] = top; }

  fiber_context take(int i) {
    // Field by field: a copy of the whole context goes through a vector register, and the
    // 8-byte loads of it that follow cannot be forwarded from that 16-byte store.
    fiber_context& slot = core.slot(i);
    const fiber_context c{slot.sp, slot.pc, slot.bp};
    slot.sp = nullptr;
    if (c.sp == nullptr) empty_slot();
    --live;
    return c;
  }

  /// What a new fiber runs, at the top of its own stack.
  struct start_record {
    impl* core;
    entry_fn entry;
    void* arg;
    char* top;  // the stack's top, for the pool
  };
  static_assert(sizeof(start_record) % 16 == 0);

  /// A context that starts entry(arg) on a stack of the pool (fiber_main).
  fiber_context new_fiber(entry_fn entry, void* arg, char*& top) {
    top = get_stack();
    auto* const r = reinterpret_cast<start_record*>(top) - 1;
    *r = {this, entry, arg, top};
    return make_context(reinterpret_cast<char*>(r), usable - sizeof(start_record), &impl::fiber_main, r);
  }

  // First code of every fiber (through make_context). It never returns: when the entry is
  // done, the stack goes back to the pool and the fiber switches away for good.
  [[noreturn]] static void fiber_main(void* arg) {
    const start_record* const r = static_cast<const start_record*>(arg);
    impl* const self = r->core;
#if KI_FIBER_ASAN
    self->landed(nullptr);
#endif
    char* const my_stack = r->top;
    const int next = r->entry(r->arg);
    self->put_back(my_stack);  // safe: nothing runs on this thread before we leave it
    const fiber_context to = self->take(next);
#if KI_FIBER_TSAN
    self->tsan_leave(-1, self->tsan_of_slot(next));
#endif
#if KI_FIBER_INLINE_SWITCH
    // Nothing to save: nobody resumes an ended fiber. A jump, not a call: a call that never
    // returns would leave an entry in the return-stack predictor for the resumed fiber's
    // returns to mispredict on.
    // (Fixed registers: with "r", the compiler could give an operand rbp or rsp.)
    asm volatile("movq %%rdx, %%rbp\n\tmovq %%rdi, %%rsp\n\tjmpq *%%rsi" : : "d"(to.bp), "D"(to.sp), "S"(to.pc));
    __builtin_unreachable();
#else
    self->go(-1, to, self->region_of(next));  // (sanitizers: announced; Boost: its own jump)
    std::abort();
#endif
  }
};

fiber_core::fiber_core(std::size_t stack_size) : impl_(std::make_unique<impl>(*this)) {
  const std::size_t p = page_size();
  impl_->usable = (stack_size + p - 1) / p * p;
  install_handlers();
}

fiber_core::~fiber_core() {
  external_ = 0;  // the records holding those slots may be gone already
  count_ = static_cast<int>(own_.size());
  abandon_all();
#if KI_FIBER_TSAN
  for (auto& [top, f] : impl_->tsan_stack) __tsan_destroy_fiber(f);
#endif
  for (const stack& s : impl_->stacks) ::munmap(s.base, s.total);
}

std::size_t fiber_core::stack_size() const noexcept { return impl_->usable; }

void fiber_core::reset(int slots, fiber_context* records, std::size_t stride, int external) {
  // The new storage first: the old records may be gone (abandon_all clears the new ones).
  records_ = reinterpret_cast<char*>(records);
  stride_ = stride;
  external_ = records != nullptr ? external : 0;
  count_ = slots;
  if (own_.size() < static_cast<std::size_t>(slots - external_))
    own_.resize(static_cast<std::size_t>(slots - external_));
  // After a group that finished normally every slot is empty and every stack is free.
  if (impl_->live != 0) abandon_all();
}

void fiber_core::spawn(int from, entry_fn entry, void* arg) {
  impl* s = impl_.get();
  char* top = nullptr;
  const fiber_context c = s->new_fiber(entry, arg, top);
#if KI_FIBER_TSAN
  s->tsan_leave(from, s->tsan_of_stack(top));
#endif
  s->go(from, c, {top - s->usable, s->usable});
}

void fiber_core::prepare(int first, int last, entry_fn entry, void* arg) {
  impl* s = impl_.get();
  for (int k = first; k < last; ++k) {
    fiber_context& c = slot(k);
    if (c.sp != nullptr) throw std::logic_error("ki::reference: internal error: preparing a fiber in a full slot");
    [[maybe_unused]] char* top = nullptr;
    c = s->new_fiber(entry, arg, top);
    ++s->live;
#if KI_FIBER_ASAN
    if (s->slot_region.size() < static_cast<std::size_t>(count_))
      s->slot_region.resize(static_cast<std::size_t>(count_));
    s->slot_region[static_cast<std::size_t>(k)] = {top - s->usable, s->usable};
#endif
#if KI_FIBER_TSAN
    if (s->slot_tsan.size() < static_cast<std::size_t>(count_))
      s->slot_tsan.resize(static_cast<std::size_t>(count_), nullptr);
    s->slot_tsan[static_cast<std::size_t>(k)] = s->tsan_of_stack(top);
#endif
  }
}

void fiber_core::switch_slow(int from, int to) {
  impl* s = impl_.get();
  const fiber_context c = s->take(to);
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
#if KI_FIBER_ASAN
  if (tl_thread_stack_size == 0) {
    pthread_attr_t attr;
    if (::pthread_getattr_np(::pthread_self(), &attr) == 0) {
      void* bottom = nullptr;
      std::size_t size = 0;
      if (::pthread_attr_getstack(&attr, &bottom, &size) == 0)
        tl_thread_stack_bottom = bottom, tl_thread_stack_size = size;
      ::pthread_attr_destroy(&attr);
    }
  }
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
#if KI_FIBER_ASAN
    __sanitizer_finish_switch_fiber(nullptr, nullptr, nullptr);  // (the switch on_fault began)
#endif
    abandon_all();
  }
  tl_jump = nullptr;
  tl_fault = nullptr;
  return impl_->last_fault;
}

void fiber_core::empty_slot() { throw std::logic_error("ki::reference: internal error: resuming an empty fiber slot"); }

void fiber_core::recheck_fault_handlers() noexcept { handler_generation.fetch_add(1, std::memory_order_relaxed); }

void fiber_core::abandon_all() noexcept {
  for (int k = 0; k < count_; ++k) slot(k) = {};  // a dropped context is just forgotten, never unwound
  impl_->live = 0;
  impl_->nfree = 0;
  for (const stack& s : impl_->stacks) {
#if KI_FIBER_ASAN
    // The dropped fibers' frames never returned: clear ASan's marks before the stack is reused.
    __asan_unpoison_memory_region(s.base + guard_bytes, s.total - guard_bytes);
#endif
    impl_->put_back(s.top());
  }
}

}  // namespace ki::detail::cpu
