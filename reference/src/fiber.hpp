// Private to the reference backend: "work-items that can be suspended and resumed".
//
// A fiber_core belongs to one host thread and runs one work-group at a time. It has numbered
// slots; a slot holds a suspended fiber (or, for the last slot, the thread's own stack while a
// fiber runs). Switching is direct, fiber to fiber: `switch_to(from, to)` suspends the running
// fiber into slot `from` and resumes slot `to`. Stacks come from a per-thread pool, each with a
// guard region below it; overflowing one, or any other invalid access while a fiber runs, makes
// run_guarded() return the fault instead of crashing the process.
//
// This and fiber.cpp are the only places that know about Boost.Context.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ki::reference::detail {

class fiber_core {
 public:
  /// An entry runs on a new fiber; it returns the slot to resume when the fiber ends.
  using entry_fn = int (*)(void* arg);

  explicit fiber_core(std::size_t stack_size);
  ~fiber_core();
  fiber_core(const fiber_core&) = delete;
  fiber_core& operator=(const fiber_core&) = delete;

  std::size_t stack_size() const noexcept;

  /// Makes room for `slots` slots, all empty.
  void reset(int slots);
  /// From the running context (to be kept in slot `from`), start a fiber running entry(arg).
  void spawn(int from, entry_fn entry, void* arg);
  /// Suspend the running context into slot `from` and resume the fiber in slot `to`.
  void switch_to(int from, int to);

  struct fault {
    bool happened = false;
    bool stack_overflow = false;  ///< the address was in a stack's guard region
    const void* address = nullptr;
  };
  /// Runs body(arg) on this thread's own stack. If a fiber faults (SIGSEGV/SIGBUS) meanwhile,
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
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace ki::reference::detail
