// ki::hip: what the shared offload implementation (offload/common) needs to know about the HIP
// runtime: the API prefix, and the few types and calls whose spelling differs from CUDA's.
#pragma once
#include <ki/macros.hpp>
#if KI_GPU_EMULATION == 2
// The emulated GPU (docs/offload.md): a host compiler, HIP's runtime API on the oracle.
#include <ki/emulated/hip_runtime.hpp>
#elif !defined(__HIPCC__)
#error \
    "ki/hip.hpp must be compiled by hipcc / clang -x hip (it launches kernels), or by a host compiler for the emulated GPU (ki::emulated_hip)"
#else
#include <hip/hip_runtime.h>
#endif

#include <string>

#define KI_OFFLOAD_API(name) hip##name
#define KI_OFFLOAD_NAMESPACE hip

namespace ki::hip {

/// The HIP backend: the calling thread's active device is the runtime's current device; its
/// queue there is one of the thread's streams (ki/offload/queue.hpp).
struct backend {};

namespace api {
inline constexpr const char* name = "hip";
using error_t = hipError_t;
using stream_t = hipStream_t;
using event_t = hipEvent_t;
using device_prop = hipDeviceProp_t;
using func_attributes = hipFuncAttributes;

/// HIP versions are major * 10^7 + minor * 10^5 + patch.
inline std::string version(int v) { return std::to_string(v / 10000000) + "." + std::to_string(v / 100000 % 100); }
inline std::string arch(const device_prop& p) { return std::string(p.gcnArchName); }
/// Whether an asynchronous copy may read `p` after hipMemcpyAsync returns (pinned or managed).
inline bool read_later(const void* p) {
  hipPointerAttribute_t a{};
  if (hipPointerGetAttributes(&a, p) != hipSuccess) {
    (void)hipGetLastError();  // pageable memory is "invalid value" here
    return false;
  }
  return a.memoryType == hipMemoryTypeHost || a.isManaged != 0;
}
/// Wavefronts run in lockstep, without *_sync intrinsics: segments may not diverge.
inline bool partitionable(const device_prop&) { return false; }
int max_potential_block_size(const void* f, int limit);

/// Where ki::cuda names each launch with an NVTX range, ki::hip names none: ROCm's marker API
/// (roctx) is a library to link (libroctx64), which Debian's HIP packages on the development
/// machine do not ship, so launches are unnamed in rocprof. The kernel's name still appears in
/// errors. (The place to add it: a roctxRangePushA / roctxRangePop pair here.)
class launch_range {
 public:
  explicit launch_range(const std::string&) {}
  launch_range(const launch_range&) = delete;
  launch_range& operator=(const launch_range&) = delete;
};
}  // namespace api

/// The backend's kernel object (ki::native, ki/native.hpp): the __global__ entry that launches
/// run, and its attributes (hipFuncGetAttributes) on the device that was active when asked.
struct native_kernel {
  const void* function = nullptr;
  hipFuncAttributes attributes{};
};
}  // namespace ki::hip

#include <ki/offload/errors.hpp>

inline int ki::hip::api::max_potential_block_size(const void* f, int limit) {
  int grid = 0, block = 0;
  KI_OFFLOAD_CHECK(OccupancyMaxPotentialBlockSize, &grid, &block, f, 0, limit);
  return block;
}
