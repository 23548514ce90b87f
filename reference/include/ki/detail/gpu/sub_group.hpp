// Private: the sub-group communication functions on GPUs (sub-group = warp / wavefront), exact
// as the spec states them; included by ki/sub_group.hpp in the GPU pass only.
//
// Layout: CUDA and HIP put the work-item with linear local id lin (x fastest) at lane lin % W of
// warp lin / W, for every work-group shape, so a partial sub-group is always the last one and
// its lanes are 0 .. size-1 with size = min(W, items - first item of the warp). Every mask is
// computed from the work-group size, never from __activemask(): the lanes that must execute a
// call together are those with a work-item (with a width: those of the caller's segment, which
// is what makes segments partitionable on CUDA).
//
// Values of any trivially copyable type move as ceil(sizeof(T) / 4) 32-bit words. Reductions
// and scans use only lane-ordered combinations op(lower lanes, higher lanes), regrouped as
// associativity allows (the spec requires op to be associative, not commutative), so integer
// and non-commutative operators give the oracle's exact result; floating-point sums differ
// from the oracle's left fold only by rounding.
//
// Argument misuse that the oracle reports (a width that is not a power of two <= W, a negative
// offset, a xor mask >= the width) is not checked here: the result is unspecified.
#pragma once
#include <ki/detail/private.hpp>
#include <cstdint>
#include <type_traits>

#include <ki/detail/gpu/intrinsics.hpp>

namespace ki::detail::gpu {

/// The caller's place: its lane, its segment (first lane `base`, `width` lanes; without a width
/// the whole sub-group) and how many lanes of the segment have a work-item (`count`, >= 1).
struct segment {
  int lane, base, width, count;
  lane_mask mask;  ///< the lanes of the segment that have a work-item
  __device__ int pos() const { return lane - base; }
};

/// width <= 0: no width (the whole sub-group).
__device__ inline segment place(int width) {
  const int W = warpSize;
  const std::int64_t lin = local_linear(), n = local_count();
  const int lane = static_cast<int>(lin % W);
  const std::int64_t rest = n - (lin - lane);  // items from lane 0 of this warp on
  const int size = rest < W ? static_cast<int>(rest) : W;
  const int w = width > 0 && width <= W ? width : W;
  const int base = lane / w * w;
  const int count = size - base < w ? size - base : w;
  return {lane, base, w, count, lanes(base, count)};
}

/// A width argument as an int (a value outside [1, W] as W: unspecified territory anyway).
template <class W>
__device__ int width_of(W w) {
  if constexpr (std::is_signed_v<W>) {
    if (w < 1) return warpSize;
  }
  return static_cast<std::uint64_t>(w) <= static_cast<std::uint64_t>(warpSize) ? static_cast<int>(w) : warpSize;
}

/// Whether v >= bound (bound >= 0), exactly, for any integer type.
template <class I>
__device__ bool at_least(I v, std::int64_t bound) {
  if constexpr (std::is_signed_v<I>) {
    if (v < 0) return false;
  }
  return static_cast<std::uint64_t>(v) >= static_cast<std::uint64_t>(bound);
}

/// Lane src's value of v, moved as 32-bit words; every lane of mask executes it.
template <class T>
__device__ T read_lane(lane_mask mask, const T& v, int src) {
  constexpr int n = static_cast<int>((sizeof(T) + 3) / 4);
  std::uint32_t w[n];
  w[n - 1] = 0;
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < n; ++i) w[i] = read_word(mask, w[i], src);
  union storage {
    unsigned char bytes[sizeof(T)];
    T value;
    __device__ storage() {}
  } r;
  __builtin_memcpy(r.bytes, w, sizeof(T));
  return r.value;
}

// --- shuffles -----------------------------------------------------------------------------

/// shfl(v, lane): lane `lane` of the sub-group itself (no wrap); with a width, lane
/// `lane mod width` of the caller's segment (a power-of-two mod, exact for any integer type).
template <class T, class I>
__device__ T shfl(const T& v, I lane, int width) {
  const segment s = place(width);
  int src = s.lane;  // a lane number outside the sub-group: unspecified, the caller's own value
  if (width > 0) src = s.base + static_cast<int>(static_cast<std::int64_t>(lane) & (s.width - 1));
  else if (at_least(lane, 0) && !at_least(lane, s.width)) src = static_cast<int>(lane);
  return read_lane(s.mask, v, src);
}
/// shfl_down(v, d): lane + d, or the caller's own value where that is outside the segment
/// (past the width).
template <class T, class I>
__device__ T shfl_down(const T& v, I d, int width) {
  const segment s = place(width);
  const bool own = !at_least(d, 0) || at_least(d, s.width - s.pos());
  return read_lane(s.mask, v, own ? s.lane : s.lane + static_cast<int>(d));
}
/// shfl_up(v, d): lane - d, or the caller's own value where that is before the segment.
template <class T, class I>
__device__ T shfl_up(const T& v, I d, int width) {
  const segment s = place(width);
  const bool own = !at_least(d, 0) || at_least(d, s.pos() + 1);
  return read_lane(s.mask, v, own ? s.lane : s.lane - static_cast<int>(d));
}
/// shfl_xor(v, m): the lane at position pos ^ m of the segment.
template <class T, class I>
__device__ T shfl_xor(const T& v, I m, int width) {
  const segment s = place(width);
  const int src = s.base + (s.pos() ^ static_cast<int>(static_cast<std::int64_t>(m) & (s.width - 1)));
  return read_lane(s.mask, v, src);
}

// --- votes --------------------------------------------------------------------------------

/// Bit i = the i-th lane of the segment (lanes without a work-item: 0).
__device__ inline std::uint64_t ballot(bool pred, int width) {
  const segment s = place(width);
  return static_cast<std::uint64_t>(gpu::ballot(s.mask, pred) & s.mask) >> s.base;
}
__device__ inline bool any(bool pred, int width) {
  const segment s = place(width);
  return (gpu::ballot(s.mask, pred) & s.mask) != 0;
}
__device__ inline bool all(bool pred, int width) {
  const segment s = place(width);
  return (gpu::ballot(s.mask, pred) & s.mask) == s.mask;
}

// --- reductions and scans, in lane order ----------------------------------------------------

/// After the step with distance d, position p holds op over positions [p, min(p + 2d, count)),
/// combined lower-first; position 0 ends with the whole segment, which everyone reads.
template <class T, class Op>
__device__ T reduce(const Op& op, const T& v, int width) {
  const segment s = place(width);
  T x = v;
  for (int d = 1; d < s.count; d <<= 1) {
    const bool has = s.pos() + d < s.count;
    const T y = read_lane(s.mask, x, has ? s.lane + d : s.lane);
    if (has) x = static_cast<T>(op(x, y));
  }
  return read_lane(s.mask, x, s.base);
}
/// Inclusive scan (Hillis-Steele): after the step with distance d, position p holds op over
/// positions [max(0, p - 2d + 1), p], combined lower-first.
template <class T, class Op>
__device__ T scan(const Op& op, const T& v, const segment& s) {
  T x = v;
  for (int d = 1; d < s.count; d <<= 1) {
    const bool has = s.pos() >= d;
    const T y = read_lane(s.mask, x, has ? s.lane - d : s.lane);
    if (has) x = static_cast<T>(op(y, x));
  }
  return x;
}
template <class T, class Op>
__device__ T scan(const Op& op, const T& v, int width) {
  return scan(op, v, place(width));
}
/// Position 0: init; position p > 0: op(init, inclusive scan of position p - 1).
template <class T, class Op>
__device__ T exclusive_scan(const Op& op, const T& v, const T& init, int width) {
  const segment s = place(width);
  const T inclusive = scan(op, v, s);
  const T before = read_lane(s.mask, inclusive, s.pos() > 0 ? s.lane - 1 : s.lane);
  return s.pos() > 0 ? static_cast<T>(op(init, before)) : init;
}

/// The lanes of the segment wait for each other; their memory writes are then visible.
__device__ inline void sub_group_barrier(int width) { sync_lanes(place(width).mask); }

}  // namespace ki::detail::gpu
