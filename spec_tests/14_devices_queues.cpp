// Spec: devices (ndevices, device, device!, functional, versioninfo, multiprocessor_count) and
// queues (synchronize, record_event, wait_event, priority!), pagelock!, unsafe_free!.
// "The device and the queue that operations use are task-local: each task selects its active
// device with device!." "device!: ... an id outside 1:ndevices(backend) throws an ArgumentError."
// "device(backend, A): the device that owns the memory of A, independently of the currently
// active device." "wait_event: Order the work the calling task subsequently queues on backend's
// active device after the work captured by event." "priority!: ... must accept :high, :normal,
// :low." C++: device ids are 0-based; device! is ki::set_device, priority! ki::set_priority.
//
// The rules that only show when work really runs late (synchronize waits for the active device
// only, device switches add no ordering, record_event captures only earlier work) are tested on
// the reference backend's delayed queues, which make a missing synchronize fail every time:
// reference/tests/queues.cpp.
#include <cstdint>
#include <future>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "backends.hpp"

namespace ki_spec_devices {

using i64 = std::int64_t;
using ki_test::ContainsSubstring;

/// out[i] = in[i] + add.
struct add_kernel {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in, i64 add) const {
    const i64 i = ki::get_global_id().x;
    if (i < out.size()) out[i] = in[i] + add;
  }
};

/// b, and on the reference backend also b with delayed queues: there queued work runs only when
/// the host or a waiting queue needs it, so an ordering rule that does nothing (a no-op
/// wait_event or record_event) leaves the work unrun and the test reads stale data.
template <class B>
std::vector<B> ordering_modes(const B& b) {
  std::vector<B> v{b};
#if KI_TEST_BACKEND_REFERENCE
  if constexpr (std::is_same_v<B, ki::reference::backend>) {
    B d = b;
    d.queue = ki::reference::queue_mode::delayed;
    v.push_back(d);
  }
#endif
  return v;
}

/// Restores the calling thread's active device when a test ends, whatever happens.
template <class B>
struct device_guard {
  const B& b;
  int saved = ki::device(b);
  ~device_guard() { ki::set_device(b, saved); }
};

TEMPLATE_LIST_TEST_CASE("devices: ndevices, device and set_device", "[devices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const device_guard<TestType> guard{b};
  const int n = ki::ndevices(b);
  REQUIRE(n >= 1);
  for (int d = n - 1; d >= 0; --d) {
    ki::set_device(b, d);
    CHECK(ki::device(b) == d);
  }
  for (int bad : {-1, n, n + 5}) {
    CHECK_THROWS_AS(ki::set_device(b, bad), std::invalid_argument);
    CHECK_THROWS_WITH(ki::set_device(b, bad), ContainsSubstring("device id " + std::to_string(bad)));
  }
  CHECK(ki::device(b) == 0);  // a rejected id changes nothing
}

TEMPLATE_LIST_TEST_CASE("devices: the active device is per host thread", "[devices]", ki_test::backends) {
  const auto b = ki_test::make_multi_device<TestType>();
  const device_guard<TestType> guard{b};
  ki::set_device(b, 1);
  int seen = -1, seen_after = -1;
  std::thread t([&] {
    seen = ki::device(b);  // a new thread starts on device 0
    ki::set_device(b, 0);
    seen_after = ki::device(b);
  });
  t.join();
  CHECK(seen == 0);
  CHECK(seen_after == 0);
  CHECK(ki::device(b) == 1);  // the other thread's switch did not change ours
}

TEMPLATE_LIST_TEST_CASE("devices: device(b, array) is the owning device, whichever is active", "[devices]",
                        ki_test::backends) {
  const auto b = ki_test::make_multi_device<TestType>();
  const device_guard<TestType> guard{b};
  ki::set_device(b, 1);
  const auto a1 = ki::zeros<i64>(b, 8);
  ki::set_device(b, 0);
  const auto a0 = ki::zeros<i64>(b, 8);
  CHECK(ki::device(b, a1) == 1);
  CHECK(ki::device(b, a0) == 0);
  ki::set_device(b, 1);
  CHECK(ki::device(b, a0) == 0);
  ki::synchronize(b);
  ki::set_device(b, 0);
  ki::synchronize(b);
}

TEMPLATE_LIST_TEST_CASE("queues: wait_event orders work on another device after the recorded work", "[devices]",
                        ki_test::backends) {
  const auto base = ki_test::make_multi_device<TestType>();
  const device_guard<TestType> guard{base};
  for (const auto& b : ordering_modes(base)) {
    KI_INFO(ki_test::config<TestType>::describe(b));
    const i64 n = 1000;
    std::vector<i64> h(static_cast<std::size_t>(n));
    for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = 7 * i - 3;
    ki::set_device(b, 0);
    auto in0 = ki::allocate<i64>(b, n);
    auto out0 = ki::allocate<i64>(b, n);
    ki::copyto(b, in0, h);
    ki::launch(b, {.ndrange = n, .workgroupsize = 64}, add_kernel{}, out0, std::as_const(in0), i64{10});
    const auto e = ki::record_event(b);  // captures the copy and the launch on device 0
    ki::set_device(b, 1);
    auto in1 = ki::allocate<i64>(b, n);
    auto out1 = ki::allocate<i64>(b, n);
    ki::wait_event(b, e);  // device 1's later work runs after device 0's
    ki::copyto(b, in1, out0);
    ki::launch(b, {.ndrange = n, .workgroupsize = 64}, add_kernel{}, out1, std::as_const(in1), i64{100});
    std::vector<i64> back(static_cast<std::size_t>(n), 0);
    ki::copyto(b, back, out1);
    ki::synchronize(b);
    ki_test::check_all(
        back, [](i64 i) { return 7 * i - 3 + 110; }, "device 1's result");
    ki::set_device(b, 0);
    ki::synchronize(b);
  }
}

TEMPLATE_LIST_TEST_CASE("queues: an event of the same queue and synchronize", "[devices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 300;
  auto a = ki::zeros<i64>(b, n);
  auto c = ki::allocate<i64>(b, n);
  ki::launch(b, {.ndrange = n}, add_kernel{}, c, std::as_const(a), i64{5});
  const auto e = ki::record_event(b);
  ki::wait_event(b, e);  // already in order: changes nothing
  const auto e2 = e;     // events are copyable handles
  ki::wait_event(b, e2);
  CHECK(ki_test::read(b, c) == std::vector<i64>(static_cast<std::size_t>(n), 5));
}

TEMPLATE_LIST_TEST_CASE("queues: wait_event orders work after another host thread's recorded work", "[devices]",
                        ki_test::backends) {
  // Queues are per host thread: an event recorded by another thread is the only ordering
  // between its queue and ours. (In the delayed mode of ordering_modes the other thread's
  // launch runs only because our queue waits for its event.)
  const auto base = ki_test::make<TestType>();
  for (const auto& b : ordering_modes(base)) {
    KI_INFO(ki_test::config<TestType>::describe(b));
    const i64 n = 500;
    auto a = ki::zeros<i64>(b, n);
    auto c = ki::allocate<i64>(b, n);
    auto d = ki::allocate<i64>(b, n);
    ki::synchronize(b);  // a's zeros are written before the other thread reads them
    std::optional<decltype(ki::record_event(b))> e;
    std::promise<void> recorded, done;
    // The other thread stays alive until we have read d (a thread's exit may drain its queue).
    std::thread t([&] {
      ki::launch(b, {.ndrange = n}, add_kernel{}, c, std::as_const(a), i64{5});
      e = ki::record_event(b);  // no synchronize on this thread
      recorded.set_value();
      done.get_future().wait();
    });
    recorded.get_future().wait();
    ki::wait_event(b, *e);
    ki::launch(b, {.ndrange = n}, add_kernel{}, d, std::as_const(c), i64{20});
    const auto got = ki_test::read(b, d);
    done.set_value();
    t.join();
    ki_test::check_all(
        got, [](i64) { return 25; }, "after the other thread's launch");
  }
}

TEMPLATE_LIST_TEST_CASE("queues: set_priority accepts high, normal and low, and rejects anything else", "[devices]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (auto p : {ki::priority::high, ki::priority::low, ki::priority::normal}) CHECK_NOTHROW(ki::set_priority(b, p));
  CHECK_THROWS_AS(ki::set_priority(b, static_cast<ki::priority>(7)), std::invalid_argument);
  CHECK_THROWS_WITH(ki::set_priority(b, static_cast<ki::priority>(-2)), ContainsSubstring("-2"));
  // Work still runs after a priority change.
  auto a = ki::zeros<i64>(b, 10);
  auto c = ki::allocate<i64>(b, 10);
  ki::set_priority(b, ki::priority::high);
  ki::launch(b, {.ndrange = 10}, add_kernel{}, c, std::as_const(a), i64{2});
  CHECK(ki_test::read(b, c) == std::vector<i64>(10, 2));
  ki::set_priority(b, ki::priority::normal);
}

TEMPLATE_LIST_TEST_CASE("memory: pagelock returns nothing, or missing where not implemented", "[memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  std::vector<i64> h(64, 9);
  // The spec allows missing; every ki backend implements it (the CPU ones: nothing to pin;
  // CUDA/HIP: cudaHostRegister / hipHostRegister), so it returns nothing. Copies from the
  // (pinned) memory still work, also when it is pinned twice.
  const std::optional<std::monostate> r = ki::pagelock(b, h);
  CHECK(r.has_value());
  CHECK(ki::pagelock(b, h).has_value());
  auto a = ki::allocate<i64>(b, 64);
  ki::copyto(b, a, h);
  CHECK(ki_test::read(b, a) == h);
}

TEMPLATE_LIST_TEST_CASE("memory: unsafe_free releases the array; using it afterwards is an error", "[memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto a = ki::ones<i64>(b, 16);
  auto c = ki::allocate<i64>(b, 16);
  ki::launch(b, {.ndrange = 16}, add_kernel{}, c, std::as_const(a), i64{1});
  ki::unsafe_free(a);  // after the launch queued before it
  CHECK(a.released());
  CHECK(ki_test::read(b, c) == std::vector<i64>(16, 2));
  std::vector<i64> h(16);
  CHECK_THROWS_WITH(ki::copyto(b, h, a), ContainsSubstring("after ki::unsafe_free"));
  CHECK_THROWS_WITH(ki::launch(b, {.ndrange = 16}, add_kernel{}, c, std::as_const(a), i64{1}),
                    ContainsSubstring("after ki::unsafe_free"));
  CHECK_THROWS_AS(ki::unsafe_free(a), std::invalid_argument);  // twice
  ki::synchronize(b);
}

TEMPLATE_LIST_TEST_CASE("devices: functional, versioninfo and multiprocessor_count", "[devices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const std::optional<bool> f = ki::functional(b);
  REQUIRE(f.has_value());
  CHECK(*f);  // the suite runs only where the backend has a device
  std::ostringstream os;
  ki::versioninfo(os, b);
  CHECK_THAT(os.str(), ContainsSubstring(ki::backend_traits<TestType>::name));
  // "The number of multiprocessors ..., or 0 if unknown": a GPU knows its SMs / CUs; the CPU
  // backends count the host threads they run work-groups on, so a value configured with
  // threads = 3 (config<B>::configured()) has 3, and the oracle reports a profile's own count.
#if KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP
  CHECK(ki::multiprocessor_count(b) > 0);
#else
  CHECK(ki::multiprocessor_count(ki_test::config<TestType>::configured()) == 3);
#endif
#if KI_TEST_BACKEND_REFERENCE
  if constexpr (std::is_same_v<TestType, ki::reference::backend>) {
    auto p = b;
    p.device.multiprocessor_count = 5;
    CHECK(ki::multiprocessor_count(p) == 5);
  }
#endif
}

}  // namespace ki_spec_devices
