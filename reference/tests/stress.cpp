// Many host threads launching and copying on the same backend and devices at once: nothing is
// lost and nothing deadlocks. Bounded: a fixed number of rounds; CTest's timeout catches a hang.
// tools/test also runs it in a ThreadSanitizer build (KI_SANITIZE=thread). Each launch runs its
// work-groups on its queue's worker (threads = 1): Debian's oneTBB is not instrumented, so TSan
// cannot see its synchronisation and would report its work-stealing as races. What is stressed
// here is the host side: threads, queues, events, frees and the fiber stacks of many workers.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {

using i64 = std::int64_t;

struct add_with_barrier {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in, i64 v) const {
    auto tile = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, i = ki::get_global_id().x;
    tile[l] = i < in.size() ? in[i] : 0;
    ki::barrier();
    if (i < out.size()) out[i] = tile[63 - l] + v;  // reversed within the group
  }
};

TEST_CASE("many host threads launch, copy and wait for events on two devices at once", "[stress]") {
  auto profile = ki::reference::profile::preset("cuda");
  profile.devices = 2;
  const int nthreads = 6, rounds = 100;
  const i64 n = 64 * 5;
  std::vector<std::string> failures(nthreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < nthreads; ++t)
    threads.emplace_back([&, t] {
      // Half the threads use async queues, half delayed ones; both must give the same answers.
      const ki::reference::backend b{
          .device = profile,
          .threads = 1,
          .queue = t % 2 ? ki::reference::queue_mode::delayed : ki::reference::queue_mode::async};
      std::vector<i64> h(static_cast<std::size_t>(n)), back(static_cast<std::size_t>(n));
      for (int r = 0; r < rounds; ++r) {
        for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = i * (t + 1) + r;
        ki::set_device(b, (t + r) % 2);
        auto a = ki::allocate<i64>(b, n);
        auto c = ki::allocate<i64>(b, n);
        ki::copyto(b, a, h);
        ki::launch(b, {.ndrange = n, .workgroupsize = 64}, add_with_barrier{}, c, std::as_const(a), i64{r});
        const auto e = ki::record_event(b);
        const int first = ki::device(b);
        ki::set_device(b, 1 - first);
        ki::wait_event(b, e);
        auto d = ki::allocate<i64>(b, n);
        ki::copyto(b, d, c);
        ki::copyto(b, back, d);
        ki::synchronize(b);
        for (i64 i = 0; i < n; ++i) {
          const i64 src = i / 64 * 64 + (63 - i % 64);
          if (back[static_cast<std::size_t>(i)] != src * (t + 1) + r + r &&
              failures[static_cast<std::size_t>(t)].empty())
            failures[static_cast<std::size_t>(t)] =
                "thread " + std::to_string(t) + " round " + std::to_string(r) + " element " + std::to_string(i);
        }
        ki::set_device(b, first);
        ki::synchronize(b);  // a and c are freed on `first` after this
      }
    });
  for (auto& th : threads) th.join();
  for (const auto& f : failures) CHECK(f.empty());
}

}  // namespace
