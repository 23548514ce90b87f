// BUG: a work-item waits in a loop for another work-item of its group, with no barrier between.
// Work-item 0 polls a flag in local memory that the group's last work-item sets. Nothing
// promises that the last one ever runs while work-item 0 spins (no forward progress between
// the work-items of a group): on a GPU this may hang; the oracle, which runs work-item 0 first
// and switches only at sync points, reports it as no-progress instead of hanging.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct spin_wait {
  static constexpr unsigned line_barrier = __LINE__ + 6;
  static constexpr unsigned line_poll = __LINE__ + 7;
  void operator()(ki::span<std::int64_t> out) const {
    auto flag = ki::localmemory<int, 1>([] {});
    const std::int64_t l = ki::get_local_id().x, n = ki::get_local_size().x;
    if (l == 0) flag[0] = 0;
    ki::barrier();
    if (l == 0)
      while (ki::atomic_load(&flag[0]) == 0) {  // waits for work-item n - 1, which never runs
      }
    if (l == n - 1) ki::atomic_store(&flag[0], 1);
    out[ki::get_global_id().x] = l;
  }
};
}  // namespace ki_bugs
