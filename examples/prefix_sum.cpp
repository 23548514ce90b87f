// A two-level inclusive prefix sum built from sub_group_scan.
//   level 1 (kernel scan_groups): each work-group of 256 scans its part: every sub-group scans
//     its values, the sub-group totals go to local memory, sub-group 0 scans those totals
//     (exclusive, W at a time), and each item adds its sub-group's offset;
//   level 2 (kernel add_offsets): each group adds the sum of all earlier groups.
// Relating local ids to lanes needs the linear sub-group layout: the example asks
// supports_linear_subgroups first (a 1-D work-group is covered by that promise).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "example_main.hpp"

constexpr int group = 256;

struct scan_groups {
  KI_DEVICE void operator()(ki::span<std::int64_t> y, ki::span<std::int64_t> group_totals,
                            ki::span<const std::int64_t> x) const {
    const auto i = ki::get_global_id().x, lid = ki::get_local_id().x;
    const auto W = ki::get_max_sub_group_size(), sg = ki::get_sub_group_id(), lane = ki::get_sub_group_local_id();
    const auto nsg = ki::get_num_sub_groups();
    auto totals = ki::localmemory<std::int64_t, group>([] {});  // one per sub-group (at most one per item)

    const std::int64_t s = ki::sub_group_scan(std::plus<>{}, i < x.size() ? x[i] : std::int64_t{0});
    if (lane == ki::get_sub_group_size() - 1) totals[sg] = s;
    ki::barrier();
    if (sg == 0) {  // exclusive scan of the sub-group totals, W at a time, carrying the sum
      std::int64_t carry = 0;
      for (std::int64_t base = 0; base < nsg; base += W) {
        const std::int64_t t = base + lane < nsg ? totals[base + lane] : 0;
        const std::int64_t e = ki::sub_group_exclusive_scan(std::plus<>{}, t, carry);
        const std::int64_t last = ki::shfl(e + t, W - 1);  // carry for the next chunk
        if (base + lane < nsg) totals[base + lane] = e;
        carry = last;
      }
    }
    ki::barrier();
    const std::int64_t v = s + totals[sg];
    if (i < y.size()) y[i] = v;
    if (lid == ki::get_local_size().x - 1) group_totals[ki::get_group_id().x] = v;
  }
};

struct add_offsets {
  KI_DEVICE void operator()(ki::span<std::int64_t> y, ki::span<const std::int64_t> group_offsets) const {
    const auto i = ki::get_global_id().x;
    if (i < y.size()) y[i] += group_offsets[ki::get_group_id().x];
  }
};

template <ki::backend B>
bool run(const B& backend) {
  if (!ki::supports_linear_subgroups(backend))
    return ki_example::skipped("prefix_sum", "the device does not promise the linear sub-group layout");
  const int n = 5'000, groups = (n + group - 1) / group;
  std::vector<std::int64_t> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = i % 13 - 4;
  auto x = ki::to_device(backend, hx);
  auto y = ki::allocate<std::int64_t>(backend, n);
  auto totals = ki::allocate<std::int64_t>(backend, groups);
  ki::launch(backend, {.numgroups = groups, .workgroupsize = group}, scan_groups{}, y, totals, x);

  // The group offsets: an exclusive scan of the group totals (few values: on the host).
  const auto t = ki::to_host(backend, totals);
  std::vector<std::int64_t> offsets(groups, 0);
  for (int g = 1; g < groups; ++g) offsets[g] = offsets[g - 1] + t[g - 1];
  auto off = ki::to_device(backend, offsets);
  ki::launch(backend, {.numgroups = groups, .workgroupsize = group}, add_offsets{}, y, off);
  const auto hy = ki::to_host(backend, y);

  bool ok = true;
  std::int64_t run_sum = 0;
  for (int i = 0; i < n; ++i) ok = ok && hy[i] == (run_sum += hx[i]);
  return ki_example::report("prefix_sum", ok,
                            "inclusive scan of " + std::to_string(n) +
                                " values, y[last] = " + std::to_string(hy[n - 1]) + " (sub-group width " +
                                std::to_string(ki::sub_group_size(backend)) + ")");
}

KI_EXAMPLE_MAIN(run)
