// Rodinia's srad, k-means and bfs in ki_bench_simd_cpu (their kernels are the examples':
// examples/ka_srad.hpp, ka_kmeans.hpp, ka_bfs.hpp), KA kernels in the default checked mode
// against the same algorithm as plain OpenMP loops in this binary, the same arrays and steps:
//
//   srad    2048 x 2048 floats, 4 iterations per run (statistics, coefficients, update; the
//           statistics read back by the host once per iteration on both sides)
//   kmeans  2^19 points of 34 features in 5 clusters (Rodinia's kdd_cup shape), one iteration
//           per run: assign, reduce (per work-group local sums; OpenMP: per thread), new centres
//   bfs     a random directed graph of 2^20 nodes, 1 to 11 edges each (Rodinia's graph1MW_6
//           shape), the whole search from node 0 per run, levels until none found a node
//
// Each checks its result once before it is timed: srad and kmeans against the one-thread host
// version of the example, bfs against a queue-based search. The summary (simd_cpu_bench.cpp)
// prints each KA rate over its OpenMP one.
#include "simd_cpu_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <omp.h>

#include "ka_bfs.hpp"
#include "ka_kmeans.hpp"
#include "ka_srad.hpp"

namespace {

using namespace ki_bench;

// --- srad ------------------------------------------------------------------------------------

constexpr i64 srad_n = 2048;
constexpr int srad_iterations = 4;
constexpr float srad_lambda = 0.5f;

struct srad_data {
  std::vector<float> image, want;
  srad_data() : image(ki_srad::speckled(srad_n, srad_n)) {
    ki_srad::host_filter h(image, srad_n, srad_n);
    h.run(srad_iterations, srad_lambda);
    want = std::move(h.img);
  }
  /// "" if got is the filtered image (to the rounding of the statistics' order, as the example).
  std::string wrong(const float* got) const {
    for (std::size_t k = 0; k < want.size(); ++k)
      if (!(std::abs(got[k] - want[k]) <= 1e-4f * want[k])) return "srad: pixel " + std::to_string(k) + " is wrong";
    return "";
  }
};
const srad_data& srad() {
  static const srad_data d;
  return d;
}

void BM_ka_srad(benchmark::State& state) {
  const auto& d = srad();
  const auto be = make_backend<simd_backend>(state.range(0));
  ki_srad::filter<simd_backend> f(be, srad_n, srad_n);
  const auto launch = [&] {
    ki::copyto(be, f.img, d.image);
    f.run(srad_iterations, srad_lambda);
    ki::synchronize(be);
  };
  const auto check = [&] { return d.wrong(f.img.data()); };
  checked_then_timed(state, launch, check, static_cast<double>(srad_n * srad_n * srad_iterations));
}

void BM_omp_srad(benchmark::State& state) {
  const auto& d = srad();
  const int t = plain_threads(state, 0);
  ki_srad::host_filter h(d.image, srad_n, srad_n);
  const auto stats = [t](const float* img, i64 nx, i64 ny) {
    double s = 0, s2 = 0;
#pragma omp parallel for schedule(static) num_threads(t) reduction(+ : s, s2)
    for (i64 y = 0; y < ny; ++y) ki_srad::statistics_rows(img, nx, y, y + 1, s, s2);
    return std::pair{s, s2};
  };
  const auto rows = [t](auto&& step) {
#pragma omp parallel for schedule(static) num_threads(t)
    for (i64 y = 0; y < srad_n; ++y) step(y, y + 1);
  };
  const auto run = [&] {
    std::copy(d.image.begin(), d.image.end(), h.img.begin());
    h.run(srad_iterations, srad_lambda, stats, rows);
    benchmark::ClobberMemory();
  };
  checked_then_timed(
      state, run, [&] { return d.wrong(h.img.data()); }, static_cast<double>(srad_n * srad_n * srad_iterations));
}

// --- k-means ---------------------------------------------------------------------------------

constexpr int km_k = 5, km_f = 34;
constexpr i64 km_n = i64{1} << 19;

struct kmeans_data {
  std::vector<float> x, start, want_centres;
  std::vector<std::int32_t> want_membership;
  kmeans_data() {
    std::tie(x, start) = ki_kmeans::points(km_n, km_k, km_f);
    want_centres = start;
    ki_kmeans::kmeans_host(want_membership, want_centres, x, km_k, km_f, 1);
  }
  std::string wrong(const std::int32_t* membership, const float* centres) const {
    for (i64 p = 0; p < km_n; ++p)
      if (membership[p] != want_membership[static_cast<std::size_t>(p)])
        return "kmeans: point " + std::to_string(p) + " is in the wrong cluster";
    for (std::size_t j = 0; j < want_centres.size(); ++j)
      if (!(std::abs(centres[j] - want_centres[j]) <= 1e-4f * std::abs(want_centres[j])))
        return "kmeans: centre coordinate " + std::to_string(j) + " is wrong";
    return "";
  }
};
const kmeans_data& kmeans() {
  static const kmeans_data d;
  return d;
}

void BM_ka_kmeans(benchmark::State& state) {
  const auto& d = kmeans();
  const auto be = make_backend<simd_backend>(state.range(0));
  ki_kmeans::clustering<km_k, km_f, simd_backend> c(be, d.x, d.start);
  const auto launch = [&] {
    ki::copyto(be, c.centres, d.start);
    c.run(1);
    ki::synchronize(be);
  };
  const auto check = [&] { return d.wrong(c.membership.data(), c.centres.data()); };
  checked_then_timed(state, launch, check, static_cast<double>(km_n));
}

void BM_omp_kmeans(benchmark::State& state) {
  const auto& d = kmeans();
  const int t = plain_threads(state, 0);
  std::vector<std::int32_t> membership(km_n);
  std::vector<float> centres = d.start;
  constexpr int row = km_k * (km_f + 1);
  const auto run = [&] {
    std::copy(d.start.begin(), d.start.end(), centres.begin());
    std::int32_t* m = membership.data();
    const float* x = d.x.data();
    const float* cs = centres.data();
#pragma omp parallel for schedule(static) num_threads(t)
    for (i64 p = 0; p < km_n; ++p) ki_kmeans::assign_points(m, x, cs, km_n, km_k, km_f, p, p + 1);
    double total[row] = {};
#pragma omp parallel num_threads(t)
    {
      float sums[row] = {};  // per thread, as the kernel's per work-group
      const i64 th = omp_get_thread_num(), nt = omp_get_num_threads();
      ki_kmeans::sum_points(sums, m, x, km_n, km_f, km_n * th / nt, km_n * (th + 1) / nt);
#pragma omp critical
      for (int j = 0; j < row; ++j) total[j] += sums[j];
    }
    ki_kmeans::centres_from_sums(centres.data(), total, km_k, km_f);
    benchmark::ClobberMemory();
  };
  checked_then_timed(
      state, run, [&] { return d.wrong(membership.data(), centres.data()); }, static_cast<double>(km_n));
}

// --- bfs -------------------------------------------------------------------------------------

constexpr i64 bfs_n = i64{1} << 20;

struct bfs_data {
  ki_bfs::graph gr = ki_bfs::random_graph(bfs_n, 6);
  std::vector<ki_bfs::i32> want = ki_bfs::bfs_host(gr, 0);
  std::string wrong(const ki_bfs::i32* cost) const {
    for (i64 v = 0; v < bfs_n; ++v)
      if (cost[v] != want[static_cast<std::size_t>(v)]) return "bfs: node " + std::to_string(v) + " has a wrong cost";
    return "";
  }
};
const bfs_data& bfs() {
  static const bfs_data d;
  return d;
}

void BM_ka_bfs(benchmark::State& state) {
  const auto& d = bfs();
  const auto be = make_backend<simd_backend>(state.range(0));
  ki_bfs::search<simd_backend> s(be, d.gr);
  const auto launch = [&] {
    s.run(0);
    ki::synchronize(be);
  };
  const auto check = [&] { return d.wrong(s.cost.data()); };
  checked_then_timed(state, launch, check, static_cast<double>(bfs_n));
}

void BM_omp_bfs(benchmark::State& state) {
  const auto& d = bfs();
  const int t = plain_threads(state, 0);
  using ki_bfs::i32;
  std::vector<i32> frontier(bfs_n), next(bfs_n), visited(bfs_n), cost(bfs_n);
  const auto run = [&] {
    i32 *f = frontier.data(), *nx = next.data(), *v = visited.data(), *c = cost.data();
#pragma omp parallel for schedule(static) num_threads(t)
    for (i64 j = 0; j < bfs_n; ++j) f[j] = nx[j] = v[j] = 0, c[j] = -1;
    f[0] = v[0] = 1;
    c[0] = 0;
    const i64* first = d.gr.first.data();
    const i32* edges = d.gr.edges.data();
    for (i32 level = 0;; ++level) {
#pragma omp parallel for schedule(static) num_threads(t)
      for (i64 j = 0; j < bfs_n; ++j) ki_bfs::expand_nodes(f, nx, c, v, first, edges, level, j, j + 1);
      bool found = false;
#pragma omp parallel for schedule(static) num_threads(t) reduction(|| : found)
      for (i64 j = 0; j < bfs_n; ++j) found = ki_bfs::advance_nodes(f, nx, v, j, j + 1) || found;
      if (!found) break;
    }
    benchmark::ClobberMemory();
  };
  checked_then_timed(
      state, run, [&] { return d.wrong(cost.data()); }, static_cast<double>(bfs_n));
}

const bool registered = [] {
  both("BM_ka_srad", BM_ka_srad);
  both("BM_omp_srad", BM_omp_srad);
  both("BM_ka_kmeans", BM_ka_kmeans);
  both("BM_omp_kmeans", BM_omp_kmeans);
  both("BM_ka_bfs", BM_ka_bfs);
  both("BM_omp_bfs", BM_omp_bfs);
  return true;
}();

}  // namespace
