// The emulated GPU's CUDA runtime API (KI_GPU_EMULATION == 1): the part of <cuda_runtime.h>
// that ki's CUDA backend (offload/common, ki/cuda/api.hpp) calls, with CUDA's names and types,
// implemented by ki::emulated's runtime (ki/emulated/runtime.hpp) on the oracle. Include
// <ki/cuda.hpp>, which includes this in place of <cuda_runtime.h> where KI_GPU_EMULATION is 1.
// The calls HIP has too are in ki/emulated/runtime_api.hpp; here what is CUDA's own.
#pragma once
#include <cstddef>
#include <cstring>

#if KI_GPU_EMULATION != 1
#error "ki/emulated/cuda_runtime.hpp is the CUDA dialect of the emulated GPU (KI_GPU_EMULATION=1)"
#endif

#define KI_EMU_NAME(x) cuda##x
#include <ki/emulated/runtime_api.hpp>
#undef KI_EMU_NAME

struct cudaDeviceProp {
  char name[256];
  std::size_t totalGlobalMem;
  std::size_t sharedMemPerBlock;
  int warpSize;
  int maxThreadsPerBlock;
  int maxThreadsDim[3];
  int maxGridSize[3];
  int multiProcessorCount;
  int managedMemory;
  int major, minor;
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};

inline const char* cudaGetErrorName(cudaError_t e) { return ki::emulated::status_name(ki::emulated::status(e)); }
inline cudaError_t cudaDriverGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
inline cudaError_t cudaRuntimeGetVersion(int* v) {
  *v = 13000;
  return cudaSuccess;
}
inline cudaError_t cudaGetDeviceProperties(cudaDeviceProp* p, int d) {
  ki::emulated::device_info i;
  if (const auto s = ki::emulated::properties(1, d, &i); s != ki::emulated::status::success)
    return ki::emulated::api::e(s);
  *p = {};
  std::strncpy(p->name, i.name.c_str(), sizeof p->name - 1);
  p->totalGlobalMem = i.total_global_mem;
  p->sharedMemPerBlock = i.shared_mem_per_block;
  p->warpSize = i.warp_size;
  p->maxThreadsPerBlock = i.max_threads_per_block;
  for (int k = 0; k < 3; ++k) p->maxThreadsDim[k] = i.max_threads_dim[k], p->maxGridSize[k] = i.max_grid_size[k];
  p->multiProcessorCount = i.multiprocessor_count;
  p->managedMemory = 1;
  p->major = i.major, p->minor = i.minor;
  return cudaSuccess;
}
inline cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* a, const void* p) {
  ki::emulated::memory_kind k{};
  int d = -1;
  (void)ki::emulated::pointer_kind(p, &k, &d);
  *a = {};
  a->type = static_cast<cudaMemoryType>(static_cast<int>(k));
  a->device = d;
  if (k != ki::emulated::memory_kind::unregistered) a->devicePointer = a->hostPointer = const_cast<void*>(p);
  return cudaSuccess;
}

// NVTX (ki::cuda names each launch): the emulated runtime keeps the name for the oracle's reports.
inline int nvtxRangePushA(const char* name) {
  ki::emulated::push_launch_name(name);
  return 0;
}
inline int nvtxRangePop() {
  ki::emulated::pop_launch_name();
  return 0;
}
