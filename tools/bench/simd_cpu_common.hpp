// What the two sources of ki_bench_simd_cpu share (simd_cpu_bench.cpp: the kernels of the spec's
// examples; simd_cpu_workloads.cpp: STREAM and the real workloads against OpenMP): each
// benchmark registered twice (one thread, all cores), the backend value for a thread count, the
// plain baselines' split over threads.
#pragma once
#include "bench_common.hpp"

#include <ki/simd_cpu.hpp>

#include <algorithm>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

namespace ki_bench {

using simd_backend = ki::simd_cpu::backend;

inline int all_cores() { return std::max(1, static_cast<int>(std::thread::hardware_concurrency())); }

/// range(last): threads; 0 means all cores (for a ki backend: its default).
inline int plain_threads(const benchmark::State& state, int arg) {
  const auto t = static_cast<int>(state.range(arg));
  return t == 0 ? all_cores() : t;
}

/// Registers fn as `name` twice per argument list: on one thread (last argument 1), timed by
/// that thread's CPU time, which is what the summary's ratios use (robust when other processes
/// share the machine), and on all cores (last argument 0), timed by the wall clock.
template <class F>
void both(const char* name, F fn, std::vector<std::vector<i64>> arg_lists = {{}}) {
  for (auto args : arg_lists) {
    auto one = args, all = args;
    one.push_back(1);
    all.push_back(0);
    benchmark::RegisterBenchmark(name, fn)->Args(one)->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(name, fn)->Args(all)->Unit(benchmark::kMillisecond)->UseRealTime();
  }
}

/// The backend value for `threads` host threads (0: its default). The reference backend runs
/// launches on the calling thread (its immediate queue mode), so that its one-thread runs can be
/// timed by this thread's CPU time like the others.
template <class B>
B make_backend(i64 threads) {
  B b{};
  b.threads = static_cast<int>(threads);
  if constexpr (std::is_same_v<B, ref_backend>) b.queue = ki::reference::queue_mode::immediate;
  return b;
}

/// Sets the counter `items_per_second` (per CPU or wall second, see both()).
inline void items_rate(benchmark::State& state, double items_per_iteration) {
  state.counters["items_per_second"] =
      benchmark::Counter(items_per_iteration * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}

/// Runs `launch` once and checks it (`check()`: "" or what is wrong, which skips the benchmark
/// with that message; an exception too), then times it; items_per_second counts `items` per run.
template <class Launch, class Check>
void checked_then_timed(benchmark::State& state, Launch launch, Check check, double items) {
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, items);
}

}  // namespace ki_bench
