// Workloads of ki_bench_simd_cpu written the way a user writes them (KA kernels, the default
// checked mode), each against the same algorithm as plain OpenMP loops in this binary:
//
//   stream_{copy,mul,add,triad,dot}  the STREAM kernels as BabelStream defines them: doubles,
//               2^25 elements per array, scalar 0.4, a = 0.1, b = 0.2, c = 0.0 at the start;
//               copy c = a, mul b = scalar c, add c = a + b, triad a = b + scalar c (foreach_index),
//               dot sum(a b) (a KA kernel: a grid-stride loop into @private, @groupreduce, one
//               partial sum per work-group, the partial sums added on the host); bytes counted as
//               BabelStream counts them (2 arrays for copy, mul and dot, 3 for add and triad)
//   hotspot     Rodinia's chip-temperature stencil (examples/ka_hotspot.hpp): 1024 x 1024
//               floats, a 16 x 16 local tile with its halo per work-group, 10 steps per
//               iteration; baseline: the same step as an OpenMP loop over rows; _unchecked: the
//               kernel's phases written g.items(ki::ka::unchecked, f)
//
// Each checks its result once before it is timed. The summary (simd_cpu_bench.cpp) prints each
// KA rate over its OpenMP one.
#include "simd_cpu_common.hpp"

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <ki/ka.hpp>

#include "ka_hotspot.hpp"

namespace {

using namespace ki_bench;

// --- STREAM ----------------------------------------------------------------------------------

constexpr i64 stream_n = i64{1} << 25;
constexpr double scalar = 0.4;

struct stream_copy {
  ki::span<double> c;
  ki::span<const double> a;
  void operator()(i64 i) const { c[i] = a[i]; }
};
struct stream_mul {
  ki::span<double> b;
  ki::span<const double> c;
  void operator()(i64 i) const { b[i] = scalar * c[i]; }
};
struct stream_add {
  ki::span<double> c;
  ki::span<const double> a, b;
  void operator()(i64 i) const { c[i] = a[i] + b[i]; }
};
struct stream_triad {
  ki::span<double> a;
  ki::span<const double> b, c;
  void operator()(i64 i) const { a[i] = b[i] + scalar * c[i]; }
};
/// dot: partial[group] = the group's sum of a[k] b[k] over a grid-stride loop (g.grid_stride:
/// simd_cpu runs its strides outermost, so that consecutive work-items read consecutive
/// elements; the same loop written inside one phase reads each work-item's elements 2^16 apart,
/// 5x slower here).
struct stream_dot {
  template <class G>
  void operator()(G& g, ki::span<double> partial, ki::span<const double> a, ki::span<const double> b, i64 n) const {
    auto acc = g.template private_<double>();
    g.items([&](auto i) { acc(i) = 0.0; });
    g.grid_stride(n, [&](auto i, i64 k) { acc(i) += a[k] * b[k]; });
    const double s = g.reduce(std::plus<>(), 0.0, [&](auto i) { return acc(i); });
    g.items(1, [&](auto) { partial[g.group_linear()] = s; });
  }
};
constexpr i64 dot_groups = 256, dot_items = 256;

/// The three arrays, on simd_cpu (device arrays, host memory) and as plain vectors for OpenMP,
/// set to BabelStream's start values.
struct stream_data {
  ki::array<double, simd_backend> a, b, c, partial;
  std::vector<double> pa, pb, pc;
  void reset() {
    const simd_backend be{};
    ki::copyto(be, a, std::vector<double>(stream_n, 0.1));
    ki::copyto(be, b, std::vector<double>(stream_n, 0.2));
    ki::copyto(be, c, std::vector<double>(stream_n, 0.0));
    pa.assign(stream_n, 0.1);
    pb.assign(stream_n, 0.2);
    pc.assign(stream_n, 0.0);
  }
};
stream_data& stream() {
  static stream_data d = [] {
    stream_data s;
    const simd_backend be{};
    s.a = ki::allocate<double>(be, stream_n);
    s.b = ki::allocate<double>(be, stream_n);
    s.c = ki::allocate<double>(be, stream_n);
    s.partial = ki::zeros<double>(be, dot_groups);
    s.reset();
    return s;
  }();
  return d;
}

enum kernel_id : i64 { copy_k, mul_k, add_k, triad_k, dot_k };
const char* const kernel_names[] = {"copy", "mul", "add", "triad", "dot"};
i64 arrays_moved(i64 k) { return k == add_k || k == triad_k ? 3 : 2; }

/// What one run of kernel k leaves, from the start values: the value every element of the
/// array it writes holds (and, for dot, the sum), computed as the kernels compute them.
double expected(i64 k) {
  switch (k) {
    case copy_k: return 0.1;                  // c = a
    case mul_k: return scalar * 0.0;          // b = scalar c (c = 0 at the start)
    case add_k: return 0.1 + 0.2;             // c = a + b
    case triad_k: return 0.2 + scalar * 0.0;  // a = b + scalar c
    default: return 0.1 * 0.2 * static_cast<double>(stream_n);
  }
}

/// range(0): the kernel; range(1): threads. KA on simd_cpu.
void BM_ka_stream(benchmark::State& state) {
  auto& d = stream();
  d.reset();
  const i64 k = state.range(0);
  const auto be = make_backend<simd_backend>(state.range(1));
  const auto span = [&](auto& arr) { return ki::argconvert(be, arr); };
  const auto cspan = [&](const auto& arr) { return ki::argconvert(be, arr); };
  double sum = 0;
  const ki::ka::kernel dot(be, stream_dot{}, ki::ka::groupsize<dot_items>, dot_groups * dot_items);
  const auto launch = [&] {
    switch (k) {
      case copy_k: ki::ka::foreach_index(be, stream_n, stream_copy{span(d.c), cspan(std::as_const(d.a))}); break;
      case mul_k: ki::ka::foreach_index(be, stream_n, stream_mul{span(d.b), cspan(std::as_const(d.c))}); break;
      case add_k:
        ki::ka::foreach_index(be, stream_n,
                              stream_add{span(d.c), cspan(std::as_const(d.a)), cspan(std::as_const(d.b))});
        break;
      case triad_k:
        ki::ka::foreach_index(be, stream_n,
                              stream_triad{span(d.a), cspan(std::as_const(d.b)), cspan(std::as_const(d.c))});
        break;
      default: {
        dot(d.partial, std::as_const(d.a), std::as_const(d.b), stream_n);
        sum = 0;
        for (const double p : ki::to_host(be, d.partial)) sum += p;
      }
    }
    ki::synchronize(be);
  };
  const auto check = [&]() -> std::string {
    const double want = expected(k);
    if (k == dot_k) return std::abs(sum - want) <= 1e-6 * want ? "" : "dot = " + std::to_string(sum);
    const double* out = (k == copy_k || k == add_k) ? d.c.data() : k == mul_k ? d.b.data() : d.a.data();
    for (i64 i = 0; i < stream_n; ++i)
      if (out[i] != want) return std::string(kernel_names[k]) + ": element " + std::to_string(i) + " is wrong";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * stream_n * arrays_moved(k) * static_cast<i64>(sizeof(double)));
}

/// The same kernels as OpenMP loops (static schedule, as BabelStream's OpenMP version).
void BM_omp_stream(benchmark::State& state) {
  auto& d = stream();
  d.reset();
  const i64 k = state.range(0);
  const int t = plain_threads(state, 1);
  double* a = d.pa.data();
  double* b = d.pb.data();
  double* c = d.pc.data();
  double sum = 0;
  const auto run = [&] {
    switch (k) {
      case copy_k:
#pragma omp parallel for schedule(static) num_threads(t)
        for (i64 i = 0; i < stream_n; ++i) c[i] = a[i];
        break;
      case mul_k:
#pragma omp parallel for schedule(static) num_threads(t)
        for (i64 i = 0; i < stream_n; ++i) b[i] = scalar * c[i];
        break;
      case add_k:
#pragma omp parallel for schedule(static) num_threads(t)
        for (i64 i = 0; i < stream_n; ++i) c[i] = a[i] + b[i];
        break;
      case triad_k:
#pragma omp parallel for schedule(static) num_threads(t)
        for (i64 i = 0; i < stream_n; ++i) a[i] = b[i] + scalar * c[i];
        break;
      default: {
        double s = 0;
#pragma omp parallel for schedule(static) num_threads(t) reduction(+ : s)
        for (i64 i = 0; i < stream_n; ++i) s += a[i] * b[i];
        sum = s;
      }
    }
    benchmark::ClobberMemory();
  };
  run();
  const double want = expected(k);
  const double* out = (k == copy_k || k == add_k) ? c : k == mul_k ? b : a;
  if (k == dot_k ? std::abs(sum - want) > 1e-6 * want : out[stream_n - 1] != want) {
    state.SkipWithError("the OpenMP baseline computed a wrong result");
    return;
  }
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * stream_n * arrays_moved(k) * static_cast<i64>(sizeof(double)));
}

// --- hotspot ---------------------------------------------------------------------------------

constexpr i64 hot_n = 1024, hot_steps = 10;

struct hotspot_data {
  std::vector<float> temp, power, want;
  hotspot_data() {
    ki_hotspot::initial(temp, power, hot_n, hot_n);
    std::vector<float> next(temp.size());
    want = temp;
    const auto p = ki_hotspot::default_params();
    for (i64 s = 0; s < hot_steps; ++s) {
      ki_hotspot::step_rows(next.data(), want.data(), power.data(), hot_n, hot_n, p, 0, hot_n);
      std::swap(want, next);
    }
  }
  /// "" if got holds hot_steps steps from temp (as the host computes them, to a rounding).
  std::string wrong(const float* got) const {
    for (std::size_t k = 0; k < want.size(); ++k)
      if (std::abs(got[k] - want[k]) > 1e-3f) return "hotspot: cell " + std::to_string(k) + " is wrong";
    return "";
  }
};
const hotspot_data& hotspot() {
  static const hotspot_data d;
  return d;
}

template <bool Unchecked = false>
void BM_ka_hotspot(benchmark::State& state) {
  const auto& h = hotspot();
  const auto be = make_backend<simd_backend>(state.range(0));
  auto a = ki::to_device(be, h.temp), b = ki::zeros<float>(be, hot_n * hot_n);
  const auto pw = ki::to_device(be, h.power);
  const auto p = ki_hotspot::default_params();
  const ki::ka::kernel k(be, ki_hotspot::basic_step<Unchecked>{}, ki::ka::groupsize<ki_hotspot::tile, ki_hotspot::tile>,
                         ki::ka::ndrange{hot_n, hot_n});
  const auto launch = [&] {
    ki::copyto(be, a, h.temp);
    for (i64 s = 0; s < hot_steps; ++s) {
      k(b, std::as_const(a), pw, hot_n, hot_n, p);
      std::swap(a, b);
    }
    ki::synchronize(be);
  };
  const auto check = [&] { return h.wrong(a.data()); };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(hot_n * hot_n * hot_steps));
}

void BM_omp_hotspot(benchmark::State& state) {
  const auto& h = hotspot();
  const int t = plain_threads(state, 0);
  std::vector<float> a = h.temp, b(a.size());
  const auto p = ki_hotspot::default_params();
  const auto run = [&] {
    std::copy(h.temp.begin(), h.temp.end(), a.begin());
    for (i64 s = 0; s < hot_steps; ++s) {
      float* out = b.data();
      const float* in = a.data();
      const float* pw = h.power.data();
#pragma omp parallel for schedule(static) num_threads(t)
      for (i64 y = 0; y < hot_n; ++y) ki_hotspot::step_rows(out, in, pw, hot_n, hot_n, p, y, y + 1);
      std::swap(a, b);
    }
    benchmark::ClobberMemory();
  };
  run();
  if (const std::string w = h.wrong(a.data()); !w.empty()) {
    state.SkipWithError(w.c_str());
    return;
  }
  for (auto _ : state) run();
  items_rate(state, static_cast<double>(hot_n * hot_n * hot_steps));
}

const bool registered = [] {
  const std::vector<std::vector<i64>> kernels{{copy_k}, {mul_k}, {add_k}, {triad_k}, {dot_k}};
  both("BM_ka_stream", BM_ka_stream, kernels);
  both("BM_omp_stream", BM_omp_stream, kernels);
  both("BM_ka_hotspot", BM_ka_hotspot<>);
  both("BM_ka_hotspot_unchecked", BM_ka_hotspot<true>);
  both("BM_omp_hotspot", BM_omp_hotspot);
  return true;
}();

}  // namespace
