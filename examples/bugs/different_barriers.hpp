// BUG: a different barrier in each branch. Both halves call barrier(), but not the same one:
// barriers are matched by where they are in the program, not by how many were passed.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct different_barriers {
  static constexpr unsigned line_then = __LINE__ + 5;
  static constexpr unsigned line_else = __LINE__ + 7;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t l = ki::get_local_id().x;
    if (l < 32) {
      ki::barrier();  // BUG: items 0-31 wait here ...
      out[ki::get_global_id().x] = 1;
    } else {
      ki::barrier();  // ... and items 32-63 here
      out[ki::get_global_id().x] = 2;
    }
  }
};
}  // namespace ki_bugs
