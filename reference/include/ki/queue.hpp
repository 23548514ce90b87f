// Queues: synchronize, record_event / wait_event, set_priority (the spec's priority!).
//
// Each host thread has its own queue per device. Launches and copies are queued on the calling
// thread's queue of its active device and run in order, possibly after the call returned.
//   synchronize(b)      waits for the calling thread's work on its active device only, and
//                       rethrows the first launch that failed there as ki::kernel_error;
//   record_event(b)     captures the work queued so far on the active device (without waiting);
//   wait_event(b, e)    orders the work queued afterwards on the device active *now* after e;
//                       it does not wait on the host.
// To order work across a device switch: e = record_event(b); set_device(b, 1); wait_event(b, e).
#pragma once
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>

namespace ki {

template <backend B>
void synchronize(const B& b) {
  backend_traits<B>::synchronize(b);
}

/// The event type of backend B (copyable; only meant for wait_event).
template <backend B>
using event = typename backend_traits<B>::event;

template <backend B>
event<B> record_event(const B& b) {
  return backend_traits<B>::record_event(b);
}

template <backend B>
void wait_event(const B& b, const event<B>& e) {
  backend_traits<B>::wait_event(b, e);
}

/// Set the priority of the calling thread's queue of the active device; normal is the default.
/// Anything but high, normal or low throws std::invalid_argument naming the value.
template <backend B>
void set_priority(const B& b, priority p) {
  if (p != priority::high && p != priority::normal && p != priority::low)
    throw std::invalid_argument("ki::set_priority: " + std::to_string(static_cast<int>(p)) +
                                " is not a priority (high, normal or low)");
  backend_traits<B>::set_priority(b, p);
}

}  // namespace ki
