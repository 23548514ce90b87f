// The histogram with per-work-group bins in local memory: cheap local atomics while counting,
// then one global atomic per bin and work-group to merge. The barriers order the phases: bins
// zeroed -> counted -> merged. (Local memory is uninitialised: the zeroing is required.)
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

constexpr int bins = 16;

struct histogram_local {
  KI_DEVICE void operator()(ki::span<std::int32_t> counts, ki::span<const std::int32_t> data) const {
    const auto i = ki::get_global_id().x, lid = ki::get_local_id().x, n = ki::get_local_size().x;
    auto local = ki::localmemory<std::int32_t, bins>([] {});
    for (auto b = lid; b < bins; b += n) local[b] = 0;
    ki::barrier();
    if (i < data.size()) ki::atomic_fetch_add(&local[data[i]], 1);
    ki::barrier();
    for (auto b = lid; b < bins; b += n)
      if (local[b] != 0) ki::atomic_fetch_add(&counts[b], local[b]);
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const int n = 100'000;
  std::vector<std::int32_t> h(n);
  for (int i = 0; i < n; ++i) h[i] = (i * 7 + i / 3) % bins;
  auto data = ki::to_device(backend, h);
  auto counts = ki::zeros<std::int32_t>(backend, bins);
  ki::launch(backend, {.ndrange = n, .workgroupsize = 128}, histogram_local{}, counts, data);
  const auto c = ki::to_host(backend, counts);

  std::vector<std::int32_t> expected(bins, 0);
  for (auto v : h) ++expected[v];
  std::string shown;
  for (int b = 0; b < bins; ++b) shown += (b ? " " : "") + std::to_string(c[b]);
  return ki_example::report("histogram_local", c == expected, "local bins merged: " + shown);
}

KI_EXAMPLE_MAIN(run)
