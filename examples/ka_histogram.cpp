// A histogram in the KA layer, the shape of the spec's local-memory kernels: each work-group
// counts into 256 bins of @localmem with local atomics, then adds its bins to the global ones.
//
// Two things of the KA layer make it fast on the CPU backends (docs/ka-layer.md):
// - g.grid_stride(n, f) is the grid-stride loop `for (k = @index(Global, Linear); k < n;
//   k += the ndrange's size)` as one phase: a GPU runs each thread's own loop, a CPU runs the
//   strides outermost and the group's work-items innermost, so it reads x in order;
// - bins.atomic_fetch_add(b, 1) is an atomic on the group's local memory that the CPU backends
//   know to be the group's own (a plain add there; an atomic on shared memory on a GPU).
#include <cstdint>
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

constexpr std::int64_t bins = 256;

struct histogram {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> hist, ki::span<const std::uint8_t> x) const {
    auto local = g.template localmem<std::uint32_t, bins>([] {});
    g.items([&](auto i) { local[i.local_linear()] = 0; });  // one work-item per bin
    g.synchronize();
    g.grid_stride(x.size(), [&](auto, std::int64_t k) { local.atomic_fetch_add(x[k], 1u); });
    g.synchronize();
    g.items([&](auto i) {
      const std::uint32_t c = local[i.local_linear()];
      if (c != 0) ki::atomic_fetch_add(&hist[i.local_linear()], c);
    });
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const std::int64_t n = 1 << 20, groups = 16;
  std::vector<std::uint8_t> h(n);
  std::vector<std::uint32_t> want(bins, 0);
  for (std::int64_t i = 0; i < n; ++i) ++want[h[i] = static_cast<std::uint8_t>((i * 2654435761u) >> 13)];
  auto x = ki::to_device(backend, h);
  auto hist = ki::zeros<std::uint32_t>(backend, bins);
  // 16 groups of 256 work-items (a static size: bins = prod(@groupsize())), 256 bytes each.
  ki::ka::kernel(backend, histogram{}, ki::ka::groupsize<bins>, groups * bins)(hist, ki::ka::Const(x));
  const auto r = ki::to_host(backend, hist);
  std::uint64_t total = 0;
  for (auto c : r) total += c;
  return ki_example::report("ka_histogram", r == want,
                            std::to_string(n) + " bytes into 256 bins: bin 0 = " + std::to_string(r[0]) +
                                ", total = " + std::to_string(total));
}

KI_EXAMPLE_MAIN(run)
