// Private: the GPU pass of device functions (nvcc / hipcc device compilation).
#pragma once
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
__device__ inline std::int64_t local_count() {
  return std::int64_t(blockDim.x) * blockDim.y * blockDim.z;
}

}  // namespace ki::detail::gpu
