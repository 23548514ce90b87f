// Benchmarks of the reference backend's sub-group communication functions (ki_bench_sub_group).
//
// Every benchmark launches one work-group of 256 work-items on ki::reference::backend with
// threads = 1 (deterministic, one core), on a profile with the sub-group width W set and the
// linear layout promised (256 / W full sub-groups, item lin in sub-group lin / W, lane lin % W).
// Each work-item runs `ops_per_item` (1000) operations in a loop; the counter is wall-clock
// nanoseconds per work-item per operation.
//
//   BM_ki_barrier              the baseline: 1000 work-group barriers (the same kernel and
//                              numbers as BM_ki_barrier in ki_bench_reference)
//   BM_ki_sub_group_barrier/W  1000 sub_group_barrier(): the collective machinery, no data
//   BM_ki_shfl_xor/W           1000 shfl_xor(v, mask), the mask cycling through [1, W)
//   BM_ki_sub_group_reduce/W   1000 sub_group_reduce(add, v)
//
// Each sub-group operation suspends its participants (all but the last to arrive) once, as a
// barrier does, so the summary prints each one's cost relative to the barrier's.
//
// Every benchmark checks its result once, outside the timed loop, and reports an error instead
// of a number if the kernel computed something wrong. After the usual table a summary prints the
// medians over the repetitions (--benchmark_repetitions=3) and the ratios.
#include <benchmark/benchmark.h>

#include <ki/ki.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <map>
#include <optional>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using i64 = std::int64_t;
using ref_backend = ki::reference::backend;

constexpr i64 group_size = 256;
constexpr int ops_per_item = 1000;
constexpr int widths[] = {8, 32, 64};

/// The emulated device: the cuda preset's defaults with the sub-group width W, linear layout.
ref_backend backend_with_width(i64 w) {
  ki::reference::profile p{};
  p.sub_group_width = w;
  p.linear_subgroups = true;
  p.name = "bench";
  return ref_backend{.device = p, .threads = 1};
}

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

// --- kernels -------------------------------------------------------------------------------

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

struct sub_group_barrier_loop {
  KI_DEVICE void operator()(ki::span<int> out, int iters) const {
    int k = 0;
    for (int i = 0; i < iters; ++i) {
      ki::sub_group_barrier();
      ++k;
    }
    out[ki::get_global_id().x] = k;
  }
};

/// v starts as the local linear id; after the k-th shfl_xor, lane l holds the value of lane
/// l ^ (m_1 ^ ... ^ m_k) of its own sub-group. out = the sum of the values received.
struct shfl_xor_loop {
  KI_DEVICE void operator()(ki::span<int> out, int iters) const {
    const int w = ki::get_max_sub_group_size<int>();
    int v = static_cast<int>(ki::get_local_id().x), acc = 0;
    for (int i = 0; i < iters; ++i) {
      v = ki::shfl_xor(v, 1 + i % (w - 1));
      acc += v;
    }
    out[ki::get_global_id().x] = acc;
  }
};

struct add {
  KI_DEVICE int operator()(int a, int b) const { return a + b; }
};

/// out = sum over i of the sub-group's sum of (local id + i).
struct reduce_loop {
  KI_DEVICE void operator()(ki::span<int> out, int iters) const {
    const int lin = static_cast<int>(ki::get_local_id().x);
    int acc = 0;
    for (int i = 0; i < iters; ++i) acc += ki::sub_group_reduce(add{}, lin + i);
    out[ki::get_global_id().x] = acc;
  }
};

// --- expected results (host) ---------------------------------------------------------------

std::vector<int> expect_count(i64) { return std::vector<int>(group_size, ops_per_item); }

std::vector<int> expect_shfl_xor(i64 w) {
  std::vector<int> e(group_size);
  for (i64 lin = 0; lin < group_size; ++lin) {
    const i64 base = lin / w * w;
    i64 src = lin % w, acc = 0;
    for (int i = 0; i < ops_per_item; ++i) {
      src ^= 1 + i % (w - 1);
      acc += base + src;
    }
    e[static_cast<std::size_t>(lin)] = static_cast<int>(acc);
  }
  return e;
}

std::vector<int> expect_reduce(i64 w) {
  std::vector<int> e(group_size);
  for (i64 lin = 0; lin < group_size; ++lin) {
    const i64 base = lin / w * w;
    i64 acc = 0;
    for (int i = 0; i < ops_per_item; ++i)
      for (i64 l = 0; l < w; ++l) acc += base + l + i;
    e[static_cast<std::size_t>(lin)] = static_cast<int>(acc);
  }
  return e;
}

/// Launches kernel k once, checks its output against expect(w), then times launches.
template <class K>
void run_bench(benchmark::State& state, const ref_backend& b, K k, const std::vector<int>& expect) {
  auto out = ki::allocate<int>(b, group_size);
  const auto launch = [&] {
    ki::launch(b, {.numgroups = 1, .workgroupsize = group_size}, k, out, ops_per_item);
    ki::synchronize(b);
  };
  try {
    launch();
    const auto got = ki::to_host(b, out);
    for (i64 i = 0; i < group_size; ++i)
      if (got[static_cast<std::size_t>(i)] != expect[static_cast<std::size_t>(i)]) {
        state.SkipWithError(("work-item " + std::to_string(i) + " computed " + std::to_string(got[static_cast<std::size_t>(i)]) +
                             ", expected " + std::to_string(expect[static_cast<std::size_t>(i)]))
                                .c_str());
        return;
      }
  } catch (const std::exception& e) {
    state.SkipWithError(e.what());
    return;
  }
  timed_loop(state, "ns_per_item_op", static_cast<double>(group_size) * ops_per_item, launch);
}

// --- benchmarks ----------------------------------------------------------------------------

void BM_ki_barrier(benchmark::State& state) {
  run_bench(state, ref_backend{.device = ki::reference::profile{}, .threads = 1}, barrier_loop{}, expect_count(0));
}
BENCHMARK(BM_ki_barrier)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ki_sub_group_barrier(benchmark::State& state) {
  const i64 w = state.range(0);
  run_bench(state, backend_with_width(w), sub_group_barrier_loop{}, expect_count(w));
}
void BM_ki_shfl_xor(benchmark::State& state) {
  const i64 w = state.range(0);
  run_bench(state, backend_with_width(w), shfl_xor_loop{}, expect_shfl_xor(w));
}
void BM_ki_sub_group_reduce(benchmark::State& state) {
  const i64 w = state.range(0);
  run_bench(state, backend_with_width(w), reduce_loop{}, expect_reduce(w));
}
void width_args(benchmark::internal::Benchmark* b) {
  for (const int w : widths) b->Arg(w);
  b->Unit(benchmark::kMillisecond)->UseRealTime();
}
BENCHMARK(BM_ki_sub_group_barrier)->Apply(width_args);
BENCHMARK(BM_ki_shfl_xor)->Apply(width_args);
BENCHMARK(BM_ki_sub_group_reduce)->Apply(width_args);

// --- summary -------------------------------------------------------------------------------

/// The console table, then the medians over repetitions and the ratios to the barrier.
class summary_reporter : public benchmark::ConsoleReporter {
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
    auto& os = GetOutputStream();
    char line[256];
    const auto out = [&](const char* fmt, auto... v) {
      std::snprintf(line, sizeof line, fmt, v...);
      os << line;
    };
    const auto cell = [&](std::optional<double> v, const char* fmt) {
      if (v) out(fmt, *v);
      else out("%10s", "-");
    };
    const auto ratio = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
      if (a && b && *b > 0) return *a / *b;
      return std::nullopt;
    };
    os << "\nSummary (medians over repetitions; ratios of medians)\n";
    const auto bar = median("BM_ki_barrier");
    out("  one work-group of %d items, %d operations per item, threads=1; ns per item per operation\n",
        static_cast<int>(group_size), ops_per_item);
    if (bar) out("  barrier (work-group):  %7.2f ns per item per barrier\n", *bar);
    out("  %5s %10s %10s %10s %10s %10s %10s\n", "width", "sg_barrier", "shfl_xor", "reduce", "sgbar/bar", "shfl/bar",
        "reduce/bar");
    for (const int w : widths) {
      std::string a = "/";  // (not "/" + to_string: GCC 12 warns falsely, -Wrestrict)
      a += std::to_string(w);
      const auto sgb = median("BM_ki_sub_group_barrier" + a), shf = median("BM_ki_shfl_xor" + a),
                 red = median("BM_ki_sub_group_reduce" + a);
      out("  %5d ", w);
      cell(sgb, "%10.2f ");
      cell(shf, "%10.2f ");
      cell(red, "%10.2f ");
      cell(ratio(sgb, bar), "%9.2fx ");
      cell(ratio(shf, bar), "%9.2fx ");
      cell(ratio(red, bar), "%9.2fx");
      os << "\n";
    }
  }

 private:
  std::optional<double> median(const std::string& key, const std::string& counter = "ns_per_item_op") const {
    const auto k = samples_.find(key);
    if (k == samples_.end()) return std::nullopt;
    const auto c = k->second.find(counter);
    if (c == k->second.end() || c->second.empty()) return std::nullopt;
    std::vector<double> v = c->second;
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
  }
  std::map<std::string, std::map<std::string, std::vector<double>>> samples_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  summary_reporter reporter(::isatty(STDOUT_FILENO) ? benchmark::ConsoleReporter::OO_Defaults
                                                    : benchmark::ConsoleReporter::OO_Tabular);
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  return 0;
}
