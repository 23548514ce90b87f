// The threadgroup tree reduction of metal-advanced-kernel-programming.txt ("partial_sums!"):
// each work-group of 256 sums its part of x in local memory, halving the number of active
// work-items after every barrier, and writes one partial sum. Every work-item executes every
// barrier, including those that add nothing.
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

struct partial_sums {
  KI_DEVICE void operator()(ki::span<float> out, ki::span<const float> x) const {
    const auto tid = ki::get_local_id().x;
    const auto i = ki::get_global_id().x;
    auto shared = ki::localmemory<float, 256>([] {});
    shared[tid] = i < x.size() ? x[i] : 0.0f;
    ki::barrier();
    for (auto step = ki::get_local_size().x / 2; step > 0; step /= 2) {
      if (tid < step) shared[tid] += shared[tid + step];
      ki::barrier();
    }
    if (tid == 0) out[ki::get_group_id().x] = shared[0];
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const int n = 10'000, group = 256, groups = (n + group - 1) / group;
  std::vector<float> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = float(i % 100);  // small integers: float sums are exact
  auto x = ki::to_device(backend, hx);
  auto out = ki::zeros<float>(backend, groups);

  ki::launch(backend, {.numgroups = groups, .workgroupsize = group}, partial_sums{}, out, x);
  const auto partial = ki::to_host(backend, out);

  double total = 0;
  for (float p : partial) total += p;
  std::int64_t expected = 0;
  for (int i = 0; i < n; ++i) expected += i % 100;
  return ki_example::report("tree_reduction", total == double(expected),
                            std::to_string(groups) + " partial sums of 256, total = " +
                                std::to_string(std::int64_t(total)) + " (expected " + std::to_string(expected) + ")");
}

KI_EXAMPLE_MAIN(run)
