// Private: the GPU pass of device functions (nvcc / hipcc device compilation).
//
// The few intrinsics in which CUDA and HIP differ are wrapped here, once; the exact sub-group
// algorithms built on them are in detail/gpu/sub_group.hpp.
//   CUDA: warps of 32 lanes; *_sync intrinsics take the mask of the lanes that execute the call
//         together (sm_70+ schedules lanes independently, so the mask is what makes it exact).
//   HIP:  wavefronts of warpSize (64 on gfx9, 32 on gfx10+) lanes executing in lockstep; HIP 5.2
//         has no *_sync intrinsics, so masks only select the lanes a result is taken from.
//
// With the emulated GPU (KI_GPU_EMULATION) a host compiler compiles the same code, the CUDA and
// HIP names coming from ki/detail/gpu/emulated.hpp (the oracle's work-items and rendezvous).
#pragma once
#include <ki/detail/private.hpp>
#include <ki/macros.hpp>
#if KI_GPU_EMULATION
#include <ki/detail/gpu/emulated.hpp>
#elif defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif defined(__CUDACC__)
#include <cuda_runtime.h>
#endif
#include <cstdint>
#include <type_traits>

namespace ki::detail::gpu {

__device__ inline std::int64_t local_linear() {
  return threadIdx.x + std::int64_t(blockDim.x) * (threadIdx.y + std::int64_t(blockDim.y) * threadIdx.z);
}
__device__ inline std::int64_t local_count() { return std::int64_t(blockDim.x) * blockDim.y * blockDim.z; }

#if KI_GPU_HIP
/// A set of lanes of a wavefront, bit i = lane i.
using lane_mask = std::uint64_t;
// The emulated wavefront's active lanes for the next intrinsic (ki/detail/gpu/emulated.hpp):
// the lanes of mask are those that execute it. Nothing for hipcc.
#if KI_GPU_EMULATION
#define KI_GPU_EXEC(mask) (::ki::detail::gpu::emu::hip_exec = (mask))
#else
#define KI_GPU_EXEC(mask) (void)(mask)
#endif
/// Lane src's word (all lanes of the wavefront execute in lockstep; mask is not needed).
__device__ inline std::uint32_t read_word(lane_mask mask, std::uint32_t w, int src) {
  KI_GPU_EXEC(mask);
  return static_cast<std::uint32_t>(__shfl(static_cast<int>(w), src, warpSize));
}
/// The lanes of mask (that are active) whose pred is true.
__device__ inline lane_mask ballot(lane_mask mask, bool pred) {
  KI_GPU_EXEC(mask);
  return lane_mask(__ballot(pred)) & mask;
}
/// The lanes of mask wait for each other and see each other's memory writes. A wavefront runs
/// in lockstep: the fences order memory, wave_barrier keeps the compiler from moving accesses.
__device__ inline void sync_lanes(lane_mask mask) {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "wavefront");
  KI_GPU_EXEC(mask);
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

/// __syncthreads() at the caller's location `where` (the emulated GPU's oracle names it in a
/// divergent barrier; nvcc and hipcc get __syncthreads() itself).
#if KI_GPU_EMULATION
#define KI_GPU_SYNCTHREADS(where) ::ki::detail::gpu::emu::syncthreads(where)
#else
#define KI_GPU_SYNCTHREADS(where) __syncthreads()
#endif

/// `KI_GPU_USER_CALL(where);` at the start of a GPU branch that meets other lanes: the emulated
/// GPU's oracle reports the rendezvous inside it at the user's call `where` (a source_location
/// that outlives the branch), not at the intrinsic's line in ki. Nothing for nvcc and hipcc.
#if KI_GPU_EMULATION
#define KI_GPU_USER_CALL(where) const ::ki::detail::gpu::emu::user_call ki_user_call_(where)
#else
#define KI_GPU_USER_CALL(where) (void)(where)
#endif

/// A __shared__ variable of type T (an array type too): `KI_GPU_SHARED(T, name);` declares
/// `__shared__ T name;` for nvcc and hipcc; with the emulated GPU, `name` refers to the block's
/// local memory of that declaration (and instantiation), as the oracle gives it.
#if KI_GPU_EMULATION
#define KI_GPU_SHARED(T, name)                                                              \
  static const char name##_site_ = 0;                                                       \
  std::type_identity_t<T>& name = *static_cast<std::type_identity_t<T>*>(                   \
      ::ki::detail::gpu::emu::shared_memory(&name##_site_, sizeof(std::type_identity_t<T>), \
                                            alignof(std::type_identity_t<T>), ::ki::source_location::current()))
/// `KI_GPU_SHARED_BYTES(T, name, bytes);`: `alignas(T) __shared__ unsigned char name[bytes];`
/// for nvcc and hipcc; with the emulated GPU, `name` points to such bytes of the block's local
/// memory. Either way `reinterpret_cast<T*>(name)` is the memory.
#define KI_GPU_SHARED_BYTES(T, name, bytes)                \
  static const char name##_site_ = 0;                      \
  unsigned char* const name = static_cast<unsigned char*>( \
      ::ki::detail::gpu::emu::shared_memory(&name##_site_, (bytes), alignof(T), ::ki::source_location::current()))
#else
#define KI_GPU_SHARED(T, name) __shared__ std::type_identity_t<T> name
#define KI_GPU_SHARED_BYTES(T, name, bytes) alignas(T) __shared__ unsigned char name[bytes]
#endif

/// Device printf (the emulated GPU's formats on the host and writes one record).
#if KI_GPU_EMULATION
#define KI_GPU_PRINTF ::ki::detail::gpu::emu::printf
#else
#define KI_GPU_PRINTF printf
#endif

/// `count` lanes from `first` (count may be the whole width of the mask type).
__device__ inline lane_mask lanes(int first, int count) {
  constexpr int bits = 8 * sizeof(lane_mask);
  const lane_mask m = count >= bits ? ~lane_mask(0) : (lane_mask(1) << count) - 1;
  return m << first;
}

}  // namespace ki::detail::gpu
