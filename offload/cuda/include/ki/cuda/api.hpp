// ki::cuda: what the shared offload implementation (offload/common) needs to know about the
// CUDA runtime: the API prefix, and the few types and calls whose spelling differs from HIP's.
#pragma once
#include <ki/macros.hpp>
#if KI_GPU_EMULATION == 1
// The emulated GPU (docs/offload.md): a host compiler, CUDA's runtime API on the oracle.
#include <ki/emulated/cuda_runtime.hpp>
#elif !defined(__CUDACC__)
#error \
    "ki/cuda.hpp must be compiled by nvcc (it launches kernels), or by a host compiler for the emulated GPU (ki::emulated_cuda)"
#else
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>  // header-only (NVTX3, shipped with CUDA)
#endif

#include <string>

#define KI_OFFLOAD_API(name) cuda##name
#define KI_OFFLOAD_NAMESPACE cuda

namespace ki::cuda {

/// The CUDA backend: the calling thread's active device is the runtime's current device; its
/// queue there is one of the thread's streams (ki/offload/queue.hpp).
struct backend {};

namespace api {
inline constexpr const char* name = "cuda";
using error_t = cudaError_t;
using stream_t = cudaStream_t;
using event_t = cudaEvent_t;
using device_prop = cudaDeviceProp;
using func_attributes = cudaFuncAttributes;

/// "13.0" from 13000.
inline std::string version(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }
inline std::string arch(const device_prop& p) {
  return "compute capability " + std::to_string(p.major) + "." + std::to_string(p.minor);
}
/// Whether an asynchronous copy may read `p` after cudaMemcpyAsync returns (pinned or managed).
inline bool read_later(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // unknown: be safe
  }
  return a.type == cudaMemoryTypeHost || a.type == cudaMemoryTypeManaged;
}
/// Segments of a warp may diverge (per-segment masks) from sm_70 on.
inline bool partitionable(const device_prop& p) { return p.major >= 7; }
/// The occupancy API's block size for the entry f (limit 0: none).
int max_potential_block_size(const void* f, int limit);

/// Names a launch for profilers: an NVTX range, named by the kernel's name, around the launch
/// call (Nsight Systems shows it on the host thread's timeline, linked to the kernel it
/// queued). Without a tool attached, NVTX's push and pop return at once.
class launch_range {
 public:
  explicit launch_range(const std::string& name) { nvtxRangePushA(name.c_str()); }
  ~launch_range() { nvtxRangePop(); }
  launch_range(const launch_range&) = delete;
  launch_range& operator=(const launch_range&) = delete;
};
}  // namespace api

/// The backend's kernel object (ki::native, ki/native.hpp): the __global__ entry that launches
/// run, and its attributes (cudaFuncGetAttributes) on the device that was active when asked.
struct native_kernel {
  const void* function = nullptr;
  cudaFuncAttributes attributes{};
};
}  // namespace ki::cuda

#include <ki/offload/errors.hpp>

inline int ki::cuda::api::max_potential_block_size(const void* f, int limit) {
  int grid = 0, block = 0;
  KI_OFFLOAD_CHECK(OccupancyMaxPotentialBlockSize, &grid, &block, f, 0, limit);
  return block;
}
