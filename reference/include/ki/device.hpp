// Devices: ndevices, device, set_device (the spec's device!), functional, versioninfo,
// multiprocessor_count.
//
// The active device is per host thread (the spec's task-local state) and starts at 0. Device ids
// are 0-based (the spec's are 1-based). set_device is not a synchronization point: work queued
// before the switch is not ordered with work queued after it (use synchronize, or
// record_event + wait_event, see ki/queue.hpp).
#pragma once
#include <cstdint>
#include <iostream>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>

namespace ki {

/// The number of devices available to b.
template <backend B>
int ndevices(const B& b) {
  return backend_traits<B>::ndevices(b);
}

/// The calling thread's active device of b (0-based).
template <backend B>
int device(const B& b) {
  return backend_traits<B>::device(b);
}

/// Select the calling thread's active device of b. id outside [0, ndevices(b)) throws
/// std::invalid_argument naming it.
template <backend B>
void set_device(const B& b, int id) {
  const int n = backend_traits<B>::ndevices(b);
  if (id < 0 || id >= n)
    throw std::invalid_argument("ki::set_device: device id " + std::to_string(id) + " is not in [0, " +
                                std::to_string(n) + ") (backend " + backend_traits<B>::name + " has " +
                                std::to_string(n) + (n == 1 ? " device)" : " devices)"));
  backend_traits<B>::set_device(b, id);
}

/// Whether b can be used here (drivers and a device present); empty if the backend can't tell
/// (the spec's missing).
template <backend B>
std::optional<bool> functional(const B& b) {
  return backend_traits<B>::functional(b);
}

/// Print what the backend considers relevant about itself and its active device.
template <backend B>
void versioninfo(std::ostream& os, const B& b) {
  backend_traits<B>::versioninfo(os, b);
}
template <backend B>
void versioninfo(const B& b) {
  versioninfo(std::cout, b);
}

/// Multiprocessors (SMs, CUs, cores ...) of the active device; 0 if unknown. Only for heuristics.
template <backend B>
std::int64_t multiprocessor_count(const B& b) {
  return backend_traits<B>::multiprocessor_count(b);
}

}  // namespace ki
