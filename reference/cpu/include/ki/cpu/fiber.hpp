// Private to the reference backend: "work-items that can be suspended and resumed".
//
// A fiber_core belongs to one host thread and runs one work-group at a time. It has numbered
// slots; a slot holds a suspended fiber (or, for the last slot, the thread's own stack while a
// fiber runs). Switching is direct, fiber to fiber: `switch_to(from, to)` suspends the running
// fiber into slot `from` and resumes slot `to`. Stacks come from a per-thread pool, each with a
// guard region below it; overflowing one, or any other invalid access while a fiber runs, makes
// run_guarded() return the fault instead of crashing the process.
//
// This and fiber.cpp are the only places that know how stacks are switched (fiber.cpp: our own
// switch on x86-64, Boost.Context elsewhere).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include <ki/detail/cpu/executor.hpp>  // fiber_context

// Sanitizer builds (they need every switch announced, see fiber.cpp).
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

// Our own stack switch on x86-64 ELF (fiber.cpp says why), Boost.Context's elsewhere or when
// KI_FIBER_BOOST_SWITCH is defined. Without a sanitizer, switch_to is then inline: a suspended
// work-item's stack holds one frame less per call level, which matters when 256 of them take
// turns (on the 2-core VM every cache line a switch touches is an L2 access).
#if defined(__x86_64__) && defined(__ELF__) && !defined(KI_FIBER_BOOST_SWITCH)
#define KI_FIBER_OWN_SWITCH 1
/// Saves the running context into *save and resumes (sp, pc, bp): see fiber.cpp.
extern "C" void ki_fiber_switch(ki::detail::cpu::fiber_context* save, void* sp, void* pc, void* bp);
#else
#define KI_FIBER_OWN_SWITCH 0
#endif
#define KI_FIBER_INLINE_SWITCH (KI_FIBER_OWN_SWITCH && !KI_FIBER_ASAN && !KI_FIBER_TSAN)

namespace ki::detail::cpu {

class fiber_core {
 public:
  /// An entry runs on a new fiber; it returns the slot to resume when the fiber ends.
  using entry_fn = int (*)(void* arg);

  explicit fiber_core(std::size_t stack_size);
  ~fiber_core();
  fiber_core(const fiber_core&) = delete;
  fiber_core& operator=(const fiber_core&) = delete;

  std::size_t stack_size() const noexcept;

  /// Makes room for `slots` slots, all empty. With `records`, slots 0 .. external - 1 are the
  /// fiber_contexts at records, records + stride, ... (the caller's, e.g. in its work-items'
  /// records, where an inline barrier switch finds them: ki/detail/cpu/barrier.hpp); the
  /// others are the core's own. The caller keeps those records alive and in place until the
  /// next reset.
  void reset(int slots, fiber_context* records = nullptr, std::size_t stride = 0, int external = 0);
  /// From the running context (to be kept in slot `from`), start a fiber running entry(arg).
  void spawn(int from, entry_fn entry, void* arg);
  /// Puts a fiber that will run entry(arg) into each of the empty slots first .. last - 1,
  /// without starting it: resuming the slot (switch_to, or an inline switch into the slot's
  /// context) starts it. Each takes a stack of the pool now; abandon_all reclaims those that
  /// never run.
  void prepare(int first, int last, entry_fn entry, void* arg);
  /// Suspend the running context into slot `from` and resume the fiber in slot `to`.
  void switch_to(int from, int to) {
#if KI_FIBER_INLINE_SWITCH
    fiber_context& t = slot(to);
    const fiber_context c = t;
    t.sp = nullptr;  // empty
    if (c.sp == nullptr) [[unlikely]]
      empty_slot();
    ki_fiber_switch(&slot(from), c.sp, c.pc, c.bp);  // counts of live slots: -1 + 1
#else
    switch_slow(from, to);
#endif
  }

  /// A hint that the fiber in slot k runs soon: fetches the top of its stack into the cache
  /// (where the switch pops its registers and the resumed frames are). Any slot may be named.
  void prefetch(int k) noexcept {
    const char* sp = static_cast<const char*>(slot(k).sp);
    __builtin_prefetch(sp);
    __builtin_prefetch(sp + 64);
  }

  /// Reads the running stack where a switch away from it will save registers, so that a stack
  /// overflow there faults now rather than inside the switch: the executors mark the next
  /// work-item current before switching to it, and a fault is blamed on the current one.
  void touch_switch_frame() const noexcept {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    // The inline switch pushes six registers below the return address (48 bytes); the
    // out-of-line ones (sanitizers, Boost) have a few frames more.
    asm volatile("cmpb $0, %c0(%%rsp)" : : "i"(KI_FIBER_INLINE_SWITCH ? -64 : -1024) : "cc");
#else
    const volatile char* below = static_cast<const char*>(__builtin_frame_address(0)) - 1024;
    (void)*below;
#endif
  }

  struct fault {
    bool happened = false;
    bool stack_overflow = false;  ///< the address was in a stack's guard region
    const void* address = nullptr;
    int signal = 0;  ///< SIGSEGV, SIGBUS, SIGFPE (an integer division that traps) or SIGILL
    int code = 0;    ///< its si_code (e.g. FPE_INTDIV)
  };
  /// Runs body(arg) on this thread's own stack. If a fiber faults (SIGSEGV, SIGBUS; SIGFPE: an
  /// integer division by zero or INT_MIN / -1; SIGILL: a trap such as __builtin_trap()) meanwhile,
  /// control comes back here: every suspended fiber is dropped without unwinding, all stacks
  /// return to the pool, and the fault is returned.
  fault run_guarded(void (*body)(void*), void* arg);
  /// Makes every thread's next run_guarded check (a few system calls) that the fault handler
  /// and the thread's alternate signal stack are still ours, re-installing them if someone
  /// replaced them; later runs skip the check until this is called again. The executor calls
  /// it once per launch.
  static void recheck_fault_handlers() noexcept;

  /// Drop every suspended fiber without unwinding it and reclaim all stacks. Objects living on
  /// those stacks are not destroyed (documented: a failed group does not run destructors).
  void abandon_all() noexcept;

 private:
  void switch_slow(int from, int to);
  [[noreturn]] static void empty_slot();
  /// Slot k: a suspended context (sp == nullptr: empty).
  fiber_context& slot(int k) noexcept {
    return k < external_ ? *reinterpret_cast<fiber_context*>(records_ + static_cast<std::size_t>(k) * stride_)
                         : own_[static_cast<std::size_t>(k - external_)];
  }
  std::vector<fiber_context> own_;  // slots external_ .. count_ - 1
  char* records_ = nullptr;         // slots 0 .. external_ - 1, stride_ bytes apart
  std::size_t stride_ = 0;
  int external_ = 0, count_ = 0;
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ki::detail::cpu
