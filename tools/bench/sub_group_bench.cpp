// Benchmarks of the reference backend's sub-group communication functions (ki_bench_sub_group).
//
// Every benchmark launches one work-group of 256 work-items on ki::reference::backend with
// threads = 1 (deterministic, one core), on a profile with the sub-group width W set and the
// linear layout promised (256 / W full sub-groups, item lin in sub-group lin / W, lane lin % W).
// Each work-item runs `ops_per_item` (1000) operations in a loop; the counter is wall-clock
// nanoseconds per work-item per operation.
//
//   BM_ki_barrier              the baseline: 1000 work-group barriers (the same kernel and
//                              numbers as BM_ki_barrier in ki_bench_reference: bench_common.hpp)
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
#include "bench_common.hpp"

#include <optional>
#include <string>
#include <vector>

namespace {

using namespace ki_bench;

constexpr int widths[] = {8, 32, 64};
constexpr const char* op_counter = "ns_per_item_op";  // ns per work-item per operation

/// The emulated device: the cuda preset's defaults with the sub-group width W, linear layout.
ref_backend backend_with_width(i64 w) {
  ki::reference::profile p{};
  p.sub_group_width = w;
  p.linear_subgroups = true;
  p.name = "bench";
  return ref_backend{.device = p, .threads = 1};
}

// --- kernels -------------------------------------------------------------------------------

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
  const auto check = [&]() -> std::string {
    const auto got = ki::to_host(b, out);
    for (i64 i = 0; i < group_size; ++i)
      if (got[static_cast<std::size_t>(i)] != expect[static_cast<std::size_t>(i)])
        return "work-item " + std::to_string(i) + " computed " + std::to_string(got[static_cast<std::size_t>(i)]) +
               ", expected " + std::to_string(expect[static_cast<std::size_t>(i)]);
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  timed_loop(state, op_counter, static_cast<double>(group_size) * ops_per_item, launch);
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
class summary_reporter : public summary_reporter_base {
 public:
  using summary_reporter_base::summary_reporter_base;

 protected:
  void summary(std::ostream& os) override {
    const auto cell = [&](std::optional<double> v, const char* fmt) {
      if (v) print(fmt, *v);
      else print("%10s", "-");
    };
    const auto ratio = [](std::optional<double> a, std::optional<double> b) -> std::optional<double> {
      if (a && b && *b > 0) return *a / *b;
      return std::nullopt;
    };
    const auto bar = median("BM_ki_barrier", op_counter);
    print("  one work-group of %d items, %d operations per item, threads=1; ns per item per operation\n",
          static_cast<int>(group_size), ops_per_item);
    if (bar) print("  barrier (work-group):  %7.2f ns per item per barrier\n", *bar);
    print("  %5s %10s %10s %10s %10s %10s %10s\n", "width", "sg_barrier", "shfl_xor", "reduce", "sgbar/bar", "shfl/bar",
          "reduce/bar");
    for (const int w : widths) {
      std::string a = "/";  // (not "/" + to_string: GCC 12 warns falsely, -Wrestrict)
      a += std::to_string(w);
      const auto sgb = median("BM_ki_sub_group_barrier" + a, op_counter),
                 shf = median("BM_ki_shfl_xor" + a, op_counter), red = median("BM_ki_sub_group_reduce" + a, op_counter);
      print("  %5d ", w);
      cell(sgb, "%10.2f ");
      cell(shf, "%10.2f ");
      cell(red, "%10.2f ");
      cell(ratio(sgb, bar), "%9.2fx ");
      cell(ratio(shf, bar), "%9.2fx ");
      cell(ratio(red, bar), "%9.2fx");
      os << "\n";
    }
  }
};

}  // namespace

int main(int argc, char** argv) { return ki_bench::run_benchmarks<summary_reporter>(argc, argv); }
