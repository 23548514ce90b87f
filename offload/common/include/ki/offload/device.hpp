// Private to the offload backends: devices and their properties (read once per device and
// cached: cudaGetDeviceProperties takes milliseconds).
#pragma once
#include <map>
#include <mutex>
#include <string>

#include <ki/offload/errors.hpp>

namespace ki::KI_OFFLOAD_NAMESPACE {

/// Whether a device can be used; otherwise `why` says why (e.g. "cudaErrorNoDevice: ...").
inline bool available(std::string* why = nullptr) {
  int n = 0;
  const api::error_t e = KI_OFFLOAD_API(GetDeviceCount)(&n);
  if (e != KI_OFFLOAD_API(Success) || n == 0) {
    (void)KI_OFFLOAD_API(GetLastError)();
    if (why)
      *why = e != KI_OFFLOAD_API(Success)
                 ? std::string(KI_OFFLOAD_API(GetErrorName)(e)) + ": " + KI_OFFLOAD_API(GetErrorString)(e)
                 : std::string("no ") + api::name + " device";
    return false;
  }
  return true;
}

namespace detail {
inline int ndevices() {
  int n = 0;
  if (KI_OFFLOAD_API(GetDeviceCount)(&n) != KI_OFFLOAD_API(Success)) {
    (void)KI_OFFLOAD_API(GetLastError)();
    return 0;
  }
  return n;
}
/// The calling thread's active device (the runtime's current device, 0 until set).
inline int current_device() {
  int d = 0;
  KI_OFFLOAD_CHECK(GetDevice, &d);
  return d;
}
/// The properties of device d, read on first use.
inline const api::device_prop& properties(int d) {
  static std::mutex m;
  static std::map<int, api::device_prop> cache;
  std::lock_guard lock(m);
  auto it = cache.find(d);
  if (it == cache.end()) {
    api::device_prop p{};
    KI_OFFLOAD_CHECK(GetDeviceProperties, &p, d);
    it = cache.emplace(d, p).first;
  }
  return it->second;
}
inline const api::device_prop& properties() { return properties(current_device()); }
}  // namespace detail

}  // namespace ki::KI_OFFLOAD_NAMESPACE
