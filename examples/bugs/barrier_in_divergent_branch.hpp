// BUG: a barrier inside a branch that only some work-items take. Every work-item of the group
// must reach the same barrier; items 16 and up never do (on a GPU: a hang, or undefined
// behaviour).
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
struct barrier_in_divergent_branch {
  static constexpr unsigned line_barrier = __LINE__ + 4;
  void operator()(ki::span<std::int64_t> out) const {
    const std::int64_t l = ki::get_local_id().x;
    if (l < 16) {
      ki::barrier();  // BUG: only items 0-15 get here
      out[ki::get_global_id().x] = l;
    }
  }
};
}  // namespace ki_bugs
