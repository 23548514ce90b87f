// BUG: a non-uniform shuffle offset. shfl_down's offset (and width) must be the same in every
// participating work-item; here odd lanes pass 2.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct non_uniform_shuffle {
  static constexpr unsigned line_shfl = __LINE__ + 3;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t lane = ki::get_sub_group_local_id();
    const std::int64_t v = ki::shfl_down(lane, lane % 2 == 0 ? 1 : 2);  // BUG: offset differs
    out[ki::get_global_id().x] = v;
  }
};
}  // namespace ki_bugs
