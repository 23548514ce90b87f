// Benchmarks of the simd_cpu backend, each against a hand-written C++ baseline measured in the
// same run (and the reference backend where that is cheap):
//
//   vadd        c[i] = a[i] + b[i], 2^24 and 2^26 floats, work-group 256: simd_cpu, the
//               reference (2^24) and a plain loop, all on every core (target: simd_cpu >= 0.9x);
//               and two ceilings for running work-items one at a time (2^24): the plain loop
//               not vectorised, and the kernel's body (guard and bounds checks) as a plain loop
//   tree_reduce Metal's partial_sums!: 256 floats of local memory, a barrier after the load and
//               after each halving, one sum per group, 2^24 floats; baseline: a plain loop
//               summing the same chunks of 256
//   sg_reduce   sub_group_reduce(std::plus) of ints and one atomic add per sub-group into a
//               total, 2^22 ints; baseline: chunks of 32 summed, one atomic add per chunk
//   histogram   256 bins in local memory (zeroed, barrier, one local atomic per item, barrier,
//               one global atomic per bin), 2^22 bytes; baseline: a private histogram per thread,
//               merged with one atomic per bin
//   matmul      C = A B, 1024 x 1024 floats, 16 x 16 tiles in local memory (two barriers per
//               tile step); baseline: a blocked i-k-j loop (vectorised by the compiler)
//   barrier     one work-group of 256 items crossing 1000 barriers, one thread: ns per item per
//               barrier (target <= 3); baseline: the same work as 1000 loops over 256 items
//   first_barrier  1024 work-groups of 256 items crossing one barrier each, one thread: ns per
//               item, what a work-item's first sync point costs (its own fiber); no baseline
//
//   ka_tree_reduce  the same tree in the KA layer (ki/ka.hpp): a phase over the first `step`
//               work-items per halving, no fibers; ka_tree_reduce_unchecked (and
//               ka_matmul_unchecked): every phase written g.items(ki::ka::unchecked, ...): no
//               bounds check of spans or local memory on simd_cpu, and the phase's loop run as
//               SIMD lanes (declared free of dependences between work-items)
//   ka_tree_interleaved_{masked,ids}  the tree with interleaved addressing (at stride s, the
//               work-items t % 2s == 0 add t + s): each step a masked phase over all 256
//               work-items, or a phase over ki::ka::local_ids{.stride = 2 s} (a loop over just
//               those)
//   ka_vadd     vector add through ki::ka::foreach_index (2^24 floats); ka_vadd_unchecked: the
//               same with ki::ka::unchecked (no ki::span bounds checks on simd_cpu)
//   ka_histogram  the local-bin histogram as KA phases (zero, count with local atomics, merge);
//               the KA histograms count with local.atomic_fetch_add (ki/ka/local_array.hpp)
//   ka_histogram_strided  PoCL's W4 local-bin histogram (../shared/bench/pocl): 2^24 ints, 1024
//               groups of 256, each work-item counting 64 of them (a grid-stride loop) into local
//               bins with local atomics, then one global atomic per bin; baseline: a private
//               histogram per thread
//   ka_histogram_grid_stride  the same kernel with its loop written as g.grid_stride(n, f), which
//               the CPU runs strides outermost and work-items innermost (memory in order)
//   copy        ki::copyto between a host vector and a device array (2^26 floats, each way) on
//               simd_cpu's threads; baseline: memcpy between the same buffers, one part per thread
//   vadd_host   the vector add on host vectors passed to the kernel as they are (no copies) and
//               (vadd_host_copies) with the copies a GPU program makes: a, b in, c out
//   ka_matmul   the tiled matmul as KA phases on a static 16 x 16 work-group (ki::ka::groupsize):
//               load both tiles, synchronize, then one phase per k (acc(i) += a(k, y) b(x, k), a
//               loop over x the compiler vectorises), synchronize; unchecked, the product of
//               the tiles is one phase whose work-items loop over k, vectorised over x
//
// Every benchmark checks its result once before timing it and reports an error instead of a
// number if it is wrong. Run: ki_bench_simd_cpu --benchmark_repetitions=3 (summary at the end).
#include "simd_cpu_common.hpp"

#include <ki/ka.hpp>
#include <ki/simd_cpu.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

using namespace ki_bench;

// --- kernels -------------------------------------------------------------------------------

struct sg_reduce {
  KI_DEVICE void operator()(ki::span<std::int64_t> total, ki::span<const int> x) const {
    const auto i = ki::get_global_id().x;
    const int s = ki::sub_group_reduce(std::plus<int>(), i < x.size() ? x[i] : 0);
    if (ki::get_sub_group_local_id() == 0) ki::atomic_fetch_add(&total[0], std::int64_t{s});
  }
};

constexpr int bins = 256;
struct histogram_local {
  KI_DEVICE void operator()(ki::span<std::uint32_t> hist, ki::span<const std::uint8_t> x) const {
    const auto tid = ki::get_local_id().x, n = ki::get_local_size().x;
    auto local = ki::localmemory<std::uint32_t, bins>([] {});
    for (auto b = tid; b < bins; b += n) local[b] = 0;
    ki::barrier();
    const auto i = ki::get_global_id().x;
    if (i < x.size()) ki::atomic_fetch_add(&local[x[i]], std::uint32_t{1});
    ki::barrier();
    for (auto b = tid; b < bins; b += n)
      if (local[b] != 0) ki::atomic_fetch_add(&hist[b], local[b]);
  }
};

constexpr i64 tile = 16;
struct matmul_tiled {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b, std::int64_t n) const {
    const auto l = ki::get_local_id(), g = ki::get_global_id();
    const auto row = g.y, col = g.x;
    auto ta = ki::localmemory<float, tile, tile>([] {});
    auto tb = ki::localmemory<float, tile, tile>([] {});
    float acc = 0.0f;
    for (std::int64_t t = 0; t < n / tile; ++t) {
      ta(l.x, l.y) = a[row * n + t * tile + l.x];
      tb(l.x, l.y) = b[(t * tile + l.y) * n + col];
      ki::barrier();
      for (std::int64_t k = 0; k < tile; ++k) acc += ta(k, l.y) * tb(l.x, k);
      ki::barrier();
    }
    c[row * n + col] = acc;
  }
};

// --- data ----------------------------------------------------------------------------------

template <class B>
struct float_arrays {
  float_arrays(const B& be, i64 n) : n(n) {
    std::vector<float> ha(static_cast<std::size_t>(n)), hb(static_cast<std::size_t>(n));
    for (i64 i = 0; i < n; ++i) {
      ha[static_cast<std::size_t>(i)] = static_cast<float>((i * 7) % 1013) * 0.25f;
      hb[static_cast<std::size_t>(i)] = static_cast<float>((i * 13) % 509) - 100.0f;
    }
    a = ki::to_device(be, ha);
    b = ki::to_device(be, hb);
    c = ki::allocate<float>(be, n);
    sums = ki::allocate<float>(be, groups());
  }
  i64 groups() const { return (n + group_size - 1) / group_size; }
  i64 n;
  ki::array<float, B> a, b, c, sums;
};

template <class B>
float_arrays<B>& floats(i64 n) {
  static std::map<i64, std::unique_ptr<float_arrays<B>>> cache;
  auto& p = cache[n];
  if (!p) p = std::make_unique<float_arrays<B>>(B{}, n);
  return *p;
}

std::vector<float> tree_sums(const float* x, i64 n) {
  std::vector<float> out(static_cast<std::size_t>((n + group_size - 1) / group_size));
  float s[group_size];
  for (std::size_t g = 0; g < out.size(); ++g) {
    for (i64 t = 0; t < group_size; ++t) {
      const i64 i = static_cast<i64>(g) * group_size + t;
      s[t] = i < n ? x[i] : 0.0f;
    }
    for (i64 step = group_size / 2; step > 0; step /= 2)
      for (i64 t = 0; t < step; ++t) s[t] += s[t + step];
    out[g] = s[0];
  }
  return out;
}

// --- 1. vector add -------------------------------------------------------------------------

/// range(1): host threads (0: all cores).
/// What is wrong with c = a + b ("" if nothing).
template <class D>
std::string vadd_wrong(const D& d) {
  const float *a = d.a.data(), *bb = d.b.data(), *c = d.c.data();
  for (i64 i = 0; i < d.n; ++i)
    if (c[i] != a[i] + bb[i]) return "c[" + std::to_string(i) + "] != a[i] + b[i]";
  return "";
}

/// What is wrong with the partial sums of the tree reduction ("" if nothing).
template <class D>
std::string tree_wrong(const D& d) {
  const auto expect = tree_sums(d.a.data(), d.n);
  for (std::size_t g = 0; g < expect.size(); ++g)
    if (d.sums.data()[g] != expect[g]) return "partial sum of group " + std::to_string(g) + " is wrong";
  return "";
}

template <class B>
void BM_ki_vadd(benchmark::State& state) {
  auto& d = floats<B>(state.range(0));
  const B b = make_backend<B>(state.range(1));
  const auto launch = [&] {
    ki::launch(b, {.ndrange = d.n, .workgroupsize = group_size}, vadd{}, d.c, d.a, d.b);
    ki::synchronize(b);
  };
  const auto check = [&] { return vadd_wrong(d); };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}

/// foreach_index's body for the vector add.
struct ka_vadd_body {
  ki::span<float> c;
  ki::span<const float> a, b;
  void operator()(i64 i) const { c[i] = a[i] + b[i]; }
};

/// Unchecked: foreach_index(..., ki::ka::unchecked), the span checks off (a vectorised loop).
template <class B, bool Unchecked = false>
void BM_ka_vadd(benchmark::State& state) {
  auto& d = floats<B>(state.range(0));
  const B b = make_backend<B>(state.range(1));
  const ka_vadd_body body{ki::argconvert(b, d.c), ki::argconvert(b, std::as_const(d.a)),
                          ki::argconvert(b, std::as_const(d.b))};
  // The index-space form, on this benchmark's backend value: foreach_index(f, arrays...) runs on
  // the arrays' own backend value (threads = 0: all cores), which made the one-thread row measure
  // all cores by the main thread's CPU time.
  const auto launch = [&] {
    if constexpr (Unchecked) ki::ka::foreach_index(b, ki::range{0, d.n}, body, ki::ka::unchecked);
    else ki::ka::foreach_index(b, ki::range{0, d.n}, body);
    ki::synchronize(b);
  };
  const auto check = [&] { return vadd_wrong(d); };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}

void BM_plain_vadd(benchmark::State& state) {
  auto& d = floats<simd_backend>(state.range(0));
  float* c = d.c.data();
  const float *a = d.a.data(), *b = d.b.data();
  const int threads = plain_threads(state, 1);
  const auto run = [&] {
    split(threads, d.n, [=](i64 lo, i64 hi) {
      for (i64 i = lo; i < hi; ++i) c[i] = a[i] + b[i];
    });
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
  };
  run();
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}

// What any executor that runs a kernel's work-items one at a time can reach at best: the
// plain loop without vectorisation, and the vadd kernel's own body (its `i < c.size()` guard and
// the ki::span bounds checks that CPU backends make) as a plain loop over the same elements,
// with nothing of an executor around it. Neither GCC 12 nor Clang 15 vectorises the latter:
// a bounds check may throw (a loop exit), and even without checks the guard alone keeps GCC 12
// from vectorising (no if-converted stores on baseline x86-64).
#if defined(__clang__)
#define KI_BENCH_NO_VECTORIZE
#define KI_BENCH_NO_VECTORIZE_LOOP _Pragma("clang loop vectorize(disable) interleave(disable)")
#else
#define KI_BENCH_NO_VECTORIZE __attribute__((optimize("no-tree-vectorize")))
#define KI_BENCH_NO_VECTORIZE_LOOP
#endif
KI_BENCH_NO_VECTORIZE void scalar_add(float* c, const float* a, const float* b, i64 lo, i64 hi) {
  KI_BENCH_NO_VECTORIZE_LOOP
  for (i64 i = lo; i < hi; ++i) c[i] = a[i] + b[i];
}

void BM_plain_vadd_scalar(benchmark::State& state) {
  auto& d = floats<simd_backend>(state.range(0));
  float* c = d.c.data();
  const float *a = d.a.data(), *b = d.b.data();
  const int threads = plain_threads(state, 1);
  const auto run = [&] {
    split(threads, d.n, [=](i64 lo, i64 hi) { scalar_add(c, a, b, lo, hi); });
    benchmark::DoNotOptimize(c);
    benchmark::ClobberMemory();
  };
  run();
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}

void BM_plain_vadd_checked(benchmark::State& state) {
  auto& d = floats<simd_backend>(state.range(0));
  const ki::span<float> c(d.c.data(), d.n);
  const ki::span<const float> a(d.a.data(), d.n), b(d.b.data(), d.n);
  const int threads = plain_threads(state, 1);
  const auto run = [&] {
    split(threads, d.n, [=](i64 lo, i64 hi) {
      const ki::span<float> cc = c;  // (locals: in registers, as in an item loop)
      const ki::span<const float> aa = a, bb = b;
      for (i64 i = lo; i < hi; ++i)
        if (i < cc.size()) cc[i] = aa[i] + bb[i];
    });
    benchmark::DoNotOptimize(d.c.data());
    benchmark::ClobberMemory();
  };
  run();
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * 3 * static_cast<i64>(sizeof(float)));
}

// --- 2. tree reduction in local memory -----------------------------------------------------

constexpr i64 reduce_n = i64{1} << 24;

template <class B>
void BM_ki_tree_reduce(benchmark::State& state) {
  auto& d = floats<B>(reduce_n);
  const B b = make_backend<B>(state.range(0));
  const auto launch = [&] {
    ki::launch(b, {.numgroups = d.groups(), .workgroupsize = group_size}, partial_sums{}, d.sums, d.a);
    ki::synchronize(b);
  };
  const auto check = [&] { return tree_wrong(d); };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<i64>(sizeof(float)));
}

/// partial_sums! in the KA layer: the load, each halving and the store are phases.
/// g.items(args...), or with Unchecked g.items(ki::ka::unchecked, args...): the same phase with
/// no bounds check on simd_cpu (the kernels' *_unchecked rows).
template <bool Unchecked, class G, class... A>
KI_ALWAYS_INLINE void phase(G& g, A&&... a) {
  if constexpr (Unchecked) g.items(ki::ka::unchecked, std::forward<A>(a)...);
  else g.items(std::forward<A>(a)...);
}

template <bool Unchecked = false>
struct ka_partial_sums {
  template <class G>
  void operator()(G& g, ki::span<float> out, ki::span<const float> x) const {
    auto shared = g.template localmem<float, 256>([] {});
    phase<Unchecked>(g, [&](auto i) { shared[i.local_linear()] = x[i.global_linear()]; });
    for (i64 step = g.groupsize_linear() / 2; step > 0; step /= 2) {  // a phase over the first `step` items
      g.synchronize();
      phase<Unchecked>(g, step, [&](auto i) {
        const i64 t = i.local_linear();
        shared[t] += shared[t + step];
      });
    }
    g.synchronize();
    g.items(1, [&](auto i) { out[i.group_linear()] = shared[0]; });  // work-item 0
  }
};

/// The tree with interleaved addressing (the first kernel of Harris's "Optimizing Parallel
/// Reduction in CUDA"): at stride s, the work-items t with t % (2 s) == 0 add element t + s.
/// Masked: a phase over every work-item with the mask inside (how a GPU kernel is written); Ids:
/// the same phase as g.items(ki::ka::local_ids{.stride = 2 s}, f), a loop over just those.
template <bool Ids>
struct ka_interleaved_sums {
  template <class G>
  void operator()(G& g, ki::span<float> out, ki::span<const float> x) const {
    auto shared = g.template localmem<float, 256>([] {});
    g.items([&](auto i) { shared[i.local_linear()] = x[i.global_linear()]; });
    for (i64 s = 1; s < g.groupsize_linear(); s *= 2) {
      g.synchronize();
      const auto add = [&](auto i) {
        const i64 t = i.local_linear();
        shared[t] += shared[t + s];
      };
      if constexpr (Ids) {
        g.items(ki::ka::local_ids{.stride = 2 * s}, add);
      } else {
        g.items([&](auto i) {
          if (i.local_linear() % (2 * s) == 0) add(i);
        });
      }
    }
    g.synchronize();
    g.items(1, [&](auto i) { out[i.group_linear()] = shared[0]; });
  }
};

/// Kernel: ka_partial_sums or ka_interleaved_sums (the same sums: the inputs are quarters, whose
/// sums of 256 are exact in float in any order).
template <class B, bool Unchecked = false, class Kernel = ka_partial_sums<Unchecked>>
void BM_ka_tree_reduce(benchmark::State& state) {
  auto& d = floats<B>(reduce_n);
  const B b = make_backend<B>(state.range(0));
  const ki::ka::kernel k(b, Kernel{}, ki::ka::groupsize<group_size>, reduce_n);
  const auto launch = [&] {
    k(d.sums, d.a);
    ki::synchronize(b);
  };
  const auto check = [&] { return tree_wrong(d); };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<i64>(sizeof(float)));
}

void BM_plain_tree_reduce(benchmark::State& state) {
  auto& d = floats<simd_backend>(reduce_n);
  std::vector<float> out(static_cast<std::size_t>(d.groups()));
  const float* x = d.a.data();
  float* o = out.data();
  const i64 n = d.n;
  const auto run = [&] {
    split(plain_threads(state, 0), d.groups(), [=](i64 g0, i64 g1) {
      for (i64 g = g0; g < g1; ++g) {
        float s = 0.0f;
        const i64 end = std::min(n, (g + 1) * group_size);
        for (i64 i = g * group_size; i < end; ++i) s += x[i];
        o[g] = s;
      }
    });
    benchmark::DoNotOptimize(o);
    benchmark::ClobberMemory();
  };
  run();
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * d.n * static_cast<i64>(sizeof(float)));
}

// --- 3. sub-group reduction + one atomic per sub-group -------------------------------------

constexpr i64 sg_n = i64{1} << 22;

template <class B>
struct int_data {
  explicit int_data(const B& be) {
    std::vector<int> h(static_cast<std::size_t>(sg_n));
    for (i64 i = 0; i < sg_n; ++i) h[static_cast<std::size_t>(i)] = static_cast<int>((i * 2654435761u) >> 29);
    for (int v : h) expect += v;
    x = ki::to_device(be, h);
    total = ki::zeros<std::int64_t>(be, 1);
  }
  ki::array<int, B> x;
  ki::array<std::int64_t, B> total;
  std::int64_t expect = 0;
};

template <class B>
void BM_ki_sg_reduce(benchmark::State& state) {
  const B b = make_backend<B>(state.range(0));
  static int_data<B> d(b);
  const auto launch = [&] {
    d.total.data()[0] = 0;
    ki::launch(b, {.ndrange = sg_n, .workgroupsize = group_size}, sg_reduce{}, d.total, std::as_const(d.x));
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    return d.total.data()[0] == d.expect
               ? ""
               : "total " + std::to_string(d.total.data()[0]) + " != " + std::to_string(d.expect);
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(sg_n));
}

void BM_plain_sg_reduce(benchmark::State& state) {
  static int_data<simd_backend> d(simd_backend{});
  const int* x = d.x.data();
  std::atomic<std::int64_t> total{0};
  const auto run = [&] {
    total = 0;
    split(plain_threads(state, 0), sg_n / 32, [&](i64 c0, i64 c1) {
      for (i64 c = c0; c < c1; ++c) {
        int s = 0;
        for (i64 i = c * 32; i < c * 32 + 32; ++i) s += x[i];
        total.fetch_add(s, std::memory_order_relaxed);
      }
    });
  };
  run();
  if (total != d.expect) {
    state.SkipWithError("plain sub-group sums are wrong");
    return;
  }
  for (auto _ : state) run();
  items_rate(state, static_cast<double>(sg_n));
}

// --- 4. histogram with local bins ----------------------------------------------------------

constexpr i64 hist_n = i64{1} << 22;

template <class B>
struct byte_data {
  explicit byte_data(const B& be) : expect(bins, 0) {
    std::vector<std::uint8_t> h(static_cast<std::size_t>(hist_n));
    for (i64 i = 0; i < hist_n; ++i)
      h[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>((i * 2654435761u) >> 13);
    for (auto v : h) ++expect[v];
    x = ki::to_device(be, h);
    hist = ki::zeros<std::uint32_t>(be, bins);
  }
  ki::array<std::uint8_t, B> x;
  ki::array<std::uint32_t, B> hist;
  std::vector<std::uint32_t> expect;
};

template <class B>
void BM_ki_histogram(benchmark::State& state) {
  const B b = make_backend<B>(state.range(0));
  static byte_data<B> d(b);
  const auto launch = [&] {
    std::fill(d.hist.data(), d.hist.data() + bins, 0u);
    ki::launch(b, {.ndrange = hist_n, .workgroupsize = group_size}, histogram_local{}, d.hist, std::as_const(d.x));
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    return std::equal(d.expect.begin(), d.expect.end(), d.hist.data()) ? "" : "wrong histogram";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(hist_n));
}

/// The local-bin histogram in the KA layer: zero the bins, count with local atomics, merge.
struct ka_histogram {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> hist, ki::span<const std::uint8_t> x) const {
    const i64 n = g.groupsize_linear();
    auto local = g.template localmem<std::uint32_t, bins>([] {});
    g.items([&](auto i) {
      for (i64 b = i.local_linear(); b < bins; b += n) local[b] = 0;
    });
    g.synchronize();
    g.items([&](auto i) { local.atomic_fetch_add(x[i.global_linear()], 1u); });
    g.synchronize();
    g.items([&](auto i) {
      for (i64 b = i.local_linear(); b < bins; b += n)
        if (local[b] != 0) ki::atomic_fetch_add(&hist[b], local[b]);
    });
  }
};

template <class B>
void BM_ka_histogram(benchmark::State& state) {
  const B b = make_backend<B>(state.range(0));
  static byte_data<B> d(b);
  const ki::ka::kernel k(b, ka_histogram{}, ki::ka::groupsize<group_size>, hist_n);
  const auto launch = [&] {
    std::fill(d.hist.data(), d.hist.data() + bins, 0u);
    k(d.hist, std::as_const(d.x));
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    return std::equal(d.expect.begin(), d.expect.end(), d.hist.data()) ? "" : "wrong histogram";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(hist_n));
}

/// The baseline of both histograms: a private histogram per thread over its chunk of x, merged
/// with one atomic per bin.
template <class T>
void plain_histogram(benchmark::State& state, const T* x, i64 n, const std::vector<std::uint32_t>& expect) {
  std::vector<std::atomic<std::uint32_t>> hist(bins);
  const auto run = [&] {
    for (auto& h : hist) h = 0;
    split(plain_threads(state, 0), n, [&](i64 lo, i64 hi) {
      std::uint32_t local[bins] = {};
      for (i64 i = lo; i < hi; ++i) ++local[x[i]];
      for (int k = 0; k < bins; ++k)
        if (local[k] != 0) hist[static_cast<std::size_t>(k)].fetch_add(local[k], std::memory_order_relaxed);
    });
  };
  run();
  for (int k = 0; k < bins; ++k)
    if (hist[static_cast<std::size_t>(k)] != expect[static_cast<std::size_t>(k)]) {
      state.SkipWithError("plain histogram is wrong");
      return;
    }
  for (auto _ : state) run();
  items_rate(state, static_cast<double>(n));
}

void BM_plain_histogram(benchmark::State& state) {
  static byte_data<simd_backend> d(simd_backend{});
  plain_histogram(state, d.x.data(), hist_n, d.expect);
}

/// PoCL's W4 shape: 1024 groups of 256, a grid-stride loop of local atomics, 256 global ones.
constexpr i64 strided_n = i64{1} << 24, strided_groups = 1024;

struct int_hist_data {
  int_hist_data() : x(static_cast<std::size_t>(strided_n)), expect(bins, 0) {
    for (i64 i = 0; i < strided_n; ++i)
      x[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(((i * 2654435761u) >> 13) & (bins - 1));
    for (auto v : x) ++expect[static_cast<std::size_t>(v)];
  }
  std::vector<std::int32_t> x;
  std::vector<std::uint32_t> expect;
};
const int_hist_data& int_hist() {
  static const int_hist_data d;
  return d;
}

struct ka_histogram_strided {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> hist, ki::span<const std::int32_t> x, i64 n) const {
    static_assert(G::static_size_linear == bins, "one work-item per bin");
    auto local = g.template localmem<std::uint32_t, bins>([] {});
    g.items([&](auto i) { local[i.local_linear()] = 0; });
    g.synchronize();
    const i64 stride = g.num_groups().x * G::static_size_linear;
    g.items([&](auto i) {
      for (i64 k = i.global_linear(); k < n; k += stride) local.atomic_fetch_add(x[k], 1u);
    });
    g.synchronize();
    g.items([&](auto i) { ki::atomic_fetch_add(&hist[i.local_linear()], local[i.local_linear()]); });
  }
};

/// The same kernel with its grid-stride loop written as g.grid_stride: simd_cpu then runs the
/// strides outermost and the group's work-items innermost (consecutive k, memory in order).
struct ka_histogram_grid_stride {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> hist, ki::span<const std::int32_t> x, i64 n) const {
    static_assert(G::static_size_linear == bins, "one work-item per bin");
    auto local = g.template localmem<std::uint32_t, bins>([] {});
    g.items([&](auto i) { local[i.local_linear()] = 0; });
    g.synchronize();
    g.grid_stride(n, [&](auto, i64 k) { local.atomic_fetch_add(x[k], 1u); });
    g.synchronize();
    g.items([&](auto i) { ki::atomic_fetch_add(&hist[i.local_linear()], local[i.local_linear()]); });
  }
};

template <class K>
void ka_histogram_int(benchmark::State& state, K kernel_body) {
  const simd_backend be{.threads = static_cast<int>(state.range(0))};
  const auto& d = int_hist();
  auto x = ki::to_device(be, d.x);
  auto hist = ki::zeros<std::uint32_t>(be, bins);
  const ki::ka::kernel k(be, kernel_body, ki::ka::groupsize<bins>, strided_groups * bins);
  const auto launch = [&] {
    std::fill(hist.data(), hist.data() + bins, 0u);
    k(hist, ki::ka::Const(x), strided_n);
    ki::synchronize(be);
  };
  const auto check = [&]() -> std::string {
    return std::equal(d.expect.begin(), d.expect.end(), hist.data()) ? "" : "wrong histogram";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(strided_n));
}
void BM_ka_histogram_strided(benchmark::State& state) { ka_histogram_int(state, ka_histogram_strided{}); }
void BM_ka_histogram_grid_stride(benchmark::State& state) { ka_histogram_int(state, ka_histogram_grid_stride{}); }

void BM_plain_histogram_strided(benchmark::State& state) {
  const auto& d = int_hist();
  plain_histogram(state, d.x.data(), strided_n, d.expect);
}

// --- 5. tiled matrix multiply --------------------------------------------------------------

constexpr i64 mat_n = 1024;

struct mat_data {
  mat_data() : a(static_cast<std::size_t>(mat_n * mat_n)), b(a.size()), expect(a.size(), 0.0f) {
    // Small integers: every product and sum is exact in float, in any order.
    for (i64 i = 0; i < mat_n * mat_n; ++i) {
      a[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + 3) % 5) - 2.0f;
      b[static_cast<std::size_t>(i)] = static_cast<float>((i * 11 + 1) % 3) - 1.0f;
    }
    plain(expect.data(), 1);
  }
  /// C = A B, blocked i-k-j, rows split over threads.
  void plain(float* c, int threads) const {
    const float *pa = a.data(), *pb = b.data();
    split(threads, mat_n, [=](i64 r0, i64 r1) {
      constexpr i64 kb = 128;
      for (i64 i = r0; i < r1; ++i) std::fill(c + i * mat_n, c + (i + 1) * mat_n, 0.0f);
      for (i64 k0 = 0; k0 < mat_n; k0 += kb)
        for (i64 i = r0; i < r1; ++i)
          for (i64 k = k0; k < k0 + kb; ++k) {
            const float aik = pa[i * mat_n + k];
            float* ci = c + i * mat_n;
            const float* bk = pb + k * mat_n;
            for (i64 j = 0; j < mat_n; ++j) ci[j] += aik * bk[j];
          }
    });
  }
  std::vector<float> a, b, expect;
};

const mat_data& matrices() {
  static const mat_data m;
  return m;
}

/// The GFLOP/s of `state`'s iterations of C = A B.
void count_gflops(benchmark::State& state) {
  state.counters["GFLOPS"] = benchmark::Counter(2.0 * mat_n * mat_n * mat_n * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate, benchmark::Counter::kIs1000);
}

/// Checks the product c once, then times launch().
template <class L>
void time_matmul(benchmark::State& state, const L& launch, const float* c) {
  const auto& m = matrices();
  const auto check = [&]() -> std::string {
    return std::equal(m.expect.begin(), m.expect.end(), c) ? "" : "wrong product";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  count_gflops(state);
}

void BM_simd_matmul(benchmark::State& state) {
  const simd_backend be{.threads = static_cast<int>(state.range(0))};
  const auto& m = matrices();
  auto a = ki::to_device(be, m.a), b = ki::to_device(be, m.b);
  auto c = ki::allocate<float>(be, mat_n * mat_n);
  const auto launch = [&] {
    ki::launch(be, {.ndrange = {mat_n, mat_n}, .workgroupsize = {tile, tile}}, matmul_tiled{}, c, std::as_const(a),
               std::as_const(b), mat_n);
    ki::synchronize(be);
  };
  time_matmul(state, launch, c.data());
}

void BM_plain_matmul(benchmark::State& state) {
  const auto& m = matrices();
  std::vector<float> c(m.a.size());
  m.plain(c.data(), plain_threads(state, 0));
  if (c != m.expect) {
    state.SkipWithError("plain product is wrong");
    return;
  }
  for (auto _ : state) {
    m.plain(c.data(), plain_threads(state, 0));
    benchmark::DoNotOptimize(c.data());
  }
  count_gflops(state);
}

/// The tiled matmul in the KA layer: the accumulators are @private. Checked, the product of two
/// tiles is one phase per k, so that each phase is a loop over x with unit stride in tb and acc;
/// unchecked, it is one phase whose work-items loop over k, run as SIMD lanes over x.
template <bool Unchecked = false>
struct ka_matmul_tiled {
  template <class G>
  void operator()(G& g, ki::span<float> c, ki::span<const float> a, ki::span<const float> b, std::int64_t n) const {
    auto ta = g.template localmem<float, tile, tile>([] {});
    auto tb = g.template localmem<float, tile, tile>([] {});
    auto acc = g.template private_<float>();
    phase<Unchecked>(g, [&](auto i) { acc(i) = 0.0f; });
    for (std::int64_t t = 0; t < n / tile; ++t) {
      phase<Unchecked>(g, [&](auto i) {
        const auto l = i.local(), gl = i.global();
        ta(l.x, l.y) = a[gl.y * n + t * tile + l.x];
        tb(l.x, l.y) = b[(t * tile + l.y) * n + gl.x];
      });
      g.synchronize();
      if constexpr (Unchecked) {  // one phase: its loop over x is vectorised around the loop over k
        g.items(ki::ka::unchecked, [&](auto i) {
          float s = 0.0f;
          for (std::int64_t k = 0; k < tile; ++k) s += ta(k, i.local().y) * tb(i.local().x, k);
          acc(i) += s;
        });
      } else {  // a phase per k: a loop over x with bounds checks, in which a loop over k is not vectorised
        for (std::int64_t k = 0; k < tile; ++k)
          g.items([&](auto i) { acc(i) += ta(k, i.local().y) * tb(i.local().x, k); });
      }
      g.synchronize();
    }
    phase<Unchecked>(g, [&](auto i) { c[i.global().y * n + i.global().x] = acc(i); });
  }
};

template <bool Unchecked = false>
void BM_ka_matmul(benchmark::State& state) {
  const simd_backend be{.threads = static_cast<int>(state.range(0))};
  const auto& m = matrices();
  auto a = ki::to_device(be, m.a), b = ki::to_device(be, m.b);
  auto c = ki::allocate<float>(be, mat_n * mat_n);
  const ki::ka::kernel k(be, ka_matmul_tiled<Unchecked>{}, ki::ka::groupsize<tile, tile>, {mat_n, mat_n});
  const auto launch = [&] {
    k(c, ki::ka::Const(a), ki::ka::Const(b), mat_n);
    ki::synchronize(be);
  };
  time_matmul(state, launch, c.data());
}

// --- 7. copies ----------------------------------------------------------------------------

constexpr i64 copy_n = i64{1} << 26;  // floats: 256 MiB each way

/// A host vector and a device array of copy_n floats, the host one holding value(i).
struct copy_data {
  static float value(i64 i) { return static_cast<float>(i % 1000003); }
  std::vector<float> host;
  ki::array<float, simd_backend> dev;
};
copy_data& copies() {
  static copy_data d = [] {
    copy_data c;
    c.host.resize(static_cast<std::size_t>(copy_n));
    for (i64 i = 0; i < copy_n; ++i) c.host[static_cast<std::size_t>(i)] = copy_data::value(i);
    c.dev = ki::to_device(simd_backend{}, c.host);  // (every page of both touched once)
    return c;
  }();
  return d;
}

/// ki::copyto between a host vector and a simd_cpu array: range(0) 0 host to device, 1 device to
/// host; range(1) threads. Checked: after the copy both hold value(i), every element.
void BM_simd_copy(benchmark::State& state) {
  auto& d = copies();
  const auto b = make_backend<simd_backend>(state.range(1));
  const bool to_host = state.range(0) == 1;
  const auto launch = [&] {
    if (to_host) ki::copyto(b, d.host, d.dev);
    else ki::copyto(b, d.dev, d.host);
  };
  const auto check = [&]() -> std::string {
    const float* dev = d.dev.data();
    for (i64 i = 0; i < copy_n; ++i)
      if (dev[i] != copy_data::value(i) || d.host[static_cast<std::size_t>(i)] != copy_data::value(i))
        return "the copy differs at element " + std::to_string(i);
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * copy_n * static_cast<i64>(sizeof(float)));
}

/// The baseline: memcpy between the same buffers, split into one contiguous part per thread.
void BM_plain_memcpy(benchmark::State& state) {
  auto& d = copies();
  const int threads = plain_threads(state, 1);
  float* dev = d.dev.data();
  float* host = d.host.data();
  float* to = state.range(0) == 1 ? host : dev;
  const float* from = state.range(0) == 1 ? dev : host;
  const auto run = [&] {
    split(threads, copy_n,
          [=](i64 lo, i64 hi) { std::memcpy(to + lo, from + lo, static_cast<std::size_t>(hi - lo) * sizeof(float)); });
    benchmark::ClobberMemory();
  };
  run();
  for (auto _ : state) run();
  state.SetBytesProcessed(state.iterations() * copy_n * static_cast<i64>(sizeof(float)));
}

/// Avoiding the copies on a CPU backend: the vector add on host vectors passed to the kernel as
/// they are (a CPU backend runs it on their memory), against the same with the copies a GPU
/// program makes (a and b to device arrays, c back). 2^24 floats; range(0) threads.
template <bool Copies>
void BM_simd_vadd_host(benchmark::State& state) {
  constexpr i64 n = i64{1} << 24;
  struct data {
    std::vector<float> a, b, c;
    ki::array<float, simd_backend> da, db, dc;
  };
  static data d = [] {
    data x;
    x.a.resize(n);
    x.b.resize(n);
    x.c.assign(n, 0.0f);
    for (i64 i = 0; i < n; ++i) {
      x.a[static_cast<std::size_t>(i)] = static_cast<float>(i % 1013);
      x.b[static_cast<std::size_t>(i)] = static_cast<float>(i % 509) - 100.0f;
    }
    x.da = ki::to_device(simd_backend{}, x.a);
    x.db = ki::to_device(simd_backend{}, x.b);
    x.dc = ki::zeros<float>(simd_backend{}, n);
    return x;
  }();
  const auto b = make_backend<simd_backend>(state.range(0));
  const auto launch = [&] {
    if constexpr (Copies) {
      ki::copyto(b, d.da, d.a);
      ki::copyto(b, d.db, d.b);
      ki::launch(b, {.ndrange = n, .workgroupsize = group_size}, vadd{}, d.dc, d.da, d.db);
      ki::synchronize(b);
      ki::copyto(b, d.c, d.dc);
    } else {
      ki::launch(b, {.ndrange = n, .workgroupsize = group_size}, vadd{}, d.c, d.a, d.b);
      ki::synchronize(b);
    }
  };
  const auto check = [&]() -> std::string {
    for (std::size_t i = 0; i < d.c.size(); ++i)
      if (d.c[i] != d.a[i] + d.b[i]) return "c[" + std::to_string(i) + "] != a[i] + b[i]";
    return "";
  };
  std::fill(d.c.begin(), d.c.end(), 0.0f);
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  state.SetBytesProcessed(state.iterations() * n * 3 * static_cast<i64>(sizeof(float)));
}

// --- 6. barriers ---------------------------------------------------------------------------

template <class B>
void BM_ki_barrier(benchmark::State& state) {
  const B b = make_backend<B>(1);
  auto passed = ki::allocate<int>(b, group_size);
  const auto launch = [&] {
    ki::launch(b, {.numgroups = 1, .workgroupsize = group_size}, barrier_loop{}, passed, ops_per_item);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    for (int v : ki::to_host(b, passed))
      if (v != ops_per_item) return "a work-item passed " + std::to_string(v) + " barriers, not 1000";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(group_size) * ops_per_item);
}

/// One barrier per work-item in many groups: the cost of a work-item's first sync point.
template <class B>
void BM_ki_first_barrier(benchmark::State& state) {
  const B b = make_backend<B>(1);
  const i64 groups = 1024;
  auto passed = ki::allocate<int>(b, groups * group_size);
  const auto launch = [&] {
    ki::launch(b, {.numgroups = groups, .workgroupsize = group_size}, barrier_loop{}, passed, 1);
    ki::synchronize(b);
  };
  const auto check = [&]() -> std::string {
    for (int v : ki::to_host(b, passed))
      if (v != 1) return "a work-item passed " + std::to_string(v) + " barriers, not 1";
    return "";
  };
  if (!first_run_ok(state, launch, check)) return;
  for (auto _ : state) launch();
  items_rate(state, static_cast<double>(groups * group_size));
}

/// What a compiler's loop fission would make of barrier_loop: 1000 phases, each a loop over the
/// 256 items' state.
void BM_plain_barrier(benchmark::State& state) {
  std::vector<int> k(group_size), out(group_size);
  const auto run = [&] {
    std::fill(k.begin(), k.end(), 0);
    for (int i = 0; i < ops_per_item; ++i) {
      for (i64 t = 0; t < group_size; ++t) ++k[static_cast<std::size_t>(t)];
      benchmark::ClobberMemory();  // one phase after the other, as barriers order them
    }
    std::copy(k.begin(), k.end(), out.begin());
    benchmark::DoNotOptimize(out.data());
  };
  for (auto _ : state) run();
  items_rate(state, static_cast<double>(group_size) * ops_per_item);
}

const bool registered = [] {
  const std::vector<std::vector<i64>> vadd_sizes{{i64{1} << 24}, {i64{1} << 26}};
  both("BM_simd_vadd", BM_ki_vadd<simd_backend>, vadd_sizes);
  both("BM_plain_vadd", BM_plain_vadd, vadd_sizes);
  both("BM_reference_vadd", BM_ki_vadd<ref_backend>, {{i64{1} << 24}});
  both("BM_plain_vadd_scalar", BM_plain_vadd_scalar, {{i64{1} << 24}});
  both("BM_plain_vadd_checked", BM_plain_vadd_checked, {{i64{1} << 24}});
  both("BM_ka_vadd", BM_ka_vadd<simd_backend>, {{i64{1} << 24}});
  both("BM_ka_vadd_unchecked", BM_ka_vadd<simd_backend, true>, {{i64{1} << 24}});
  both("BM_simd_tree_reduce", BM_ki_tree_reduce<simd_backend>);
  both("BM_plain_tree_reduce", BM_plain_tree_reduce);
  both("BM_reference_tree_reduce", BM_ki_tree_reduce<ref_backend>);
  both("BM_ka_tree_reduce", BM_ka_tree_reduce<simd_backend>);
  both("BM_ka_tree_reduce_unchecked", BM_ka_tree_reduce<simd_backend, true>);
  both("BM_reference_ka_tree_reduce", BM_ka_tree_reduce<ref_backend>);
  both("BM_ka_tree_interleaved_masked", BM_ka_tree_reduce<simd_backend, false, ka_interleaved_sums<false>>);
  both("BM_ka_tree_interleaved_ids", BM_ka_tree_reduce<simd_backend, false, ka_interleaved_sums<true>>);
  both("BM_simd_sg_reduce", BM_ki_sg_reduce<simd_backend>);
  both("BM_plain_sg_reduce", BM_plain_sg_reduce);
  both("BM_reference_sg_reduce", BM_ki_sg_reduce<ref_backend>);
  both("BM_simd_histogram", BM_ki_histogram<simd_backend>);
  both("BM_plain_histogram", BM_plain_histogram);
  both("BM_reference_histogram", BM_ki_histogram<ref_backend>);
  both("BM_ka_histogram", BM_ka_histogram<simd_backend>);
  both("BM_ka_histogram_strided", BM_ka_histogram_strided);
  both("BM_ka_histogram_grid_stride", BM_ka_histogram_grid_stride);
  both("BM_plain_histogram_strided", BM_plain_histogram_strided);
  both("BM_simd_matmul", BM_simd_matmul);
  both("BM_plain_matmul", BM_plain_matmul);
  both("BM_ka_matmul", BM_ka_matmul<>);
  both("BM_ka_matmul_unchecked", BM_ka_matmul<true>);
  both("BM_simd_copy", BM_simd_copy, {{0}, {1}});
  both("BM_plain_memcpy", BM_plain_memcpy, {{0}, {1}});
  both("BM_simd_vadd_host", BM_simd_vadd_host<false>);
  both("BM_simd_vadd_host_copies", BM_simd_vadd_host<true>);
  // One work-group: one thread only.
  benchmark::RegisterBenchmark("BM_simd_barrier", BM_ki_barrier<simd_backend>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_reference_barrier", BM_ki_barrier<ref_backend>)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_plain_barrier", BM_plain_barrier)->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_simd_first_barrier", BM_ki_first_barrier<simd_backend>)
      ->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark("BM_reference_first_barrier", BM_ki_first_barrier<ref_backend>)
      ->Unit(benchmark::kMillisecond);
  return true;
}();

// --- summary -------------------------------------------------------------------------------

class summary_reporter : public summary_reporter_base {
 public:
  using summary_reporter_base::summary_reporter_base;

 protected:
  void summary(std::ostream&) override {
    // A rate (higher is better) from a counter, in the unit shown.
    const auto rate = [&](const std::string& key, const char* counter, double scale) {
      auto v = median(key, counter);
      if (v) *v *= scale;
      return v;
    };
    const auto row = [&](const std::string& what, const std::string& suffix, const std::string& simd_key,
                         const std::string& plain_key, const std::string& ref_key, const char* counter, double scale,
                         const char* unit) {
      const auto s = rate(simd_key + suffix, counter, scale), p = rate(plain_key + suffix, counter, scale);
      std::optional<double> r;  // (assigned, not a ternary with nullopt: GCC 12 warns maybe-uninitialized there)
      if (!ref_key.empty()) r = rate(ref_key + suffix, counter, scale);
      if (!s && !p) return;
      print("  %-34s", what.c_str());
      if (s) print(" simd_cpu %9.3f", *s);
      if (p) print(" | plain %9.3f", *p);
      if (r) print(" | reference %8.3f", *r);
      print(" %-9s", unit);
      if (s && p) print(" | simd/plain %6.3fx", *s / *p);
      if (s && r) print(" | simd/reference %6.2fx", *s / *r);
      print("\n");
    };
    for (const char* t : {"1", "0"}) {
      const std::string suffix = std::string("/") + t;
      print(*t == '1' ? "  one thread (rates per CPU second of that thread; ratios > 1: simd_cpu is faster)\n"
                      : "  all cores (rates per wall-clock second)\n");
      for (int lg : {24, 26}) {
        const std::string n = "/" + std::to_string(i64{1} << lg);
        row("vadd 2^" + std::to_string(lg), suffix, "BM_simd_vadd" + n, "BM_plain_vadd" + n, "BM_reference_vadd" + n,
            "bytes_per_second", 1e-9, "GB/s");
      }
      // The ceilings of running work-items one at a time (see BM_plain_vadd_checked).
      for (const char* k : {"scalar", "checked"}) {
        const auto c = rate(std::string("BM_plain_vadd_") + k + "/16777216" + suffix, "bytes_per_second", 1e-9),
                   p = rate("BM_plain_vadd/16777216" + suffix, "bytes_per_second", 1e-9);
        if (c && p)
          print("  %-34s %s %9.3f GB/s | /plain %6.3fx (a ceiling for one work-item at a time)\n",
                (std::string("vadd 2^24, plain ") + k).c_str(), *k == 's' ? "not vectorised   " : "kernel body, checks",
                *c, *c / *p);
      }
      row("tree reduction 2^24", suffix, "BM_simd_tree_reduce", "BM_plain_tree_reduce", "BM_reference_tree_reduce",
          "bytes_per_second", 1e-9, "GB/s");
      row("KA tree reduction 2^24", suffix, "BM_ka_tree_reduce", "BM_plain_tree_reduce", "BM_reference_ka_tree_reduce",
          "bytes_per_second", 1e-9, "GB/s");
      row("  the same, ki::ka::unchecked", suffix, "BM_ka_tree_reduce_unchecked", "BM_plain_tree_reduce", "",
          "bytes_per_second", 1e-9, "GB/s");
      row("KA tree, interleaved, masked phases", suffix, "BM_ka_tree_interleaved_masked", "BM_plain_tree_reduce", "",
          "bytes_per_second", 1e-9, "GB/s");
      row("  the same, phases over local_ids", suffix, "BM_ka_tree_interleaved_ids", "BM_plain_tree_reduce", "",
          "bytes_per_second", 1e-9, "GB/s");
      {
        const auto ids = rate("BM_ka_tree_interleaved_ids" + suffix, "bytes_per_second", 1.0),
                   masked = rate("BM_ka_tree_interleaved_masked" + suffix, "bytes_per_second", 1.0);
        if (ids && masked) print("  %-34s local_ids / masked %6.2fx\n", "interleaved tree: phases", *ids / *masked);
      }
      {
        const auto ka = rate("BM_reference_ka_tree_reduce" + suffix, "bytes_per_second", 1.0),
                   ki_ = rate("BM_reference_tree_reduce" + suffix, "bytes_per_second", 1.0),
                   kas = rate("BM_ka_tree_reduce" + suffix, "bytes_per_second", 1.0),
                   kis = rate("BM_simd_tree_reduce" + suffix, "bytes_per_second", 1.0);
        if (ka && ki_) print("  %-34s reference KA / KI %7.2fx\n", "KA vs KI tree reduction", *ka / *ki_);
        if (kas && kis) print("  %-34s simd_cpu  KA / KI %7.2fx\n", "", *kas / *kis);
      }
      row("KA vadd 2^24 (foreach_index)", suffix, "BM_ka_vadd/16777216", "BM_plain_vadd/16777216", "",
          "bytes_per_second", 1e-9, "GB/s");
      row("  the same, ki::ka::unchecked", suffix, "BM_ka_vadd_unchecked/16777216", "BM_plain_vadd/16777216", "",
          "bytes_per_second", 1e-9, "GB/s");
      row("sub-group reduce + atomic 2^22", suffix, "BM_simd_sg_reduce", "BM_plain_sg_reduce", "BM_reference_sg_reduce",
          "items_per_second", 1e-6, "Mitems/s");
      row("histogram, local bins 2^22", suffix, "BM_simd_histogram", "BM_plain_histogram", "BM_reference_histogram",
          "items_per_second", 1e-6, "Mitems/s");
      row("KA histogram, local bins 2^22", suffix, "BM_ka_histogram", "BM_plain_histogram", "", "items_per_second",
          1e-6, "Mitems/s");
      row("KA histogram, PoCL's W4 shape 2^24", suffix, "BM_ka_histogram_strided", "BM_plain_histogram_strided", "",
          "items_per_second", 1e-6, "Mitems/s");
      row("  the same with g.grid_stride", suffix, "BM_ka_histogram_grid_stride", "BM_plain_histogram_strided", "",
          "items_per_second", 1e-6, "Mitems/s");
      row("copy host -> device 2^26 floats", suffix, "BM_simd_copy/0", "BM_plain_memcpy/0", "", "bytes_per_second",
          1e-9, "GB/s");
      row("copy device -> host 2^26 floats", suffix, "BM_simd_copy/1", "BM_plain_memcpy/1", "", "bytes_per_second",
          1e-9, "GB/s");
      {
        const auto h = rate("BM_simd_vadd_host" + suffix, "bytes_per_second", 1.0),
                   c = rate("BM_simd_vadd_host_copies" + suffix, "bytes_per_second", 1.0);
        if (h && c)
          print("  %-34s on host vectors %.2fx faster than with the copies to and from device arrays\n",
                "vadd 2^24, no copies", *h / *c);
      }
      // STREAM and the real workloads (simd_cpu_workloads.cpp): KA (checked) against OpenMP.
      for (int k = 0; k < 5; ++k) {
        static const char* const names[] = {"copy", "mul", "add", "triad", "dot"};
        const std::string n = "/" + std::to_string(k);
        row(std::string("STREAM ") + names[k] + " 2^25 doubles (vs OpenMP)", suffix, "BM_ka_stream" + n,
            "BM_omp_stream" + n, "", "bytes_per_second", 1e-9, "GB/s");
      }
      row("hotspot 1024^2 x 10 (vs OpenMP)", suffix, "BM_ka_hotspot", "BM_omp_hotspot", "", "items_per_second", 1e-6,
          "Mcells/s");
      row("  the same, ki::ka::unchecked", suffix, "BM_ka_hotspot_unchecked", "BM_omp_hotspot", "", "items_per_second",
          1e-6, "Mcells/s");
      // simd_cpu_rodinia.cpp
      row("srad 2048^2 x 4 (vs OpenMP)", suffix, "BM_ka_srad", "BM_omp_srad", "", "items_per_second", 1e-6,
          "Mpixels/s");
      row("kmeans 2^19 x 34, 5 clusters", suffix, "BM_ka_kmeans", "BM_omp_kmeans", "", "items_per_second", 1e-6,
          "Mpoints/s");
      row("bfs 2^20 nodes (vs OpenMP)", suffix, "BM_ka_bfs", "BM_omp_bfs", "", "items_per_second", 1e-6, "Mnodes/s");
      row("tiled matmul 1024, 16x16", suffix, "BM_simd_matmul", "BM_plain_matmul", "", "GFLOPS", 1e-9, "GFLOP/s");
      row("KA tiled matmul 1024, 16x16", suffix, "BM_ka_matmul", "BM_plain_matmul", "", "GFLOPS", 1e-9, "GFLOP/s");
      row("  the same, ki::ka::unchecked", suffix, "BM_ka_matmul_unchecked", "BM_plain_matmul", "", "GFLOPS", 1e-9,
          "GFLOP/s");
    }
    const auto ns = [&](const std::string& key) {
      auto v = median(key, "items_per_second");
      if (v) *v = 1e9 / *v;
      return v;
    };
    const auto s = ns("BM_simd_barrier"), p = ns("BM_plain_barrier"), r = ns("BM_reference_barrier");
    if (s) {
      print("  barrier, 256 items x 1000, one thread: simd_cpu %.2f ns per item per barrier (target <= 3)", *s);
      if (r) print(" | reference %.2f ns (simd/reference %.2fx faster)", *r, *r / *s);
      if (p) print(" | plain loop-fissioned phases %.2f ns", *p);
      print("\n");
    }
    const auto fs = ns("BM_simd_first_barrier"), fr = ns("BM_reference_first_barrier");
    if (fs) {
      print("  first barrier, 1024 groups x 256 items x 1 barrier, one thread: simd_cpu %.1f ns per item", *fs);
      if (fr) print(" | reference %.1f ns (simd/reference %.2fx faster)", *fr, *fr / *fs);
      print("\n");
    }
  }
};

}  // namespace

int main(int argc, char** argv) { return ki_bench::run_benchmarks<summary_reporter>(argc, argv); }
