// The calls and types that the emulated GPU's CUDA and HIP runtime APIs share (the same call
// under each dialect's prefix): included by ki/emulated/cuda_runtime.hpp and hip_runtime.hpp
// with KI_EMU_NAME(x) defined as cuda##x or hip##x; each adds what differs (device properties,
// pointer attributes, error names, versions). The dialect's number is KI_GPU_EMULATION.
// Not a public header: include <ki/cuda.hpp> or <ki/hip.hpp>.
#pragma once
#ifndef KI_EMU_NAME
#error "ki/emulated/runtime_api.hpp is included by ki/emulated/cuda_runtime.hpp and hip_runtime.hpp"
#endif
#include <cstddef>
#include <string>

#include <ki/emulated/runtime.hpp>

enum KI_EMU_NAME(Error_t) : int {
  KI_EMU_NAME(Success) = 0,
  KI_EMU_NAME(ErrorInvalidValue) = 1,
  KI_EMU_NAME(ErrorMemoryAllocation) = 2,
  KI_EMU_NAME(ErrorInvalidConfiguration) = 9,
  KI_EMU_NAME(ErrorNoDevice) = 100,
  KI_EMU_NAME(ErrorInvalidDevice) = 101,
  KI_EMU_NAME(ErrorInvalidResourceHandle) = 400,
  KI_EMU_NAME(ErrorNotReady) = 600,
  KI_EMU_NAME(ErrorIllegalAddress) = 700,
  KI_EMU_NAME(ErrorLaunchOutOfResources) = 701,
  KI_EMU_NAME(ErrorHostMemoryAlreadyRegistered) = 712,
  KI_EMU_NAME(ErrorHostMemoryNotRegistered) = 713,
  KI_EMU_NAME(ErrorLaunchFailure) = 719,
};
using KI_EMU_NAME(Stream_t) = ki::emulated::stream;
using KI_EMU_NAME(Event_t) = ki::emulated::event;
enum KI_EMU_NAME(MemcpyKind) {
  KI_EMU_NAME(MemcpyHostToHost),
  KI_EMU_NAME(MemcpyHostToDevice),
  KI_EMU_NAME(MemcpyDeviceToHost),
  KI_EMU_NAME(MemcpyDeviceToDevice),
  KI_EMU_NAME(MemcpyDefault)
};
enum KI_EMU_NAME(MemoryType) {
  KI_EMU_NAME(MemoryTypeUnregistered),
  KI_EMU_NAME(MemoryTypeHost),
  KI_EMU_NAME(MemoryTypeDevice),
  KI_EMU_NAME(MemoryTypeManaged)
};
inline constexpr unsigned KI_EMU_NAME(StreamDefault) = 0, KI_EMU_NAME(StreamNonBlocking) = 1;
inline constexpr unsigned KI_EMU_NAME(EventDefault) = 0, KI_EMU_NAME(EventDisableTiming) = 2;
inline constexpr unsigned KI_EMU_NAME(HostRegisterDefault) = 0;
inline constexpr unsigned KI_EMU_NAME(MemAttachGlobal) = 1;

struct KI_EMU_NAME(FuncAttributes) {
  std::size_t sharedSizeBytes, constSizeBytes, localSizeBytes;
  int maxThreadsPerBlock, numRegs, ptxVersion, binaryVersion;
};

namespace ki::emulated::api {
inline KI_EMU_NAME(Error_t) e(ki::emulated::status s) { return static_cast<KI_EMU_NAME(Error_t)>(s); }
}  // namespace ki::emulated::api

/// A failed kernel's error says what the oracle found (block, thread, line).
inline const char* KI_EMU_NAME(GetErrorString)(KI_EMU_NAME(Error_t) e) {
  thread_local std::string text;
  text = ki::emulated::status_text(ki::emulated::status(e));
  if (e == KI_EMU_NAME(ErrorLaunchFailure) || e == KI_EMU_NAME(ErrorIllegalAddress))
    if (const std::string m = ki::emulated::sticky_message(); !m.empty()) text += ": " + m;
  return text.c_str();
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(GetLastError)() { return ki::emulated::api::e(ki::emulated::last_error(true)); }
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(PeekAtLastError)() {
  return ki::emulated::api::e(ki::emulated::last_error(false));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(GetDeviceCount)(int* n) {
  return ki::emulated::api::e(ki::emulated::device_count(KI_GPU_EMULATION, n));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(GetDevice)(int* d) { return ki::emulated::api::e(ki::emulated::get_device(d)); }
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(SetDevice)(int d) {
  return ki::emulated::api::e(ki::emulated::set_device(KI_GPU_EMULATION, d));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(DeviceGetStreamPriorityRange)(int* least, int* greatest) {
  int d = 0;
  (void)ki::emulated::get_device(&d);
  ki::emulated::device_info i;
  (void)ki::emulated::properties(KI_GPU_EMULATION, d, &i);
  if (least) *least = i.least_priority;
  if (greatest) *greatest = i.greatest_priority;
  return KI_EMU_NAME(Success);
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(DeviceSynchronize)() {
  return ki::emulated::api::e(ki::emulated::device_synchronize(KI_GPU_EMULATION));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(DeviceReset)() {
  return ki::emulated::api::e(ki::emulated::device_reset(KI_GPU_EMULATION));
}

template <class T>
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(Malloc)(T** p, std::size_t bytes) {
  return ki::emulated::api::e(
      ki::emulated::allocate(KI_GPU_EMULATION, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::device));
}
template <class T>
inline KI_EMU_NAME(Error_t)
    KI_EMU_NAME(MallocManaged)(T** p, std::size_t bytes, unsigned = KI_EMU_NAME(MemAttachGlobal)) {
  return ki::emulated::api::e(
      ki::emulated::allocate(KI_GPU_EMULATION, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::managed));
}
template <class T>
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(MallocHost)(T** p, std::size_t bytes) {
  return ki::emulated::api::e(
      ki::emulated::allocate(KI_GPU_EMULATION, reinterpret_cast<void**>(p), bytes, ki::emulated::memory_kind::host));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(Free)(void* p) {
  (void)ki::emulated::device_synchronize(KI_GPU_EMULATION);
  return ki::emulated::api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::device));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(FreeHost)(void* p) {
  return ki::emulated::api::e(ki::emulated::free_memory(p, ki::emulated::memory_kind::host));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(HostRegister)(void* p, std::size_t bytes, unsigned) {
  return ki::emulated::api::e(ki::emulated::register_host(p, bytes));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(HostUnregister)(void* p) {
  return ki::emulated::api::e(ki::emulated::unregister_host(p));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(MemcpyAsync)(void* dst, const void* src, std::size_t n, KI_EMU_NAME(MemcpyKind),
                                                     KI_EMU_NAME(Stream_t) s = nullptr) {
  return ki::emulated::api::e(ki::emulated::memcpy_async(KI_GPU_EMULATION, dst, src, n, s));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(Memcpy)(void* dst, const void* src, std::size_t n, KI_EMU_NAME(MemcpyKind) k) {
  if (const KI_EMU_NAME(Error_t) e = KI_EMU_NAME(MemcpyAsync)(dst, src, n, k, nullptr); e != KI_EMU_NAME(Success))
    return e;
  return ki::emulated::api::e(ki::emulated::stream_synchronize(KI_GPU_EMULATION, nullptr));
}
inline KI_EMU_NAME(Error_t)
    KI_EMU_NAME(MemsetAsync)(void* dst, int v, std::size_t n, KI_EMU_NAME(Stream_t) s = nullptr) {
  return ki::emulated::api::e(ki::emulated::memset_async(KI_GPU_EMULATION, dst, v, n, s));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(StreamCreateWithPriority)(KI_EMU_NAME(Stream_t) * s, unsigned, int priority) {
  return ki::emulated::api::e(ki::emulated::stream_create(KI_GPU_EMULATION, s, priority));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(StreamCreate)(KI_EMU_NAME(Stream_t) * s) {
  return KI_EMU_NAME(StreamCreateWithPriority)(s, 0, 0);
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(StreamDestroy)(KI_EMU_NAME(Stream_t) s) {
  return ki::emulated::api::e(ki::emulated::stream_destroy(s));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(StreamSynchronize)(KI_EMU_NAME(Stream_t) s) {
  return ki::emulated::api::e(ki::emulated::stream_synchronize(KI_GPU_EMULATION, s));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(StreamQuery)(KI_EMU_NAME(Stream_t) s) {
  return ki::emulated::api::e(ki::emulated::stream_query(KI_GPU_EMULATION, s));
}
inline KI_EMU_NAME(Error_t)
    KI_EMU_NAME(StreamWaitEvent)(KI_EMU_NAME(Stream_t) s, KI_EMU_NAME(Event_t) e, unsigned = 0) {
  return ki::emulated::api::e(ki::emulated::stream_wait_event(KI_GPU_EMULATION, s, e));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventCreateWithFlags)(KI_EMU_NAME(Event_t) * e, unsigned) {
  return ki::emulated::api::e(ki::emulated::event_create(e));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventCreate)(KI_EMU_NAME(Event_t) * e) {
  return KI_EMU_NAME(EventCreateWithFlags)(e, 0);
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventDestroy)(KI_EMU_NAME(Event_t) e) {
  return ki::emulated::api::e(ki::emulated::event_destroy(e));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventRecord)(KI_EMU_NAME(Event_t) e, KI_EMU_NAME(Stream_t) s = nullptr) {
  return ki::emulated::api::e(ki::emulated::event_record(KI_GPU_EMULATION, e, s));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventSynchronize)(KI_EMU_NAME(Event_t) e) {
  return ki::emulated::api::e(ki::emulated::event_synchronize(e));
}
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(EventQuery)(KI_EMU_NAME(Event_t) e) {
  return ki::emulated::api::e(ki::emulated::event_query(e));
}

/// Function attributes: the device's limits (the emulated GPU has no registers to count).
inline KI_EMU_NAME(Error_t) KI_EMU_NAME(FuncGetAttributes)(KI_EMU_NAME(FuncAttributes) * a, const void* f) {
  if (a == nullptr || f == nullptr)
    return static_cast<KI_EMU_NAME(Error_t)>(ki::emulated::record(ki::emulated::status::invalid_value));
  int d = 0;
  (void)ki::emulated::get_device(&d);
  ki::emulated::device_info i;
  if (const auto s = ki::emulated::properties(KI_GPU_EMULATION, d, &i); s != ki::emulated::status::success)
    return ki::emulated::api::e(s);
  *a = {};
  a->maxThreadsPerBlock = i.max_threads_per_block;
  return KI_EMU_NAME(Success);
}
/// The occupancy API: the largest block the entry takes (at most `limit`, where given), and
/// enough blocks of it to fill the device (2048 threads per multiprocessor).
inline KI_EMU_NAME(Error_t)
    KI_EMU_NAME(OccupancyMaxPotentialBlockSize)(int* grid, int* block, const void* f, std::size_t = 0, int limit = 0) {
  KI_EMU_NAME(FuncAttributes) a{};
  if (const KI_EMU_NAME(Error_t) e = KI_EMU_NAME(FuncGetAttributes)(&a, f); e != KI_EMU_NAME(Success)) return e;
  int b = a.maxThreadsPerBlock;
  if (limit > 0 && limit < b) b = limit;
  *block = b;
  int d = 0;
  (void)ki::emulated::get_device(&d);
  ki::emulated::device_info i;
  (void)ki::emulated::properties(KI_GPU_EMULATION, d, &i);
  *grid = i.multiprocessor_count * (2048 / (b > 0 ? b : 1));
  return KI_EMU_NAME(Success);
}
