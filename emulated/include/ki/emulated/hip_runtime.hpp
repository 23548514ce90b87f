// The emulated GPU's HIP runtime API (KI_GPU_EMULATION == 2): the part of <hip/hip_runtime.h>
// that ki's HIP backend (offload/common, ki/hip/api.hpp) calls, with HIP's names and types,
// implemented by ki::emulated's runtime (ki/emulated/runtime.hpp) on the oracle. Include
// <ki/hip.hpp>, which includes this in place of <hip/hip_runtime.h> where KI_GPU_EMULATION is 2.
// (Written from ki/emulated/hip_runtime.hpp: the same calls under HIP's names.)
#pragma once
#include <cstddef>
#include <cstring>
#include <string>

#include <ki/emulated/runtime.hpp>

#if KI_GPU_EMULATION != 2
#error "ki/emulated/hip_runtime.hpp is the HIP dialect of the emulated GPU (KI_GPU_EMULATION=2)"
#endif

enum hipError_t : int {
  hipSuccess = 0,
  hipErrorInvalidValue = 1,
  hipErrorMemoryAllocation = 2,
  hipErrorInvalidConfiguration = 9,
  hipErrorNoDevice = 100,
  hipErrorInvalidDevice = 101,
  hipErrorInvalidResourceHandle = 400,
  hipErrorNotReady = 600,
  hipErrorIllegalAddress = 700,
  hipErrorLaunchOutOfResources = 701,
  hipErrorHostMemoryAlreadyRegistered = 712,
  hipErrorHostMemoryNotRegistered = 713,
  hipErrorLaunchFailure = 719,
};
using hipStream_t = ki::emulated::stream;
using hipEvent_t = ki::emulated::event;
enum hipMemcpyKind {
  hipMemcpyHostToHost,
  hipMemcpyHostToDevice,
  hipMemcpyDeviceToHost,
  hipMemcpyDeviceToDevice,
  hipMemcpyDefault
};
enum hipMemoryType { hipMemoryTypeUnregistered, hipMemoryTypeHost, hipMemoryTypeDevice, hipMemoryTypeManaged };
inline constexpr unsigned hipStreamDefault = 0, hipStreamNonBlocking = 1;
inline constexpr unsigned hipEventDefault = 0, hipEventDisableTiming = 2;
inline constexpr unsigned hipHostRegisterDefault = 0;
inline constexpr unsigned hipMemAttachGlobal = 1;

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
struct hipFuncAttributes {
  std::size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
};
struct hipPointerAttribute_t {
  hipMemoryType memoryType;
  int isManaged;
  int device;
  void* devicePointer;
  void* hostPointer;
};

namespace ki::emulated::hip_api {
inline hipError_t e(ki::emulated::status s) { return static_cast<hipError_t>(s); }
}  // namespace ki::emulated::hip_api

inline const char* hipGetErrorName(hipError_t e) {
  thread_local std::string name;
  name = ki::emulated::status_name(ki::emulated::status(e));  // "cudaError...": HIP's are "hipError..."
  name.replace(0, 4, "hip");
  return name.c_str();
}
/// A failed kernel's error says what the oracle found (block, thread, line).
inline const char* hipGetErrorString(hipError_t e) {
  thread_local std::string text;
  text = ki::emulated::status_text(ki::emulated::status(e));
  if (e == hipErrorLaunchFailure || e == hipErrorIllegalAddress)
    if (const std::string m = ki::emulated::sticky_message(); !m.empty()) text += ": " + m;
  return text.c_str();
}
inline hipError_t hipGetLastError() { return ki::emulated::hip_api::e(ki::emulated::last_error(true)); }
inline hipError_t hipPeekAtLastError() { return ki::emulated::hip_api::e(ki::emulated::last_error(false)); }
inline hipError_t hipGetDeviceCount(int* n) { return ki::emulated::hip_api::e(ki::emulated::device_count(2, n)); }
inline hipError_t hipGetDevice(int* d) { return ki::emulated::hip_api::e(ki::emulated::get_device(d)); }
inline hipError_t hipSetDevice(int d) { return ki::emulated::hip_api::e(ki::emulated::set_device(2, d)); }
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
    return ki::emulated::hip_api::e(s);
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
inline hipError_t hipDeviceGetStreamPriorityRange(int* least, int* greatest) {
  int d = 0;
  (void)ki::emulated::get_device(&d);
  ki::emulated::device_info i;
  (void)ki::emulated::properties(2, d, &i);
  if (least) *least = i.least_priority;
  if (greatest) *greatest = i.greatest_priority;
  return hipSuccess;
}
inline hipError_t hipDeviceSynchronize() { return ki::emulated::hip_api::e(ki::emulated::device_synchronize(2)); }
inline hipError_t hipDeviceReset() { return ki::emulated::hip_api::e(ki::emulated::device_reset(2)); }

template <class T>
inline hipError_t hipMalloc(T** p, std::size_t bytes) {
  return ki::emulated::hip_api::e(
      ki::emulated::allocate(2, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::device));
}
template <class T>
inline hipError_t hipMallocManaged(T** p, std::size_t bytes, unsigned = hipMemAttachGlobal) {
  return ki::emulated::hip_api::e(
      ki::emulated::allocate(2, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::managed));
}
template <class T>
inline hipError_t hipMallocHost(T** p, std::size_t bytes) {
  return ki::emulated::hip_api::e(
      ki::emulated::allocate(2, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::host));
}
inline hipError_t hipFree(void* p) {
  (void)ki::emulated::device_synchronize(2);
  return ki::emulated::hip_api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::device));
}
inline hipError_t hipFreeHost(void* p) {
  return ki::emulated::hip_api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::host));
}
inline hipError_t hipHostRegister(void* p, std::size_t bytes, unsigned) {
  return ki::emulated::hip_api::e(ki::emulated::register_host(p, bytes));
}
inline hipError_t hipHostUnregister(void* p) { return ki::emulated::hip_api::e(ki::emulated::unregister_host(p)); }
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
inline hipError_t hipMemcpyAsync(void* dst, const void* src, std::size_t n, hipMemcpyKind, hipStream_t s = nullptr) {
  return ki::emulated::hip_api::e(ki::emulated::memcpy_async(2, dst, src, n, s));
}
inline hipError_t hipMemcpy(void* dst, const void* src, std::size_t n, hipMemcpyKind k) {
  if (const hipError_t e = hipMemcpyAsync(dst, src, n, k, nullptr); e != hipSuccess) return e;
  return ki::emulated::hip_api::e(ki::emulated::stream_synchronize(2, nullptr));
}
inline hipError_t hipMemsetAsync(void* dst, int v, std::size_t n, hipStream_t s = nullptr) {
  return ki::emulated::hip_api::e(ki::emulated::memset_async(2, dst, v, n, s));
}
inline hipError_t hipStreamCreateWithPriority(hipStream_t* s, unsigned, int priority) {
  return ki::emulated::hip_api::e(ki::emulated::stream_create(2, s, priority));
}
inline hipError_t hipStreamCreate(hipStream_t* s) { return hipStreamCreateWithPriority(s, 0, 0); }
inline hipError_t hipStreamDestroy(hipStream_t s) { return ki::emulated::hip_api::e(ki::emulated::stream_destroy(s)); }
inline hipError_t hipStreamSynchronize(hipStream_t s) {
  return ki::emulated::hip_api::e(ki::emulated::stream_synchronize(2, s));
}
inline hipError_t hipStreamQuery(hipStream_t s) { return ki::emulated::hip_api::e(ki::emulated::stream_query(2, s)); }
inline hipError_t hipStreamWaitEvent(hipStream_t s, hipEvent_t e, unsigned = 0) {
  return ki::emulated::hip_api::e(ki::emulated::stream_wait_event(2, s, e));
}
inline hipError_t hipEventCreateWithFlags(hipEvent_t* e, unsigned) {
  return ki::emulated::hip_api::e(ki::emulated::event_create(e));
}
inline hipError_t hipEventCreate(hipEvent_t* e) { return hipEventCreateWithFlags(e, 0); }
inline hipError_t hipEventDestroy(hipEvent_t e) { return ki::emulated::hip_api::e(ki::emulated::event_destroy(e)); }
inline hipError_t hipEventRecord(hipEvent_t e, hipStream_t s = nullptr) {
  return ki::emulated::hip_api::e(ki::emulated::event_record(2, e, s));
}
inline hipError_t hipEventSynchronize(hipEvent_t e) {
  return ki::emulated::hip_api::e(ki::emulated::event_synchronize(e));
}
inline hipError_t hipEventQuery(hipEvent_t e) { return ki::emulated::hip_api::e(ki::emulated::event_query(e)); }

/// Function attributes: the device's limits (the emulated GPU has no registers to count).
inline hipError_t hipFuncGetAttributes(hipFuncAttributes* a, const void* f) {
  if (a == nullptr || f == nullptr)
    return static_cast<hipError_t>(ki::emulated::record(ki::emulated::status::invalid_value));
  *a = {};
  a->maxThreadsPerBlock = 1024;
  return hipSuccess;
}
/// The occupancy API: the largest block the entry takes (at most `limit`, where given).
inline hipError_t hipOccupancyMaxPotentialBlockSize(int* grid, int* block, const void* f, std::size_t = 0,
                                                    int limit = 0) {
  hipFuncAttributes a{};
  if (const hipError_t e = hipFuncGetAttributes(&a, f); e != hipSuccess) return e;
  int b = a.maxThreadsPerBlock;
  if (limit > 0 && limit < b) b = limit;
  *block = b;
  hipDeviceProp_t p{};
  int d = 0;
  (void)hipGetDevice(&d);
  (void)hipGetDeviceProperties(&p, d);
  *grid = p.multiProcessorCount * (2048 / (b > 0 ? b : 1));
  return hipSuccess;
}
