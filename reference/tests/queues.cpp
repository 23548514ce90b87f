// The queues of the reference backend and the spec's ordering rules, made observable.
//
// In the delayed mode (ki::reference::queue_mode::delayed) queued work runs only when the host
// needs it, so each rule is tested twice: with the synchronize / wait_event the rule asks for,
// the program computes the right result; without it, it computes a stale one, every time. That
// second half is what a program missing the call would see; on a GPU it would pass or fail by
// luck.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "test_support.hpp"

namespace {

using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;
using ki::reference::queue_mode;

ki::reference::profile devices(int n) {
  auto p = ki::reference::profile::preset("cuda");
  p.devices = n;
  return p;
}
const ki::reference::backend delayed{.device = devices(2), .queue = queue_mode::delayed};
const ki::reference::backend async{.device = devices(2), .queue = queue_mode::async};
const ki::reference::backend immediate{.device = devices(2), .queue = queue_mode::immediate};

/// What a 64-bit read of never-written memory of the oracle gives: the poison word, twice.
constexpr i64 poison64 = static_cast<i64>(0xFFBADBADFFBADBADull);

struct fill {
  KI_DEVICE void operator()(ki::span<i64> a, i64 v) const {
    const i64 i = ki::get_global_id().x;
    if (i < a.size()) a[i] = v;
  }
};
struct add {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in, i64 v) const {
    const i64 i = ki::get_global_id().x;
    if (i < out.size()) out[i] = in[i] + v;
  }
};
struct throws {
  void operator()() const { throw std::runtime_error("planted failure"); }
};
/// Waits (at most 10 s) until the host sets *flag, then records whether it saw it.
struct wait_for_host {
  std::atomic<int>* flag;
  ki::span<i64> saw;
  void operator()() const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (flag->load() == 0 && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    saw[0] = flag->load();
  }
};

/// Restores device 0 as the active device and drains every device's queue.
struct cleanup {
  const ki::reference::backend& b;
  ~cleanup() {
    for (int d = ki::ndevices(b) - 1; d >= 0; --d) {
      ki::set_device(b, d);
      try {
        ki::synchronize(b);
      } catch (...) {
      }
    }
  }
};

const i64 n = 500;
std::vector<i64> iota_like() {
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = 3 * i + 1;
  return h;
}

TEST_CASE("delayed: without synchronize the host copy is stale; with it, it is right", "[queues]") {
  const cleanup c{delayed};
  auto run = [](bool sync) {
    auto a = ki::allocate<i64>(delayed, n);
    ki::launch(delayed, {.ndrange = n}, fill{}, a, i64{42});
    std::vector<i64> h(static_cast<std::size_t>(n), -1);
    ki::copyto(delayed, h, a);
    if (sync) ki::synchronize(delayed);
    const std::vector<i64> seen = h;
    ki::synchronize(delayed);  // before h goes away: the queued copy writes it
    return seen;
  };
  CHECK(run(true) == std::vector<i64>(n, 42));
  CHECK(run(false) == std::vector<i64>(n, -1));
}

TEST_CASE("synchronize waits for the work of the active device only", "[queues]") {
  const cleanup c{delayed};
  ki::set_device(delayed, 0);
  auto a = ki::allocate<i64>(delayed, n);
  ki::launch(delayed, {.ndrange = n}, fill{}, a, i64{7});
  std::vector<i64> h(static_cast<std::size_t>(n), -1);
  ki::copyto(delayed, h, a);
  ki::set_device(delayed, 1);  // not a synchronization point
  ki::synchronize(delayed);    // device 1's queue: device 0's work is not waited for
  CHECK(h == std::vector<i64>(n, -1));
  ki::set_device(delayed, 0);
  ki::synchronize(delayed);
  CHECK(h == std::vector<i64>(n, 7));
}

/// Device 0 computes out0 = in + 10; device 1 copies out0 and adds 100. `wait`: with the
/// wait_event the spec prescribes (after switching to device 1); `wait_before_switch`: waiting
/// on device 0 instead, which orders nothing on device 1.
std::vector<i64> two_device_pipeline(const ki::reference::backend& b, bool wait, bool wait_before_switch = false) {
  const cleanup c{b};
  const auto h = iota_like();
  ki::set_device(b, 0);
  auto in0 = ki::allocate<i64>(b, n);
  auto out0 = ki::allocate<i64>(b, n);
  ki::copyto(b, in0, h);
  ki::launch(b, {.ndrange = n, .workgroupsize = 64}, add{}, out0, std::as_const(in0), i64{10});
  const auto e = ki::record_event(b);
  if (wait_before_switch) ki::wait_event(b, e);
  ki::set_device(b, 1);
  auto in1 = ki::allocate<i64>(b, n);
  auto out1 = ki::allocate<i64>(b, n);
  if (wait) ki::wait_event(b, e);
  ki::copyto(b, in1, out0);
  ki::launch(b, {.ndrange = n, .workgroupsize = 64}, add{}, out1, std::as_const(in1), i64{100});
  std::vector<i64> back(static_cast<std::size_t>(n), -1);
  ki::copyto(b, back, out1);
  ki::synchronize(b);
  return back;
}

TEST_CASE("wait_event orders device 1's work after device 0's; without it device 1 reads too early", "[queues]") {
  std::vector<i64> right = iota_like(), stale(static_cast<std::size_t>(n), poison64 + 100);
  for (auto& x : right) x += 110;
  CHECK(two_device_pipeline(delayed, true) == right);
  CHECK(two_device_pipeline(delayed, false) == stale);  // out0 was still uninitialised (poison)
  CHECK(two_device_pipeline(async, true) == right);
  CHECK(two_device_pipeline(immediate, false) == right);  // immediate: everything ran at once
}

TEST_CASE("wait_event applies to the device active when it is called", "[queues]") {
  std::vector<i64> stale(static_cast<std::size_t>(n), poison64 + 100);
  CHECK(two_device_pipeline(delayed, false, /*wait_before_switch=*/true) == stale);
}

TEST_CASE("record_event captures the work queued before it, not after", "[queues]") {
  const cleanup c{delayed};
  ki::set_device(delayed, 0);
  auto a0 = ki::allocate<i64>(delayed, n);
  ki::launch(delayed, {.ndrange = n}, fill{}, a0, i64{1});
  const auto e = ki::record_event(delayed);
  ki::launch(delayed, {.ndrange = n}, fill{}, a0, i64{2});  // after the event: not captured
  ki::set_device(delayed, 1);
  auto a1 = ki::allocate<i64>(delayed, n);
  ki::wait_event(delayed, e);
  ki::copyto(delayed, a1, a0);
  std::vector<i64> h(static_cast<std::size_t>(n), -1);
  ki::copyto(delayed, h, a1);
  ki::synchronize(delayed);
  CHECK(h == std::vector<i64>(n, 1));  // the second fill is still queued on device 0
  ki::set_device(delayed, 0);
  ki::synchronize(delayed);
  ki::copyto(delayed, h, a0);
  ki::synchronize(delayed);
  CHECK(h == std::vector<i64>(n, 2));
}

TEST_CASE("each host thread has its own queue per device", "[queues]") {
  std::vector<i64> h(static_cast<std::size_t>(n), -1);
  std::promise<void> queued, synced_main;
  std::thread t([&] {
    auto a = ki::allocate<i64>(delayed, n);
    ki::launch(delayed, {.ndrange = n}, fill{}, a, i64{9});
    ki::copyto(delayed, h, a);
    queued.set_value();
    synced_main.get_future().wait();
    ki::synchronize(delayed);
  });
  queued.get_future().wait();
  ki::synchronize(delayed);  // the main thread's queue: the other thread's work stays queued
  CHECK(h == std::vector<i64>(n, -1));
  synced_main.set_value();
  t.join();
  CHECK(h == std::vector<i64>(n, 9));
}

TEST_CASE("async: a launch returns before its work-items run", "[queues]") {
  std::atomic<int> flag{0};
  auto saw = ki::allocate<i64>(async, 1);
  ki::launch(async, {}, wait_for_host{&flag, ki::argconvert(async, saw)});
  flag = 1;  // a synchronous launch would have waited 10 s and seen 0
  CHECK(ki::to_host(async, saw) == std::vector<i64>{1});
}

TEST_CASE("immediate: work runs before the call returns, on the calling thread", "[queues]") {
  auto a = ki::allocate<i64>(immediate, n);
  ki::launch(immediate, {.ndrange = n}, fill{}, a, i64{5});
  std::vector<i64> h(static_cast<std::size_t>(n), -1);
  ki::copyto(immediate, h, a);
  CHECK(h == std::vector<i64>(n, 5));  // no synchronize needed
  ki::synchronize(immediate);
}

TEST_CASE("a failed launch is reported by the synchronize of its own device", "[queues]") {
  const cleanup c{async};
  ki::set_device(async, 0);
  ki::launch(async, {}, throws{});
  ki::set_device(async, 1);
  CHECK_NOTHROW(ki::synchronize(async));
  ki::set_device(async, 0);
  CHECK_THROWS_WITH(ki::synchronize(async), ContainsSubstring("planted failure"));
  CHECK_NOTHROW(ki::synchronize(async));  // reported once
}

TEST_CASE("freeing an array waits for the work queued before", "[queues]") {
  const cleanup c{delayed};
  std::vector<i64> h(static_cast<std::size_t>(n), -1);
  {
    auto a = ki::allocate<i64>(delayed, n);
    ki::launch(delayed, {.ndrange = n}, fill{}, a, i64{3});
    ki::copyto(delayed, h, a);
  }  // the free is queued after the launch and the copy
  ki::synchronize(delayed);
  CHECK(h == std::vector<i64>(n, 3));
}

TEST_CASE("an array of another device can't be passed to a launch, unless it is unified", "[queues]") {
  const cleanup c{async};
  ki::set_device(async, 0);
  auto a = ki::zeros<i64>(async, 8);
  auto u = ki::zeros<i64>(async, 8, {.unified = true});
  ki::set_device(async, 1);
  CHECK_THROWS_WITH(ki::launch(async, {.ndrange = 8}, fill{}, a, i64{1}),
                    ContainsSubstring("an array of device 0 passed to a launch on device 1"));
  CHECK_NOTHROW(ki::launch(async, {.ndrange = 8}, fill{}, u, i64{1}));
  ki::synchronize(async);
}

TEST_CASE("work on a device the backend's profile does not have is an error naming it", "[queues]") {
  const cleanup c{async};
  const ki::reference::backend three{.device = devices(3)};
  ki::set_device(three, 2);
  const ki::reference::backend one{.device = devices(1)};
  CHECK_THROWS_WITH(ki::allocate<i64>(one, 4), ContainsSubstring("on device 2, but profile 'cuda' has 1 device"));
  CHECK_THROWS_AS(ki::synchronize(one), std::invalid_argument);
  ki::set_device(three, 0);
}

TEST_CASE("set_priority is recorded per queue", "[queues]") {
  const cleanup c{async};
  ki::set_device(async, 1);
  ki::set_priority(async, ki::priority::low);
  CHECK(ki::reference::get_priority(async) == ki::priority::low);
  ki::set_device(async, 0);
  CHECK(ki::reference::get_priority(async) == ki::priority::normal);
  ki::set_priority(async, ki::priority::high);
  CHECK(ki::reference::get_priority(async) == ki::priority::high);
  ki::set_priority(async, ki::priority::normal);
}

TEST_CASE("the maxthreads compiler option bounds the kernel's work-group size", "[queues][kernel]") {
  const ki::reference::backend b{};
  const auto k = ki::kernel_function(b, fill{}, {.options = {{"maxthreads", 64}}});
  CHECK(ki::max_work_group_size(k) == 64);
  CHECK(ki::max_work_group_size(b) == 1024);
  CHECK(ki::launch_configuration(k, 10000).workgroupsize <= 64);
  auto a = ki::allocate<i64>(b, 1000);
  CHECK_THROWS_AS(k({.ndrange = 1000, .workgroupsize = 128}, a, i64{1}), std::invalid_argument);
  k({.ndrange = 1000}, a, i64{4});  // picks at most 64
  CHECK(ki::to_host(b, a) == std::vector<i64>(1000, 4));
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"maxthreads", 0}}}),
                    ContainsSubstring("maxthreads = 0"));
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"maxthreads", std::string("many")}}}),
                    ContainsSubstring("must be an integer"));
  CHECK_THROWS_WITH(ki::kernel_function(b, fill{}, {.options = {{"maxthread", 3}}}),
                    ContainsSubstring("unknown compiler option 'maxthread'"));
}

TEST_CASE("versioninfo describes the profile and the queue mode", "[queues]") {
  std::ostringstream os;
  ki::versioninfo(os, delayed);
  CHECK_THAT(os.str(), ContainsSubstring("backend reference"));
  CHECK_THAT(os.str(), ContainsSubstring("devices:            2"));
  CHECK_THAT(os.str(), ContainsSubstring("queue mode:         delayed"));
}

}  // namespace
