// The emulated GPU's HIP runtime API (KI_GPU_EMULATION == 2): the part of <hip/hip_runtime.h>
// that ki's HIP backend (offload/common, ki/hip/api.hpp) calls, with HIP's names and types,
// implemented by ki::emulated's runtime (ki/emulated/runtime.hpp) on the oracle. Include
// <ki/hip.hpp>, which includes this in place of <hip/hip_runtime.h> where KI_GPU_EMULATION is 2.
// The calls CUDA has too are in ki/emulated/runtime_api.hpp; here what is HIP's own.
#pragma once
#include <cstddef>
#include <cstring>
#include <string>

#if KI_GPU_EMULATION != 2
#error "ki/emulated/hip_runtime.hpp is the HIP dialect of the emulated GPU (KI_GPU_EMULATION=2)"
#endif

#define KI_EMU_NAME(x) hip##x
#include <ki/emulated/runtime_api.hpp>
#undef KI_EMU_NAME

struct hipDeviceProp_t {
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
  char gcnArchName[256];
};
struct hipPointerAttribute_t {
  hipMemoryType memoryType;
  int isManaged;
  int device;
  void* devicePointer;
  void* hostPointer;
};

inline const char* hipGetErrorName(hipError_t e) {
  thread_local std::string name;
  name = ki::emulated::status_name(ki::emulated::status(e));  // "cudaError...": HIP's are "hipError..."
  name.replace(0, 4, "hip");
  return name.c_str();
}
inline hipError_t hipDriverGetVersion(int* v) {
  *v = 50200000;
  return hipSuccess;
}
inline hipError_t hipRuntimeGetVersion(int* v) {
  *v = 50200000;
  return hipSuccess;
}
inline hipError_t hipGetDeviceProperties(hipDeviceProp_t* p, int d) {
  ki::emulated::device_info i;
  if (const auto s = ki::emulated::properties(2, d, &i); s != ki::emulated::status::success)
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
  std::strncpy(p->gcnArchName, "gfx90a:sramecc+:xnack- (emulated)", sizeof p->gcnArchName - 1);
  return hipSuccess;
}
inline hipError_t hipPointerGetAttributes(hipPointerAttribute_t* a, const void* p) {
  ki::emulated::memory_kind k{};
  int d = -1;
  (void)ki::emulated::pointer_kind(p, &k, &d);
  *a = {};
  a->memoryType =
      k == ki::emulated::memory_kind::managed ? hipMemoryTypeDevice : static_cast<hipMemoryType>(static_cast<int>(k));
  a->isManaged = k == ki::emulated::memory_kind::managed;
  if (k == ki::emulated::memory_kind::unregistered) return hipErrorInvalidValue;  // (HIP: pageable memory)
  a->device = d;
  if (k != ki::emulated::memory_kind::unregistered) a->devicePointer = a->hostPointer = const_cast<void*>(p);
  return hipSuccess;
}
