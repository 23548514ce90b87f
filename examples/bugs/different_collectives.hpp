// BUG (on devices without independent sub-groups): sub-groups executing different collectives.
// Even sub-groups shift down, odd ones shift up. With independent sub-groups (CUDA) that is
// legal; without them (the strict preset) every sub-group must
// execute the same communication functions in the same order.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct different_collectives {
  static constexpr unsigned line_down = __LINE__ + 4;
  static constexpr unsigned line_up = __LINE__ + 4;
  void operator()(ki::span<std::int64_t> out) const {
    std::int64_t v = ki::get_sub_group_local_id();
    if (ki::get_sub_group_id() % 2 == 0) v = ki::shfl_down(v, 1);
    else v = ki::shfl_up(v, 1);  // BUG without independent sub-groups
    out[ki::get_global_id().x] = v;
  }
};
}  // namespace ki_bugs
