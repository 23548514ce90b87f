// What checked-access mode costs on a realistic kernel: a 16x16-tiled matmul, C = A B with A of
// m x k and B of k x n (arguments m k n, default 256 256 256), in one work-group thread, timed
// from launch to synchronize (docs/debugging.md, "What the checks cost"). Not a test: built on
// request (`--target ki_reference_checked_cost`), linked with ki::reference_checked; a race
// reported here would be a bug of the oracle (the kernel has every barrier it needs). With
// KI_REFERENCE_MEMORY=weak it measures weak memory instead (store buffers, no race detection).
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {
using i64 = std::int64_t;
constexpr i64 tile = 16;

struct tiled_matmul {
  i64 m, k, n;
  void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b) const {
    auto ta = ki::localmemory<float, tile, tile>([] {});
    auto tb = ki::localmemory<float, tile, tile>([] {});
    const auto l = ki::get_local_id(), g = ki::get_global_id();
    const i64 row = g.y, col = g.x;
    float acc = 0;
    for (i64 t = 0; t < k / tile; ++t) {
      ta(l.x, l.y) = a[row * k + t * tile + l.x];
      tb(l.x, l.y) = b[(t * tile + l.y) * n + col];
      ki::barrier();
      for (i64 q = 0; q < tile; ++q) acc += ta(q, l.y) * tb(l.x, q);
      ki::barrier();
    }
    c[row * n + col] = acc;
  }
};
}  // namespace

int main(int argc, char** argv) {
  const i64 m = argc > 1 ? std::atoll(argv[1]) : 256, k = argc > 2 ? std::atoll(argv[2]) : 256,
            n = argc > 3 ? std::atoll(argv[3]) : 256;
  const ki::reference::backend be{.threads = 1};
  std::vector<float> ha(static_cast<std::size_t>(m * k)), hb(static_cast<std::size_t>(k * n));
  for (std::size_t i = 0; i < ha.size(); ++i) ha[i] = static_cast<float>(i % 7);
  for (std::size_t i = 0; i < hb.size(); ++i) hb[i] = static_cast<float>(i % 5);
  auto a = ki::to_device(be, ha);
  auto b = ki::to_device(be, hb);
  auto c = ki::zeros<float>(be, m * n);
  const auto t0 = std::chrono::steady_clock::now();
  ki::launch(be, {.numgroups = ki::dims(n / tile, m / tile), .workgroupsize = ki::dims(tile, tile)},
             tiled_matmul{m, k, n}, c, a, b);
  ki::synchronize(be);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const auto hc = ki::to_host(be, c);
  double want = 0;
  for (i64 q = 0; q < k; ++q)
    want += static_cast<double>(ha[static_cast<std::size_t>(q)]) * hb[static_cast<std::size_t>(q * n)];
  const bool weak = be.memory == ki::reference::memory_model::weak;
  std::printf("tiled matmul %lldx%lld by %lldx%lld, checked-access mode%s: %.3f s (c[0] = %g, expected %g)\n",
              static_cast<long long>(m), static_cast<long long>(k), static_cast<long long>(k),
              static_cast<long long>(n), weak ? ", weak memory" : "", s, static_cast<double>(hc[0]), want);
  return hc[0] == static_cast<float>(want) ? 0 : 1;
}
