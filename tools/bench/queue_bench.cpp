// The cost of the reference backend's queues: an empty launch followed by synchronize, in each
// queue mode, against the same hand-off done by hand (a condition-variable round trip to
// another thread) measured in the same run. `ki_bench_queue --benchmark_repetitions=3`.
#include <benchmark/benchmark.h>

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {

struct empty_kernel {
  KI_DEVICE void operator()(ki::span<std::int64_t> out) const {
    if (ki::get_global_id().x == 0) out[0] += 1;
  }
};

void BM_launch_synchronize(benchmark::State& state) {
  const auto mode = static_cast<ki::reference::queue_mode>(state.range(0));
  const ki::reference::backend b{.threads = 1, .queue = mode};
  auto out = ki::zeros<std::int64_t>(b, 1);
  const auto k = ki::kernel_function(b, empty_kernel{});
  for (auto _ : state) {
    k({}, out);
    ki::synchronize(b);
  }
  state.SetLabel(mode == ki::reference::queue_mode::async     ? "async"
                 : mode == ki::reference::queue_mode::delayed ? "delayed"
                                                              : "immediate");
}
BENCHMARK(BM_launch_synchronize)->Arg(0)->Arg(1)->Arg(2)->UseRealTime();

/// Baseline: hand one task to a worker thread and wait for it (mutex + condition variable).
void BM_thread_handoff(benchmark::State& state) {
  std::mutex m;
  std::condition_variable cv;
  std::uint64_t posted = 0, done = 0;
  bool stop = false;
  std::thread worker([&] {
    std::unique_lock l(m);
    for (;;) {
      cv.wait(l, [&] { return stop || done < posted; });
      if (done < posted) {
        ++done;
        cv.notify_all();
      } else {
        return;
      }
    }
  });
  for (auto _ : state) {
    std::unique_lock l(m);
    ++posted;
    cv.notify_all();
    cv.wait(l, [&] { return done == posted; });
  }
  {
    std::lock_guard l(m);
    stop = true;
    cv.notify_all();
  }
  worker.join();
}
BENCHMARK(BM_thread_handoff)->UseRealTime();

}  // namespace

BENCHMARK_MAIN();
