// BUG: a race between work-groups. Every group's first work-item stores its partial result in
// out[0] instead of out[group]: the groups write the same element, and nothing orders
// work-groups within a launch (the value left is whichever group ran last).
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct race_between_groups {
  static constexpr unsigned line_write = __LINE__ + 3;
  void operator()(ki::span<std::int64_t> out) const {
    const auto g = ki::get_group_id().x;
    if (ki::get_local_id().x == 0) out[0] = 100 + g;  // BUG: should be out[g]
  }
};
}  // namespace ki_bugs
