// Two devices and events: a two-stage pipeline where device 0 produces and device 1 consumes.
//
// Device 0 squares the input; device 1 copies device 0's result into its own memory, adds an
// offset and sums blocks. The hand-off is ordered with record_event / wait_event, not with a
// host-side synchronize: device 1's queue waits for device 0's work, while the host thread goes
// on queueing. (Remove the wait_event and run with KI_REFERENCE_QUEUE=delayed: device 1 then
// reads device 0's array before it is written, and the result is wrong every time.)
//
// The reference backend emulates the two devices (profile.devices = 2); each has its own memory
// and its own queue per host thread.
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

using i64 = std::int64_t;

struct square {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    const i64 i = ki::get_global_id().x;
    if (i < out.size()) out[i] = in[i] * in[i];
  }
};

/// sums[g] = sum of (x[i] + offset) over the 256 elements of block g (a tree in local memory).
struct block_sum {
  KI_DEVICE void operator()(ki::span<i64> sums, ki::span<const i64> x, i64 offset) const {
    auto tile = ki::localmemory<i64, 256>([] {});
    const i64 l = ki::get_local_id().x, i = ki::get_global_id().x;
    tile[l] = i < x.size() ? x[i] + offset : 0;
    for (i64 s = 128; s > 0; s /= 2) {
      ki::barrier();
      if (l < s) tile[l] += tile[l + s];
    }
    if (l == 0) sums[ki::get_group_id().x] = tile[0];
  }
};

template <ki::backend B>
bool run(const B& b) {
  if (ki::ndevices(b) < 2) return ki_example::skipped("two_devices", "needs two devices");
  const i64 n = 256 * 40, offset = 3;
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = i % 1000 - 500;

  ki::set_device(b, 0);  // stage 1 on device 0
  auto in = ki::to_device(b, h);
  auto squares = ki::allocate<i64>(b, n);
  ki::launch(b, {.ndrange = n, .workgroupsize = 256}, square{}, squares, std::as_const(in));
  const auto produced = ki::record_event(b);  // captures the copy and the launch above

  ki::set_device(b, 1);  // stage 2 on device 1: its own memory, its own queue
  ki::wait_event(b, produced);
  auto mine = ki::allocate<i64>(b, n);
  ki::copyto(b, mine, squares);  // device 0's memory into device 1's, after stage 1
  auto sums = ki::allocate<i64>(b, n / 256);
  ki::launch(b, {.ndrange = n, .workgroupsize = 256}, block_sum{}, sums, std::as_const(mine), offset);
  const auto result = ki::to_host(b, sums);  // synchronizes device 1's queue

  ki::set_device(b, 0);
  ki::synchronize(b);  // device 0's queue (done already: device 1 waited for it)

  bool ok = true;
  i64 total = 0;
  for (i64 g = 0; g < n / 256; ++g) {
    i64 expect = 0;
    for (i64 i = g * 256; i < (g + 1) * 256; ++i)
      expect += h[static_cast<std::size_t>(i)] * h[static_cast<std::size_t>(i)] + offset;
    ok = ok && result[static_cast<std::size_t>(g)] == expect;
    total += result[static_cast<std::size_t>(g)];
  }
  return ki_example::report(
      "two_devices", ok, "device 0 squares, device 1 sums blocks after wait_event; total = " + std::to_string(total));
}

int main() {
  auto profile = ki::reference::profile::from_environment();
  profile.devices = 2;
  return ki_example::main([&](const auto&) { return run(ki::reference::backend{.device = profile}); });
}
