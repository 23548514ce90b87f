// BUG: two work-items write the same element of local memory with no barrier between them.
// Work-items 2k and 2k+1 both store into buf[k]; which value survives depends on the order
// they run in (on a GPU: on the hardware's timing). Checked-access mode names both writes.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct local_write_write_race {
  static constexpr unsigned line_local = __LINE__ + 3;
  static constexpr unsigned line_write = __LINE__ + 4;
  void operator()(ki::span<std::int64_t> out) const {
    auto buf = ki::localmemory<std::int64_t, 64>([] {});
    const std::int64_t l = ki::get_local_id().x;
    buf[l / 2] = l;  // items 2k and 2k+1 write the same element
    ki::barrier();
    out[ki::get_global_id().x] = buf[l / 2];
  }
};
}  // namespace ki_bugs
