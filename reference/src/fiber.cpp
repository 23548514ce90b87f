// The fiber core: Boost.Context fibers on pooled, guard-protected stacks. See fiber.hpp.
#include "fiber.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <boost/context/fiber.hpp>
#include <boost/context/stack_context.hpp>
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

namespace ctx = boost::context;

namespace ki::reference::detail {
namespace {

std::size_t page_size() {
  static const std::size_t p = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  return p;
}

// Large enough that a frame with a big local array still lands in it rather than beyond.
constexpr std::size_t guard_bytes = 64 * 1024;

struct stack {
  char* base;         // start of the mapping (the guard region)
  std::size_t total;  // mapping size: guard + usable
  char* top() const { return base + total; }
};

thread_local fiber_core::fault* tl_fault = nullptr;  // set while run_guarded runs
thread_local sigjmp_buf* tl_jump = nullptr;
thread_local const std::vector<stack>* tl_stacks = nullptr;
thread_local bool tl_altstack = false;

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

void install_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction sa {};
    sa.sa_sigaction = &on_fault;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGSEGV, &sa, &previous_segv);
    ::sigaction(SIGBUS, &sa, &previous_bus);
  });
  // A stack overflow cannot run its handler on the overflowed stack.
  if (!tl_altstack) {
    static constexpr std::size_t alt_size = 64 * 1024;
    thread_local std::unique_ptr<char[]> alt(new char[alt_size]);
    stack_t ss{};
    ss.ss_sp = alt.get();
    ss.ss_size = alt_size;
    ::sigaltstack(&ss, nullptr);
    tl_altstack = true;
  }
}

}  // namespace

struct fiber_core::impl {
  std::size_t usable;
  std::vector<stack> stacks;  // every stack this thread ever made
  std::vector<char*> free;    // tops of the free ones
  struct slot {
    alignas(ctx::fiber) unsigned char raw[sizeof(ctx::fiber)];
    bool live = false;
  };
  std::vector<slot> slots;
  int from = -1;  // the slot of the context that is switching away (read by whoever it resumes)
  fault last_fault;  // written by the signal handler, read after siglongjmp

  void put(int i, ctx::fiber&& f) {
    slot& s = slots[static_cast<std::size_t>(i)];
    if (s.live) std::launder(reinterpret_cast<ctx::fiber*>(s.raw))->~fiber();
    new (s.raw) ctx::fiber(std::move(f));
    s.live = true;
  }
  ctx::fiber take(int i) {
    slot& s = slots[static_cast<std::size_t>(i)];
    if (!s.live) throw std::logic_error("ki::reference: internal error: resuming an empty fiber slot");
    auto* p = std::launder(reinterpret_cast<ctx::fiber*>(s.raw));
    ctx::fiber f = std::move(*p);
    p->~fiber();
    s.live = false;
    return f;
  }
  void arrived(ctx::fiber&& back) {
    if (back) put(from, std::move(back));  // empty when the previous fiber has ended
  }

  // Boost.Context StackAllocator over the pool.
  struct allocator {
    impl* self;
    ctx::stack_context allocate() {
      char* top;
      if (!self->free.empty()) {
        top = self->free.back();
        self->free.pop_back();
      } else {
        const std::size_t total = guard_bytes + self->usable;
        void* p = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (p == MAP_FAILED) throw std::bad_alloc();
        ::mprotect(p, guard_bytes, PROT_NONE);
        self->stacks.push_back({static_cast<char*>(p), total});
        top = self->stacks.back().top();
      }
      ctx::stack_context sc;
      sc.size = self->usable;
      sc.sp = top;
      return sc;
    }
    void deallocate(ctx::stack_context& sc) noexcept { self->free.push_back(static_cast<char*>(sc.sp)); }
  };
};

fiber_core::fiber_core(std::size_t stack_size) : impl_(std::make_unique<impl>()) {
  const std::size_t p = page_size();
  impl_->usable = (stack_size + p - 1) / p * p;
  install_handlers();
}

fiber_core::~fiber_core() {
  abandon_all();
  for (const stack& s : impl_->stacks) ::munmap(s.base, s.total);
}

std::size_t fiber_core::stack_size() const noexcept { return impl_->usable; }

void fiber_core::reset(int slots) {
  // After a group that finished normally every slot is empty and every stack is free.
  for (const auto& s : impl_->slots)
    if (s.live) {
      abandon_all();
      break;
    }
  if (impl_->slots.size() < static_cast<std::size_t>(slots)) impl_->slots.resize(static_cast<std::size_t>(slots));
}

void fiber_core::spawn(int from, entry_fn entry, void* arg) {
  impl* s = impl_.get();
  ctx::fiber f(std::allocator_arg, impl::allocator{s}, [s, entry, arg](ctx::fiber&& caller) {
    s->arrived(std::move(caller));
    const int next = entry(arg);
    return s->take(next);
  });
  s->from = from;
  s->arrived(std::move(f).resume());
}

void fiber_core::switch_to(int from, int to) {
  impl* s = impl_.get();
  ctx::fiber f = s->take(to);
  s->from = from;
  s->arrived(std::move(f).resume());
}

fiber_core::fault fiber_core::run_guarded(void (*body)(void*), void* arg) {
  fault& result = impl_->last_fault;
  result = {};
  sigjmp_buf jump;
  tl_fault = &result;
  tl_stacks = &impl_->stacks;
  tl_jump = &jump;
  if (sigsetjmp(jump, 1) == 0) {
    body(arg);
  } else {
    abandon_all();
  }
  tl_jump = nullptr;
  tl_fault = nullptr;
  return impl_->last_fault;
}

void fiber_core::abandon_all() noexcept {
  for (auto& s : impl_->slots) s.live = false;  // no destructor: never unwind a dropped fiber
  impl_->free.clear();
  for (const stack& s : impl_->stacks) impl_->free.push_back(s.top());
}

}  // namespace ki::reference::detail
