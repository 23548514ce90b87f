// Private to the offload backends: the calling thread's queue per device (the spec's
// task-local queues), as streams with priorities, and events.
//
// Each host thread has, per device, up to three streams, one per priority (created on first
// use with cudaStreamCreateWithPriority / hipStreamCreateWithPriority, non-blocking so that
// other libraries' legacy default stream does not serialise them). set_priority switches the
// thread's queue to another of them, ordered after the work queued so far (an event), so that
// "runs in order" still holds across the switch. The streams are destroyed when the thread ends.
#pragma once
#include <array>
#include <memory>
#include <vector>

#include <ki/backend.hpp>
#include <ki/offload/device.hpp>

namespace ki::KI_OFFLOAD_NAMESPACE {

/// A recorded event (destroyed with the last copy of the handle).
struct event {
  std::shared_ptr<std::remove_pointer_t<api::event_t>> e;
};

namespace detail {

/// Stream priority of p on device d: high is the device's greatest priority, low its least,
/// normal the runtime's default (0), within the range. Where the least priority is the
/// default (CUDA: least = 0), low and normal are the same.
inline int stream_priority(int d, priority p) {
  int least = 0, greatest = 0;
  const int current = current_device();
  if (current != d) KI_OFFLOAD_CHECK(SetDevice, d);
  KI_OFFLOAD_CHECK(DeviceGetStreamPriorityRange, &least, &greatest);
  if (current != d) KI_OFFLOAD_CHECK(SetDevice, current);
  switch (p) {
    case priority::high: return greatest;
    case priority::low: return least;
    default: return 0 < greatest ? greatest : (0 > least ? least : 0);  // (greatest <= least numerically)
  }
}

class thread_queues {
 public:
  thread_queues() = default;
  thread_queues(const thread_queues&) = delete;
  thread_queues& operator=(const thread_queues&) = delete;
  ~thread_queues() {
    for (auto& d : devices_)
      for (auto s : d.streams)
        if (s) (void)KI_OFFLOAD_API(StreamDestroy)(s);  // the runtime may be unloading: errors are moot
  }

  /// The calling thread's stream on the active device.
  api::stream_t stream() { return stream(current_device()); }
  api::stream_t stream(int d) {
    auto& q = slot(d);
    auto& s = q.streams[static_cast<int>(q.current)];
    if (!s) {
      KI_OFFLOAD_CHECK(StreamCreateWithPriority, &s, KI_OFFLOAD_API(StreamNonBlocking), stream_priority(d, q.current));
    }
    return s;
  }
  /// The existing streams of device d (to wait for all of the thread's work there).
  template <class F>
  void each_stream(int d, F f) {
    if (d >= 0 && static_cast<std::size_t>(d) < devices_.size())
      for (auto s : devices_[static_cast<std::size_t>(d)].streams)
        if (s) f(s);
  }
  void set_priority(priority p) {
    const int d = current_device();
    auto& q = slot(d);
    if (q.current == p) return;
    const api::stream_t before = q.streams[static_cast<int>(q.current)];
    q.current = p;
    if (!before) return;
    // The new stream's work runs after everything queued on the previous one.
    api::event_t e = nullptr;
    KI_OFFLOAD_CHECK(EventCreateWithFlags, &e, KI_OFFLOAD_API(EventDisableTiming));
    KI_OFFLOAD_CHECK(EventRecord, e, before);
    KI_OFFLOAD_CHECK(StreamWaitEvent, stream(d), e, 0);
    KI_OFFLOAD_CHECK(EventDestroy, e);
  }

 private:
  struct per_device {
    std::array<api::stream_t, 3> streams{};  // indexed by ki::priority
    priority current = priority::normal;
  };
  per_device& slot(int d) {
    if (static_cast<std::size_t>(d) >= devices_.size()) devices_.resize(static_cast<std::size_t>(d) + 1);
    return devices_[static_cast<std::size_t>(d)];
  }
  std::vector<per_device> devices_;
};

inline thread_queues& queues() {
  thread_local thread_queues q;
  return q;
}

}  // namespace detail
}  // namespace ki::KI_OFFLOAD_NAMESPACE
