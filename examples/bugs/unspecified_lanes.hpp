// BUG (a warning): reading lanes that have no work-item. With 40 work-items per group, some
// sub-group is partial on every profile, and its last lane has no work-item: shfl returns an
// unspecified value there (the oracle hands out poison and counts the reads). Legal to do,
// wrong to depend on.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct unspecified_lanes {
  static constexpr unsigned line_shfl = __LINE__ + 2;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t last = ki::shfl(std::int64_t{7}, ki::get_max_sub_group_size() - 1);  // BUG: may be empty
    out[ki::get_global_id().x] = last;
  }
};
}  // namespace ki_bugs
