// The spin watch's judgement, the same on both CPU backends and in both layers (the watch
// itself, what each atomic operation shows it, is ki/detail/cpu/executor.hpp's atomic_watch;
// docs/debugging.md, "Spin-waits", says what users see).
//
// When a work-item has repeated the same observation `limit` times in a row, a runner asks the
// judge whether it is stuck: it is when nothing that runs can change what it polls (the atomic
// is in the group's local memory, or no other work-group runs meanwhile) and the running
// work-item is known to be the one that repeated; otherwise once, for `stuck_time`, no other
// work-group of the launch has ended while it kept polling (and, where the runner cannot tell
// the work-items of a phase apart, nothing it saw changed).
#pragma once
#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>

#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/source_location.hpp>

namespace ki::detail::cpu {

/// What the spin watch needs to know of the rest of a launch: whether a group that spins can be
/// waiting for another work-group that runs at the same time, and whether any ends.
struct launch_progress {
  /// No other group runs while one runs (threads = 1, or a single group).
  bool alone = false;
  /// Set by a watch that waits for the others: from then on group ends are counted (so that a
  /// launch nobody watches pays a load per group, not a shared increment).
  std::atomic<bool> watched{false};
  /// Groups of the launch ended since `watched` (or always, where the runner counts always).
  std::atomic<std::uint64_t> groups_done{0};

  void group_ended() {
    if (watched.load(std::memory_order_relaxed)) [[unlikely]]
      groups_done.fetch_add(1, std::memory_order_relaxed);
  }
};

/// A runner's judge of its watch's repeats (one per runner; reset with the watch).
class spin_judge {
 public:
  static constexpr std::chrono::milliseconds stuck_time{1000};
  static constexpr std::uint64_t recheck = 4096;  ///< repeats between looks while it waits

  /// The watch `w` reached next_check. `local`: the polled address is the group's local memory.
  /// `known`: the runner knows that the operations counted are one work-item's (false: a KA
  /// phase run as one loop, whose work-items the watch cannot tell apart). True: report it now;
  /// false: w.next_check was moved on (and the thread yielded).
  bool stuck(atomic_watch& w, launch_progress& pr, bool local, bool known) {
    if (known && (local || pr.alone)) return true;
    pr.watched.store(true, std::memory_order_relaxed);
    const auto now = std::chrono::steady_clock::now();
    const std::uint64_t done = pr.groups_done.load(std::memory_order_relaxed);
    if (!w.stalled || (!pr.alone && !local && done != done_)) {
      w.stalled = true;
      done_ = done;
      since_ = now;
    }
    if (now - since_ >= stuck_time) return true;
    std::this_thread::yield();
    w.next_check = w.repeats + recheck;
    return false;
  }

  /// Why nothing can end it (for the message).
  std::string why(const launch_progress& pr, bool local) const {
    if (local) return "the atomic is in the group's local memory";
    if (pr.alone) return "no other work-group runs meanwhile (threads = 1 or a single group)";
    return "no other work-group ended for " + std::to_string(stuck_time.count()) + " ms while it polled";
  }

 private:
  std::uint64_t done_ = 0;
  std::chrono::steady_clock::time_point since_{};
};

/// The no-progress message: `what` at `where` polled `repeats` times with none of `sync_points`
/// between; `why` nothing running can end it (spin_judge::why); `model`: how the backend runs
/// the group's work-items (why the others cannot run); `others`: what the others do;
/// `limit_name`: where the limit is set.
inline std::string no_progress_text(const char* what, const source_location& where, std::uint64_t repeats,
                                    const char* sync_points, const std::string& why, const std::string& model,
                                    const std::string& others, const char* limit_name, std::uint64_t limit) {
  return "polled ki::" + std::string(what) + " at " + to_string(where) + " " + std::to_string(repeats) +
         " times in a row, seeing the same value, with no " + sync_points +
         " between (no-progress): a "
         "spin-wait that nothing running can end. The model promises no forward progress between the work-items of "
         "a group, and " +
         model + "; " + why + ". The other work-items of its group (linear local ids): " + others +
         ". (Wait with a barrier, or let each work-item wait only for itself; the limit is " + limit_name + ", now " +
         std::to_string(limit) + ")";
}

}  // namespace ki::detail::cpu
