// The histogram of metal-advanced-kernel-programming.txt: every work-item adds 1 to the bin of
// its value with a global atomic (atomics never lose updates, whatever order the work-groups
// run in; on the reference backend they run in parallel on several threads).
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

struct histogram {
  KI_DEVICE void operator()(ki::span<std::int32_t> counts, ki::span<const std::int32_t> data) const {
    const auto i = ki::get_global_id().x;
    if (i < data.size()) ki::atomic_fetch_add(&counts[data[i]], 1);
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const int n = 10'000, bins = 16;
  std::vector<std::int32_t> h(n);
  std::uint32_t s = 12345;
  for (auto& v : h) v = static_cast<std::int32_t>((s = s * 1103515245u + 12345u) >> 16) % bins;  // known data
  auto data = ki::to_device(backend, h);
  auto counts = ki::zeros<std::int32_t>(backend, bins);
  ki::launch(backend, {.ndrange = n, .workgroupsize = 256}, histogram{}, counts, data);
  const auto c = ki::to_host(backend, counts);

  std::vector<std::int32_t> expected(bins, 0);
  for (auto v : h) ++expected[v];
  std::string shown;
  for (int b = 0; b < bins; ++b) shown += (b ? " " : "") + std::to_string(c[b]);
  return ki_example::report("histogram", c == expected, "16 bins of " + std::to_string(n) + " values: " + shown);
}

KI_EXAMPLE_MAIN(run)
