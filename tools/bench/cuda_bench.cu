// ki_bench_cuda: the CUDA backend against raw CUDA measured in the same run (issue 7's targets).
//
//   BM_copy_d2d        cudaMemcpyAsync device to device of n floats: the bandwidth baseline
//   BM_ki_vector_add   c[i] = a[i] + b[i] through ki::launch          target: >= 0.9x copy GB/s
//   BM_raw_reduce      warp sums with __shfl_xor_sync, one atomicAdd per warp (raw CUDA)
//   BM_ki_reduce       the same with ki::sub_group_reduce + ki::atomic_fetch_add
//                                                                     target: >= 0.8x raw GB/s
//   BM_raw_launch      an empty kernel by <<<>>> on a stream, then cudaStreamSynchronize
//   BM_ki_launch       the same kernel by ki::launch, then ki::synchronize
//                                                                     target: <= 1.1x raw time
// Device times come from CUDA events (UseManualTime); launch overhead is host wall time per
// launch (batches of 100 launches, then one synchronize). Without a GPU every benchmark is
// skipped with the reason. Run: ki_bench_cuda --benchmark_repetitions=5
#include "bench_common.hpp"

#include <ki/cuda.hpp>

#include <cuda_runtime.h>

#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

using ki_bench::i64;
using B = ki::cuda::backend;

constexpr i64 n_elements = i64{1} << 26;  // 256 MiB per float array
constexpr int launches_per_batch = 100;

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}

bool no_device(benchmark::State& state) {
  std::string why;
  if (ki::cuda::available(&why)) return false;
  state.SkipWithError(("skipped: no device (" + why + ")").c_str());
  return true;
}

/// Times body() on stream s with CUDA events, as the iteration's manual time.
template <class F>
void event_loop(benchmark::State& state, cudaStream_t s, F body) {
  cudaEvent_t t0, t1;
  check(cudaEventCreate(&t0), "cudaEventCreate");
  check(cudaEventCreate(&t1), "cudaEventCreate");
  for (auto _ : state) {
    check(cudaEventRecord(t0, s), "cudaEventRecord");
    body();
    check(cudaEventRecord(t1, s), "cudaEventRecord");
    check(cudaEventSynchronize(t1), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, t0, t1), "cudaEventElapsedTime");
    state.SetIterationTime(ms / 1000.0);
  }
  cudaEventDestroy(t0);
  cudaEventDestroy(t1);
}

/// The stream ki::launch uses on this thread (its queue on the active device).
cudaStream_t ki_stream() { return ki::cuda::detail::queues().stream(); }

struct vector_add {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b) const {
    const i64 i = ki::get_global_id().x;
    if (i < c.size()) c[i] = a[i] + b[i];
  }
};

void BM_copy_d2d(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto src = ki::ones<float>(b, n_elements);
  auto dst = ki::zeros<float>(b, n_elements);
  ki::synchronize(b);
  const auto s = ki_stream();
  const std::size_t bytes = sizeof(float) * static_cast<std::size_t>(n_elements);
  event_loop(state, s,
             [&] { check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, s), "copy"); });
  state.SetBytesProcessed(static_cast<i64>(state.iterations()) * 2 * static_cast<i64>(bytes));  // read + write
}

void BM_ki_vector_add(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto a = ki::ones<float>(b, n_elements);
  auto x = ki::ones<float>(b, n_elements);
  auto c = ki::zeros<float>(b, n_elements);
  auto k = ki::kernel_function(b, vector_add{});
  auto launch = [&] { k({.ndrange = n_elements, .workgroupsize = 256}, c, a, x); };
  if (!ki_bench::first_run_ok(state, launch, [&] {
        const auto h = ki::to_host(b, c);
        for (float v : h)
          if (v != 2.0f) return std::string("vector add: wrong result");
        return std::string();
      }))
    return;
  event_loop(state, ki_stream(), launch);
  state.SetBytesProcessed(static_cast<i64>(state.iterations()) * 3 * n_elements * static_cast<i64>(sizeof(float)));
}

// --- sub-group reduction -------------------------------------------------------------------

__global__ void raw_reduce(const float* x, float* sum, i64 n) {
  const i64 i = blockIdx.x * i64(blockDim.x) + threadIdx.x;
  float v = i < n ? x[i] : 0.0f;
  for (int d = 16; d > 0; d /= 2) v += __shfl_xor_sync(0xFFFFFFFFu, v, d);
  if ((threadIdx.x & 31) == 0) atomicAdd(sum, v);
}

struct ki_reduce {
  KI_DEVICE void operator()(ki::span<const float> x, ki::span<float> sum) const {
    const i64 i = ki::get_global_id().x;
    const float v = ki::sub_group_reduce(std::plus<>{}, i < x.size() ? x[i] : 0.0f);
    if (ki::get_sub_group_local_id() == 0) ki::atomic_fetch_add(&sum[0], v);
  }
};

void BM_raw_reduce(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto x = ki::ones<float>(b, n_elements);
  auto sum = ki::zeros<float>(b, 1);
  ki::synchronize(b);
  const auto s = ki_stream();
  event_loop(state, s, [&] {
    raw_reduce<<<static_cast<unsigned>(n_elements / 256), 256, 0, s>>>(x.data(), sum.data(), n_elements);
  });
  check(cudaGetLastError(), "raw_reduce");
  state.SetBytesProcessed(static_cast<i64>(state.iterations()) * n_elements * static_cast<i64>(sizeof(float)));
}

void BM_ki_reduce(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto x = ki::ones<float>(b, n_elements);
  auto sum = ki::zeros<float>(b, 1);
  auto k = ki::kernel_function(b, ki_reduce{});
  auto launch = [&] { k({.ndrange = n_elements, .workgroupsize = 256}, x, sum); };
  if (!ki_bench::first_run_ok(state, launch, [&] {
        const float got = ki::to_host(b, sum)[0];
        return got == static_cast<float>(n_elements) ? std::string() : "reduce: sum " + std::to_string(got);
      }))
    return;
  event_loop(state, ki_stream(), launch);
  state.SetBytesProcessed(static_cast<i64>(state.iterations()) * n_elements * static_cast<i64>(sizeof(float)));
}

// --- launch overhead -----------------------------------------------------------------------

struct empty_kernel {
  KI_DEVICE void operator()(ki::span<int> out) const {
    if (ki::get_global_id().x == i64{1} << 40) out[0] = 1;  // never: keeps the argument alive
  }
};

void BM_raw_launch(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto out = ki::zeros<int>(b, 1);
  const auto s = ki_stream();
  const ki::span<int> arg(out.data(), 1);
  ki_bench::timed_loop(state, "ns_per_launch", launches_per_batch, [&] {
    for (int i = 0; i < launches_per_batch; ++i)
      ki::cuda::detail::entry<empty_kernel, ki::span<int>>
          <<<1, 32, 0, s>>>(0, 0, empty_kernel{}, arg);  // (the entry takes the ki::rand launch seed and the
                                                         // dynamic local memory's size first)
    check(cudaStreamSynchronize(s), "cudaStreamSynchronize");
  });
}

void BM_ki_launch(benchmark::State& state) {
  if (no_device(state)) return;
  const B b;
  auto out = ki::zeros<int>(b, 1);
  auto k = ki::kernel_function(b, empty_kernel{});
  ki_bench::timed_loop(state, "ns_per_launch", launches_per_batch, [&] {
    for (int i = 0; i < launches_per_batch; ++i) k({.numgroups = 1, .workgroupsize = 32}, out);
    ki::synchronize(b);
  });
}

BENCHMARK(BM_copy_d2d)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ki_vector_add)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_reduce)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_ki_reduce)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_raw_launch)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_ki_launch)->Unit(benchmark::kMicrosecond);

class reporter : public ki_bench::summary_reporter_base {
 public:
  using summary_reporter_base::summary_reporter_base;

 protected:
  void summary(std::ostream&) override {
    const auto bw = [&](const char* k) { return median(k, "bytes_per_second"); };
    const auto copy = bw("BM_copy_d2d"), vadd = bw("BM_ki_vector_add");
    const auto raw_r = bw("BM_raw_reduce"), ki_r = bw("BM_ki_reduce");
    const auto raw_l = median("BM_raw_launch", "ns_per_launch"), ki_l = median("BM_ki_launch", "ns_per_launch");
    if (copy && vadd)
      print("  vector add / d2d copy bandwidth  %6.3f  (%.1f / %.1f GB/s; target >= 0.9)\n", *vadd / *copy, *vadd / 1e9,
            *copy / 1e9);
    if (raw_r && ki_r)
      print("  ki / raw sub-group reduction     %6.3f  (%.1f / %.1f GB/s; target >= 0.8)\n", *ki_r / *raw_r,
            *ki_r / 1e9, *raw_r / 1e9);
    if (raw_l && ki_l)
      print("  ki / raw launch time             %6.3f  (%.0f / %.0f ns per launch; target <= 1.1)\n", *ki_l / *raw_l,
            *ki_l, *raw_l);
    if (!copy && !raw_r && !raw_l) print("  nothing ran (no device?)\n");
  }
};

}  // namespace

int main(int argc, char** argv) { return ki_bench::run_benchmarks<reporter>(argc, argv); }
