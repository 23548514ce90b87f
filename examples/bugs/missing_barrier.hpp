// BUG: a missing barrier. Each work-item stores its value in local memory and reads its right
// neighbour's, but nothing makes the neighbour's store happen first: the read gets whatever is
// there (uninitialised memory, or the value, depending on the order). Fix: ki::barrier()
// between the store and the load.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct missing_barrier {
  static constexpr unsigned line_local = __LINE__ + 4;
  static constexpr unsigned line_write = __LINE__ + 5;
  static constexpr unsigned line_read = __LINE__ + 5;
  void operator()(ki::span<std::int64_t> out, ki::span<const std::int64_t> in) const {
    auto buf = ki::localmemory<std::int64_t, 256>([] {});
    const std::int64_t l = ki::get_local_id().x, n = ki::get_local_size().x, i = ki::get_global_id().x;
    buf[l] = in[i];
    out[i] = buf[(l + 1) % n];  // BUG: no barrier before reading another item's element
  }
};
}  // namespace ki_bugs
