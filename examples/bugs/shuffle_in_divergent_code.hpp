// BUG: a shuffle in divergent code. Every work-item of a sub-group must execute a sub-group
// function together; here the upper lanes skip it.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct shuffle_in_divergent_code {
  static constexpr unsigned line_shfl = __LINE__ + 4;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t lane = ki::get_sub_group_local_id();
    std::int64_t v = lane;
    if (lane < 4) v = ki::shfl_down(v, 1);  // BUG: lanes 4 and up do not take part
    out[ki::get_global_id().x] = v;
  }
};
}  // namespace ki_bugs
