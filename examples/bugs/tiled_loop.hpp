// A tiled loop: each iteration loads a tile into local memory, waits, and sums the tile.
// tiled_loop_missing_trailing_barrier is the BUG: without the barrier at the end of the loop
// body, a fast work-item starts loading the next tile while slower ones still read this one.
// tiled_loop_correct is the control: the trailing barrier prevents the race, and the oracle
// must report nothing for it.
#pragma once
#include <cstdint>
#include <ki/ki.hpp>

namespace ki_bugs {
template <bool trailing_barrier>
struct tiled_loop {
  static constexpr unsigned line_load = __LINE__ + 7;
  static constexpr unsigned line_sum = __LINE__ + 8;
  void operator()(ki::span<std::int64_t> out, ki::span<const std::int64_t> in, std::int64_t tiles) const {
    auto tile = ki::localmemory<std::int64_t, 64>([] {});
    const std::int64_t l = ki::get_local_id().x, n = ki::get_local_size().x;
    std::int64_t acc = 0;
    for (std::int64_t t = 0; t < tiles; ++t) {
      tile[l] = in[t * n + l];
      ki::barrier();
      for (std::int64_t k = 0; k < n; ++k) acc += tile[k];
      if constexpr (trailing_barrier) ki::barrier();  // the missing one, in the buggy kernel
    }
    out[ki::get_global_id().x] = acc;
  }
};
using tiled_loop_missing_trailing_barrier = tiled_loop<false>;
using tiled_loop_correct = tiled_loop<true>;
}  // namespace ki_bugs
