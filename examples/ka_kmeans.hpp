// k-means: the clustering of the Rodinia benchmark suite's "kmeans", one iteration as three KA
// kernels (assign, reduce, new centres), all on the device.
//
//   assign   one work-item per point: the nearest centre (squared Euclidean distance, the first
//            of equals) into membership;
//   reduce   a grid-stride loop per work-group over the points, each point's features and a
//            count added into the group's @localmem sums per cluster with local atomics, then one
//            row of partial sums per work-group;
//   centres  one work-item per (cluster, feature): the partial sums over the work-groups, over
//            the cluster's count (a cluster with no point keeps its centre).
// The points are stored feature-major (feature f of point p at x[f n + p]), as Rodinia's GPU
// version transposes them: consecutive work-items read consecutive addresses.
// Shared by examples/ka_kmeans.cpp (checked against kmeans_host) and ki_bench_simd_cpu (timed
// against the same algorithm in OpenMP).
#pragma once
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include <ki/ka.hpp>

namespace ki_kmeans {

using i64 = std::int64_t;
constexpr i64 group = 256;         // work-items per group (reduce)
constexpr i64 reduce_groups = 64;  // work-groups of the reduce kernel

/// The nearest of k centres (row-major, k x nf) to point p of x (feature-major, n points); the
/// first of equal distances. Written once, for the kernel and the host loops alike.
template <class X, class C>
inline std::int32_t nearest(const X& x, const C& centres, i64 n, i64 p, int k, int nf) {
  std::int32_t best = 0;
  float best_d = std::numeric_limits<float>::max();
  for (int c = 0; c < k; ++c) {
    float d = 0;
    for (int f = 0; f < nf; ++f) {
      const float diff = x[f * n + p] - centres[c * nf + f];
      d += diff * diff;
    }
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  return best;
}

/// Kernel 1: membership[p] = the nearest centre of point p (ndrange n).
template <int K, int F>
struct assign {
  template <class G>
  void operator()(G& g, ki::span<std::int32_t> membership, ki::span<const float> x, ki::span<const float> centres,
                  i64 n) const {
    g.items([&](auto i) {
      const i64 p = i.global_linear();
      membership[p] = nearest(x, centres, n, p, K, F);
    });
  }
};

/// Kernel 2: partial[g][c (F + 1) + f] = work-group g's sum of feature f over the points of
/// cluster c; partial[g][c (F + 1) + F] their count. A static group of `group` work-items.
template <int K, int F>
struct reduce {
  static constexpr i64 row = K * (F + 1);
  static_assert(row <= group, "the reduce kernel zeroes and writes its sums one work-item per sum");
  template <class G>
  void operator()(G& g, ki::span<float> partial, ki::span<const std::int32_t> membership, ki::span<const float> x,
                  i64 n) const {
    auto sums = g.template localmem<float, row>([] {});
    g.items(row, [&](auto i) { sums[i.local_linear()] = 0.0f; });
    g.synchronize();
    g.grid_stride(n, [&](auto, i64 p) {
      const i64 at = membership[p] * (F + 1);
      for (int f = 0; f < F; ++f) sums.atomic_fetch_add(at + f, x[f * n + p]);
      sums.atomic_fetch_add(at + F, 1.0f);
    });
    g.synchronize();
    g.items(row, [&](auto i) { partial[g.group_linear() * row + i.local_linear()] = sums[i.local_linear()]; });
  }
};

/// Kernel 3: centres[c F + f] = the mean of feature f over cluster c (ndrange K F).
template <int K, int F>
struct new_centres {
  template <class G>
  void operator()(G& g, ki::span<float> centres, ki::span<const float> partial, i64 groups) const {
    constexpr i64 row = K * (F + 1);
    g.items([&](auto i) {
      const i64 j = i.global_linear(), c = j / F, f = j % F;
      float sum = 0, count = 0;
      for (i64 b = 0; b < groups; ++b) {
        sum += partial[b * row + c * (F + 1) + f];
        count += partial[b * row + c * (F + 1) + F];
      }
      if (count > 0) centres[j] = sum / count;
    });
  }
};

/// The device arrays of one clustering on backend B, and its iterations.
template <int K, int F, ki::backend B>
struct clustering {
  B backend;
  i64 n;
  ki::array<float, B> x, centres, partial;
  ki::array<std::int32_t, B> membership;

  /// points: feature-major, F x n; start: the K starting centres, row-major.
  clustering(const B& b, const std::vector<float>& points, const std::vector<float>& start)
      : backend(b),
        n(static_cast<i64>(points.size()) / F),
        x(ki::to_device(b, points)),
        centres(ki::to_device(b, start)),
        partial(ki::zeros<float>(b, reduce_groups * reduce<K, F>::row)),
        membership(ki::zeros<std::int32_t>(b, n)) {}

  /// `iterations` iterations (asynchronous).
  void run(int iterations) {
    const ki::ka::kernel k_assign(backend, assign<K, F>{}, ki::ka::groupsize<group>, ki::ka::ndrange{n});
    const ki::ka::kernel k_reduce(backend, reduce<K, F>{}, ki::ka::groupsize<group>, reduce_groups * group);
    const ki::ka::kernel k_centres(backend, new_centres<K, F>{}, ki::ka::groupsize<group>, ki::ka::ndrange{K * F});
    for (int it = 0; it < iterations; ++it) {
      k_assign(membership, std::as_const(x), std::as_const(centres), n);
      k_reduce(partial, std::as_const(membership), std::as_const(x), n);
      k_centres(centres, std::as_const(partial), reduce_groups);
    }
  }
};

/// The same iterations on the host, points [p0, p1) of each step (the OpenMP baseline runs them
/// per thread; sums: K (F + 1) per thread, added by the caller).
inline void assign_points(std::int32_t* membership, const float* x, const float* centres, i64 n, int k, int nf, i64 p0,
                          i64 p1) {
  for (i64 p = p0; p < p1; ++p) membership[p] = nearest(x, centres, n, p, k, nf);
}
inline void sum_points(float* sums, const std::int32_t* membership, const float* x, i64 n, int nf, i64 p0, i64 p1) {
  for (i64 p = p0; p < p1; ++p) {
    float* s = sums + membership[p] * (nf + 1);
    for (int f = 0; f < nf; ++f) s[f] += x[f * n + p];
    s[nf] += 1.0f;
  }
}
inline void centres_from_sums(float* centres, const double* sums, int k, int nf) {
  for (int c = 0; c < k; ++c)
    if (sums[c * (nf + 1) + nf] > 0)
      for (int f = 0; f < nf; ++f)
        centres[c * nf + f] = static_cast<float>(sums[c * (nf + 1) + f] / sums[c * (nf + 1) + nf]);
}
/// The whole clustering on the host, one thread, sums in double (the examples' reference).
inline void kmeans_host(std::vector<std::int32_t>& membership, std::vector<float>& centres, const std::vector<float>& x,
                        int k, int nf, int iterations) {
  const i64 n = static_cast<i64>(x.size()) / nf;
  membership.assign(static_cast<std::size_t>(n), 0);
  for (int it = 0; it < iterations; ++it) {
    assign_points(membership.data(), x.data(), centres.data(), n, k, nf, 0, n);
    std::vector<double> sums(static_cast<std::size_t>(k * (nf + 1)), 0.0);
    for (i64 p = 0; p < n; ++p) {
      double* s = sums.data() + membership[static_cast<std::size_t>(p)] * (nf + 1);
      for (int f = 0; f < nf; ++f) s[f] += x[static_cast<std::size_t>(f * n + p)];
      s[nf] += 1.0;
    }
    centres_from_sums(centres.data(), sums.data(), k, nf);
  }
}

/// n points in k well-separated clusters (point p drawn around the true centre p mod k, with
/// noise of at most 1 per feature; two true centres at least 7 apart in every feature), stored
/// feature-major, and the k starting centres: points 0 .. k - 1 (one per true cluster), so that
/// every point's nearest centre is clear at every iteration.
inline std::pair<std::vector<float>, std::vector<float>> points(i64 n, int k, int nf) {
  std::vector<float> x(static_cast<std::size_t>(n * nf)), start(static_cast<std::size_t>(k * nf));
  std::uint32_t state = 2024;
  const auto uniform = [&] {  // [0, 1), a fixed LCG: the same points everywhere
    state = state * 1664525u + 1013904223u;
    return static_cast<float>(state >> 8) / 16777216.0f;
  };
  std::vector<float> truth(static_cast<std::size_t>(k * nf));
  for (int c = 0; c < k; ++c)
    for (int f = 0; f < nf; ++f)
      truth[static_cast<std::size_t>(c * nf + f)] = 10.0f * static_cast<float>(c) + 3.0f * uniform();
  for (i64 p = 0; p < n; ++p)
    for (int f = 0; f < nf; ++f)
      x[static_cast<std::size_t>(f * n + p)] =
          truth[static_cast<std::size_t>((p % k) * nf + f)] + 2.0f * uniform() - 1.0f;
  for (int c = 0; c < k; ++c)
    for (int f = 0; f < nf; ++f) start[static_cast<std::size_t>(c * nf + f)] = x[static_cast<std::size_t>(f * n + c)];
  return {std::move(x), std::move(start)};
}

}  // namespace ki_kmeans
