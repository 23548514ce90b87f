// A histogram whose number of bins is chosen at run time: the per-work-group bins live in local
// memory sized at launch (ki::launch_options::dynamic_local_memory, CUDA's dynamic shared memory,
// OpenCL's __local kernel argument), in both layers: the KI kernel takes it with
// ki::dynamic_localmemory<T>(), the KA kernel with g.localmem<T>(key, bins), an extent known
// only at run time (the same for the whole group). Each counts 2^17 values into 37 bins, then
// into 1000, and is checked against the host's count.
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

#include <ki/ka.hpp>

namespace {
using i64 = std::int64_t;

/// KI: as histogram_local.cpp, with counts.size() bins: the launch gives 4 bytes per bin.
struct histogram_bins_ki {
  KI_DEVICE void operator()(ki::span<std::int32_t> counts, ki::span<const std::int32_t> data) const {
    const i64 i = ki::get_global_id().x, lid = ki::get_local_id().x, n = ki::get_local_size().x;
    const i64 bins = counts.size();
    auto local = ki::dynamic_localmemory<std::int32_t>();  // the launch's bytes as int32s: bins of them
    for (i64 b = lid; b < bins; b += n) local[b] = 0;
    ki::barrier();
    if (i < data.size()) ki::atomic_fetch_add(&local[data[i]], 1);
    ki::barrier();
    for (i64 b = lid; b < bins; b += n)
      if (local[b] != 0) ki::atomic_fetch_add(&counts[b], local[b]);
  }
};

/// KA: the same, the bins a @localmem of run-time extent (the ndrange is a multiple of the
/// group size here, so every work-item takes part in zeroing and merging).
struct histogram_bins_ka {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<std::int32_t> counts, ki::span<const std::int32_t> data) const {
    const i64 bins = counts.size(), n = g.groupsize_linear();
    auto local = g.template localmem<std::int32_t>([] {}, bins);
    g.items([&](auto i) {
      for (i64 b = i.local_linear(); b < bins; b += n) local[b] = 0;
    });
    g.synchronize();
    g.items([&](auto i) { ki::atomic_fetch_add(&local[data[i.global_linear()]], 1); });
    g.synchronize();
    g.items([&](auto i) {
      for (i64 b = i.local_linear(); b < bins; b += n)
        if (local[b] != 0) ki::atomic_fetch_add(&counts[b], local[b]);
    });
  }
};
}  // namespace

template <ki::backend B>
bool run(const B& backend) {
  const i64 n = i64{1} << 17;
  bool ok = true;
  std::string shown;
  for (const i64 bins : {37, 1000}) {
    std::vector<std::int32_t> h(static_cast<std::size_t>(n));
    for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 7 + i / 3) % bins);
    std::vector<std::int32_t> expected(static_cast<std::size_t>(bins), 0);
    for (auto v : h) ++expected[static_cast<std::size_t>(v)];
    auto data = ki::to_device(backend, h);
    auto ki_counts = ki::zeros<std::int32_t>(backend, bins);
    auto ka_counts = ki::zeros<std::int32_t>(backend, bins);
    const i64 bytes = bins * i64{sizeof(std::int32_t)};
    ki::launch(backend, {.ndrange = n, .workgroupsize = 128, .dynamic_local_memory = bytes}, histogram_bins_ki{},
               ki_counts, data);
    ki::ka::kernel(backend, histogram_bins_ka{})({.ndrange = n, .workgroupsize = 128, .dynamic_local_memory = bytes},
                                                 ka_counts, ki::ka::Const(data));
    const bool same = ki::to_host(backend, ki_counts) == expected && ki::to_host(backend, ka_counts) == expected;
    ok = ok && same;
    shown += (shown.empty() ? "" : ", ") + std::to_string(bins) + " bins (" + std::to_string(bytes) +
             " bytes per work-group) " + (same ? "match" : "differ");
  }
  return ki_example::report("histogram_bins", ok, "KI and KA: " + shown);
}

KI_EXAMPLE_MAIN(run)
