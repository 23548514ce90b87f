// Private: the GPU pass of device functions (nvcc / hipcc device compilation).
//
// The few intrinsics in which CUDA and HIP differ are wrapped here, once; the exact sub-group
// algorithms built on them are in detail/gpu/sub_group.hpp.
//   CUDA: warps of 32 lanes; *_sync intrinsics take the mask of the lanes that execute the call
//         together (sm_70+ schedules lanes independently, so the mask is what makes it exact).
//   HIP:  wavefronts of warpSize (64 on gfx9, 32 on gfx10+) lanes executing in lockstep; HIP 5.2
//         has no *_sync intrinsics, so masks only select the lanes a result is taken from.
#pragma once
#include <ki/detail/private.hpp>
#if defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#endif
#include <cstdint>

namespace ki::detail::gpu {

__device__ inline std::int64_t local_linear() {
  return threadIdx.x + std::int64_t(blockDim.x) * (threadIdx.y + std::int64_t(blockDim.y) * threadIdx.z);
}
__device__ inline std::int64_t local_count() { return std::int64_t(blockDim.x) * blockDim.y * blockDim.z; }

#if defined(__HIPCC__)
/// A set of lanes of a wavefront, bit i = lane i.
using lane_mask = std::uint64_t;
/// Lane src's word (all lanes of the wavefront execute in lockstep; mask is not needed).
__device__ inline std::uint32_t read_word(lane_mask, std::uint32_t w, int src) {
  return static_cast<std::uint32_t>(__shfl(static_cast<int>(w), src, warpSize));
}
/// The lanes of mask (that are active) whose pred is true.
__device__ inline lane_mask ballot(lane_mask mask, bool pred) { return lane_mask(__ballot(pred)) & mask; }
/// The lanes of mask wait for each other and see each other's memory writes. A wavefront runs
/// in lockstep: the fences order memory, wave_barrier keeps the compiler from moving accesses.
__device__ inline void sync_lanes(lane_mask) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  __builtin_amdgcn_wave_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "wavefront");
}
#else
using lane_mask = std::uint32_t;
__device__ inline std::uint32_t read_word(lane_mask mask, std::uint32_t w, int src) {
  return __shfl_sync(mask, w, src);
}
__device__ inline lane_mask ballot(lane_mask mask, bool pred) { return __ballot_sync(mask, pred); }
/// __syncwarp orders memory among the lanes of mask.
__device__ inline void sync_lanes(lane_mask mask) { __syncwarp(mask); }
#endif

/// `count` lanes from `first` (count may be the whole width of the mask type).
__device__ inline lane_mask lanes(int first, int count) {
  constexpr int bits = 8 * sizeof(lane_mask);
  const lane_mask m = count >= bits ? ~lane_mask(0) : (lane_mask(1) << count) - 1;
  return m << first;
}

}  // namespace ki::detail::gpu
