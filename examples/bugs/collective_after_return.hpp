// BUG: a collective after part of the sub-group returned. The early return looks harmless,
// but sub_group_reduce needs every work-item of the sub-group.
#pragma once
#include <cstdint>
#include <functional>
#include <ki/ki.hpp>

namespace ki_bugs {
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
struct collective_after_return {
  static constexpr unsigned line_reduce = __LINE__ + 5;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t i = ki::get_global_id().x;
    if (i % 2 == 1) return;  // BUG: odd items leave before the reduction
    const std::int64_t s =
        ki::sub_group_reduce(std::plus<>{}, i);
    out[i] = s;
  }
};
// clang-format on
}  // namespace ki_bugs
