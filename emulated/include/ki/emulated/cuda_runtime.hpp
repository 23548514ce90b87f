// The emulated GPU's CUDA runtime API (KI_GPU_EMULATION == 1): the part of <cuda_runtime.h>
// that ki's CUDA backend (offload/common, ki/cuda/api.hpp) calls, with CUDA's names and types,
// implemented by ki::emulated's runtime (ki/emulated/runtime.hpp) on the oracle. Include
// <ki/cuda.hpp>, which includes this in place of <cuda_runtime.h> where KI_GPU_EMULATION is 1.
#pragma once
#include <cstddef>
#include <cstring>
#include <string>

#include <ki/emulated/runtime.hpp>

#if KI_GPU_EMULATION != 1
#error "ki/emulated/cuda_runtime.hpp is the CUDA dialect of the emulated GPU (KI_GPU_EMULATION=1)"
#endif

enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorInvalidConfiguration = 9,
  cudaErrorNoDevice = 100,
  cudaErrorInvalidDevice = 101,
  cudaErrorInvalidResourceHandle = 400,
  cudaErrorNotReady = 600,
  cudaErrorIllegalAddress = 700,
  cudaErrorLaunchOutOfResources = 701,
  cudaErrorHostMemoryAlreadyRegistered = 712,
  cudaErrorHostMemoryNotRegistered = 713,
  cudaErrorLaunchFailure = 719,
};
using cudaStream_t = ki::emulated::stream;
using cudaEvent_t = ki::emulated::event;
enum cudaMemcpyKind {
  cudaMemcpyHostToHost,
  cudaMemcpyHostToDevice,
  cudaMemcpyDeviceToHost,
  cudaMemcpyDeviceToDevice,
  cudaMemcpyDefault
};
enum cudaMemoryType { cudaMemoryTypeUnregistered, cudaMemoryTypeHost, cudaMemoryTypeDevice, cudaMemoryTypeManaged };
inline constexpr unsigned cudaStreamDefault = 0, cudaStreamNonBlocking = 1;
inline constexpr unsigned cudaEventDefault = 0, cudaEventDisableTiming = 2;
inline constexpr unsigned cudaHostRegisterDefault = 0;
inline constexpr unsigned cudaMemAttachGlobal = 1;

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
struct cudaFuncAttributes {
  std::size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
};
struct cudaPointerAttributes {
  cudaMemoryType type;
  int device;
  void* devicePointer;
  void* hostPointer;
};

namespace ki::emulated::cuda_api {
inline cudaError_t e(ki::emulated::status s) { return static_cast<cudaError_t>(s); }
}  // namespace ki::emulated::cuda_api

inline const char* cudaGetErrorName(cudaError_t e) { return ki::emulated::status_name(ki::emulated::status(e)); }
/// A failed kernel's error says what the oracle found (block, thread, line).
inline const char* cudaGetErrorString(cudaError_t e) {
  thread_local std::string text;
  text = ki::emulated::status_text(ki::emulated::status(e));
  if (e == cudaErrorLaunchFailure || e == cudaErrorIllegalAddress)
    if (const std::string m = ki::emulated::sticky_message(); !m.empty()) text += ": " + m;
  return text.c_str();
}
inline cudaError_t cudaGetLastError() { return ki::emulated::cuda_api::e(ki::emulated::last_error(true)); }
inline cudaError_t cudaPeekAtLastError() { return ki::emulated::cuda_api::e(ki::emulated::last_error(false)); }
inline cudaError_t cudaGetDeviceCount(int* n) { return ki::emulated::cuda_api::e(ki::emulated::device_count(1, n)); }
inline cudaError_t cudaGetDevice(int* d) { return ki::emulated::cuda_api::e(ki::emulated::get_device(d)); }
inline cudaError_t cudaSetDevice(int d) { return ki::emulated::cuda_api::e(ki::emulated::set_device(1, d)); }
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
    return ki::emulated::cuda_api::e(s);
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
inline cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  int d = 0;
  (void)ki::emulated::get_device(&d);
  ki::emulated::device_info i;
  (void)ki::emulated::properties(1, d, &i);
  if (least) *least = i.least_priority;
  if (greatest) *greatest = i.greatest_priority;
  return cudaSuccess;
}
inline cudaError_t cudaDeviceSynchronize() { return ki::emulated::cuda_api::e(ki::emulated::device_synchronize(1)); }
inline cudaError_t cudaDeviceReset() { return ki::emulated::cuda_api::e(ki::emulated::device_reset(1)); }

template <class T>
inline cudaError_t cudaMalloc(T** p, std::size_t bytes) {
  return ki::emulated::cuda_api::e(
      ki::emulated::allocate(1, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::device));
}
template <class T>
inline cudaError_t cudaMallocManaged(T** p, std::size_t bytes, unsigned = cudaMemAttachGlobal) {
  return ki::emulated::cuda_api::e(
      ki::emulated::allocate(1, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::managed));
}
template <class T>
inline cudaError_t cudaMallocHost(T** p, std::size_t bytes) {
  return ki::emulated::cuda_api::e(
      ki::emulated::allocate(1, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::host));
}
inline cudaError_t cudaFree(void* p) {
  (void)ki::emulated::device_synchronize(1);
  return ki::emulated::cuda_api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::device));
}
inline cudaError_t cudaFreeHost(void* p) {
  return ki::emulated::cuda_api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::host));
}
inline cudaError_t cudaHostRegister(void* p, std::size_t bytes, unsigned) {
  return ki::emulated::cuda_api::e(ki::emulated::register_host(p, bytes));
}
inline cudaError_t cudaHostUnregister(void* p) { return ki::emulated::cuda_api::e(ki::emulated::unregister_host(p)); }
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
inline cudaError_t cudaMemcpyAsync(void* dst, const void* src, std::size_t n, cudaMemcpyKind,
                                   cudaStream_t s = nullptr) {
  return ki::emulated::cuda_api::e(ki::emulated::memcpy_async(1, dst, src, n, s));
}
inline cudaError_t cudaMemcpy(void* dst, const void* src, std::size_t n, cudaMemcpyKind k) {
  if (const cudaError_t e = cudaMemcpyAsync(dst, src, n, k, nullptr); e != cudaSuccess) return e;
  return ki::emulated::cuda_api::e(ki::emulated::stream_synchronize(1, nullptr));
}
inline cudaError_t cudaMemsetAsync(void* dst, int v, std::size_t n, cudaStream_t s = nullptr) {
  return ki::emulated::cuda_api::e(ki::emulated::memset_async(1, dst, v, n, s));
}
inline cudaError_t cudaStreamCreateWithPriority(cudaStream_t* s, unsigned, int priority) {
  return ki::emulated::cuda_api::e(ki::emulated::stream_create(1, s, priority));
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) { return cudaStreamCreateWithPriority(s, 0, 0); }
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  return ki::emulated::cuda_api::e(ki::emulated::stream_destroy(s));
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  return ki::emulated::cuda_api::e(ki::emulated::stream_synchronize(1, s));
}
inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  return ki::emulated::cuda_api::e(ki::emulated::stream_query(1, s));
}
inline cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned = 0) {
  return ki::emulated::cuda_api::e(ki::emulated::stream_wait_event(1, s, e));
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) {
  return ki::emulated::cuda_api::e(ki::emulated::event_create(e));
}
inline cudaError_t cudaEventCreate(cudaEvent_t* e) { return cudaEventCreateWithFlags(e, 0); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) { return ki::emulated::cuda_api::e(ki::emulated::event_destroy(e)); }
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s = nullptr) {
  return ki::emulated::cuda_api::e(ki::emulated::event_record(1, e, s));
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t e) {
  return ki::emulated::cuda_api::e(ki::emulated::event_synchronize(e));
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) { return ki::emulated::cuda_api::e(ki::emulated::event_query(e)); }

/// Function attributes: the device's limits (the emulated GPU has no registers to count).
inline cudaError_t cudaFuncGetAttributes(cudaFuncAttributes* a, const void* f) {
  if (a == nullptr || f == nullptr)
    return static_cast<cudaError_t>(ki::emulated::record(ki::emulated::status::invalid_value));
  *a = {};
  a->maxThreadsPerBlock = 1024;
  return cudaSuccess;
}
/// The occupancy API: the largest block the entry takes (at most `limit`, where given).
inline cudaError_t cudaOccupancyMaxPotentialBlockSize(int* grid, int* block, const void* f, std::size_t = 0,
                                                      int limit = 0) {
  cudaFuncAttributes a{};
  if (const cudaError_t e = cudaFuncGetAttributes(&a, f); e != cudaSuccess) return e;
  int b = a.maxThreadsPerBlock;
  if (limit > 0 && limit < b) b = limit;
  *block = b;
  cudaDeviceProp p{};
  int d = 0;
  (void)cudaGetDevice(&d);
  (void)cudaGetDeviceProperties(&p, d);
  *grid = p.multiProcessorCount * (2048 / (b > 0 ? b : 1));
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
