// The SIMD-group sum of metal-advanced-kernel-programming.txt: a shuffle-down tree inside each
// sub-group (log2(W) shuffles, no barrier), then the first lane of each sub-group adds its
// partial sum to the total with one atomic. (Integers: the sum is exact whatever order the
// atomics happen in; with floats it could differ in the last bits between runs.)
//
// The tree is only right when every sub-group is complete: launch work-groups whose size is a
// multiple of the sub-group width, on a device that promises the linear layout. Elsewhere
// (try KI_REFERENCE_PROFILE=intel or strict: scattered lanes, several partial sub-groups) the
// tree reads lanes without a work-item, which the reference backend reports and fills with a
// poison value; sub_group_reduce handles partial sub-groups, so the example uses it there.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "example_main.hpp"

struct simd_sum {
  KI_DEVICE void operator()(ki::span<std::int64_t> total, ki::span<const std::int32_t> x, bool tree) const {
    const auto i = ki::get_global_id().x;
    std::int64_t val = i < x.size() ? x[i] : 0;
    if (tree) {
      for (auto offset = ki::get_max_sub_group_size() / 2; offset > 0; offset /= 2) val += ki::shfl_down(val, offset);
    } else {
      val = ki::sub_group_reduce(std::plus<>{}, val);
    }
    if (ki::get_sub_group_local_id() == 0) ki::atomic_fetch_add(&total[0], val);
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const int n = 10'000, group = 256, groups = (n + group - 1) / group;
  std::vector<std::int32_t> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = (i * 7) % 101;
  auto x = ki::to_device(backend, hx);
  auto total_d = ki::zeros<std::int64_t>(backend, 1);
  // Complete sub-groups are guaranteed only by the linear layout with group % width == 0.
  const bool tree = ki::supports_linear_subgroups(backend) && group % ki::sub_group_size(backend) == 0;
  ki::launch(backend, {.numgroups = groups, .workgroupsize = group}, simd_sum{}, total_d, x, tree);
  const std::int64_t total = ki::to_host(backend, total_d)[0];

  std::int64_t expected = 0;
  for (auto v : hx) expected += v;
  return ki_example::report("simd_sum", total == expected,
                            std::string(tree ? "shuffle tree" : "sub_group_reduce") + ", sub-group width " +
                                std::to_string(ki::sub_group_size(backend)) + ", sum of " + std::to_string(n) +
                                " values = " + std::to_string(total) + " (expected " + std::to_string(expected) + ")");
}

KI_EXAMPLE_MAIN(run)
