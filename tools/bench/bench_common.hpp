// What the Google Benchmark programs under tools/bench (ki_bench_reference, ki_bench_sub_group)
// share: one work-group of 256 work-items, the timed loop that sets a nanoseconds-per-unit
// counter, the work-group barrier kernel of BM_ki_barrier, the first launch that checks a
// result before anything is timed, the reporter that collects the counters for the summary
// after the usual table, and main().
#pragma once
#include <benchmark/benchmark.h>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

namespace ki_bench {

using i64 = std::int64_t;
using ref_backend = ki::reference::backend;

/// Runs f(begin, end) over [0, n) split into `threads` contiguous parts (the first on this thread).
template <class F>
void split(int threads, i64 n, F f) {
  if (threads <= 1) {
    f(i64{0}, n);
    return;
  }
  std::vector<std::thread> ts;
  for (int t = 1; t < threads; ++t) ts.emplace_back(f, n * t / threads, n * (t + 1) / threads);
  f(i64{0}, n / threads);
  for (auto& t : ts) t.join();
}

/// Work-items per work-group.
inline constexpr i64 group_size = 256;
/// Operations (barriers, sub-group functions) each work-item runs in the loop of a kernel.
inline constexpr int ops_per_item = 1000;

/// The benchmark loop, also timing body() with steady_clock to set counter = nanoseconds per
/// unit, `units` units per iteration. (An inverted rate counter would print as seconds.)
template <class F>
void timed_loop(benchmark::State& state, const char* counter, double units, F body) {
  double ns = 0;
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    body();
    ns += std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - t0).count();
  }
  state.counters[counter] = ns / (static_cast<double>(state.iterations()) * units);
}

/// Vector add, one element per work-item (the barrier-free benchmarks).
struct vadd {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b) const {
    const auto i = ki::get_global_id().x;
    if (i < c.size()) c[i] = a[i] + b[i];
  }
};

/// partial_sums! of the Metal document, 0-based; launched with 256 work-items per group.
struct partial_sums {
  KI_DEVICE void operator()(ki::span<float> out, ki::span<const float> x) const {
    const auto tid = ki::get_local_id().x;
    const auto i = ki::get_global_id().x;
    auto shared = ki::localmemory<float, 256>([] {});
    shared[tid] = i < x.size() ? x[i] : 0.0f;
    ki::barrier();
    for (auto step = ki::get_local_size().x / 2; step > 0; step /= 2) {
      if (tid < step) shared[tid] += shared[tid + step];
      ki::barrier();
    }
    if (tid == 0) out[ki::get_group_id().x] = shared[0];
  }
};

/// BM_ki_barrier's kernel: `iters` work-group barriers; out[global id] = the number passed.
struct barrier_loop {
  KI_DEVICE void operator()(ki::span<int> out, int iters) const {
    int k = 0;
    for (int i = 0; i < iters; ++i) {
      ki::barrier();
      ++k;
    }
    out[ki::get_global_id().x] = k;
  }
};

/// The untimed first run: launch(), then check(), which returns what is wrong with the result
/// ("" if nothing). If something is, or either throws, skips the benchmark with that message
/// (an error instead of a number) and returns false.
template <class Launch, class Check>
bool first_run_ok(benchmark::State& state, Launch& launch, Check check) {
  try {
    launch();
    if (const std::string wrong = check(); !wrong.empty()) {
      state.SkipWithError(wrong.c_str());
      return false;
    }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return false;
  }
  return true;
}

/// The console table, then a summary: the reporter collects every counter of every run, and a
/// program's summary() prints their medians over the repetitions and the ratios it wants.
class summary_reporter_base : public benchmark::ConsoleReporter {
 public:
  using benchmark::ConsoleReporter::ConsoleReporter;

  void ReportRuns(const std::vector<Run>& runs) override {
    benchmark::ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      if (r.run_type != Run::RT_Iteration || r.error_occurred) continue;
      std::string key = r.run_name.function_name;
      if (!r.run_name.args.empty()) key += "/" + r.run_name.args;
      for (const auto& [name, c] : r.counters) samples_[key][name].push_back(c.value);
    }
  }

  void Finalize() override {
    benchmark::ConsoleReporter::Finalize();
    GetOutputStream() << "\nSummary (medians over repetitions; ratios of medians)\n";
    summary(GetOutputStream());
  }

 protected:
  /// The summary's lines after its heading, printed to os (the output stream).
  virtual void summary(std::ostream& os) = 0;

  /// printf to the output stream (at most 255 characters).
  template <class... A>
  void print(const char* fmt, A... v) {
    char line[256];
    std::snprintf(line, sizeof line, fmt, v...);
    GetOutputStream() << line;
  }

  /// The median of `counter` over the repetitions of benchmark `key` ("name" or "name/args");
  /// nullopt if it did not run (filtered out, failed).
  std::optional<double> median(const std::string& key, const std::string& counter) const {
    const auto k = samples_.find(key);
    if (k == samples_.end()) return std::nullopt;
    const auto c = k->second.find(counter);
    if (c == k->second.end() || c->second.empty()) return std::nullopt;
    std::vector<double> v = c->second;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  }

 private:
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
};

/// main(): the usual flags, then every benchmark reported by a Reporter (a summary_reporter_base),
/// as a table with colours on a terminal and without them otherwise.
template <class Reporter>
int run_benchmarks(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  Reporter reporter(::isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Defaults
                                            : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}

}  // namespace ki_bench
