// Spec: which work-items have to execute the communication functions together.
//   supports_independent_subgroups: "the sub-group communication functions (shuffles, votes,
//   collectives and sub_group_barrier) can be executed in control flow that is uniform over the
//   sub-group, but not over the work-group: e.g. a loop whose trip count differs between
//   sub-groups, or after an early return of whole sub-groups."
//   supports_partitionable_subgroups: "those only have to be executed by the work-items of the
//   caller's segment, rather than by the whole sub-group, so the segments of a sub-group can take
//   different branches, loop a different number of times, or skip the functions altogether."
// Each test runs only on the configurations whose query promises it (the misuse elsewhere is
// the oracle's diagnostics, reference/tests/sub_group_diagnostics.cpp). The host replays each
// sub-group (segment) on the values the work-items recorded.
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_participation {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

constexpr i64 max_slots = 1024;

struct plus {
  KI_DEVICE i64 operator()(i64 x, i64 y) const { return x + y; }
};

KI_DEVICE inline i64 input(i64 slot) { return slot * 10 + 1; }
/// Trip counts: 0, 1 or 2 (0: the segment / sub-group skips the functions altogether).
KI_DEVICE inline i64 trips_of(i64 unit, i64 group) { return (unit + group) % 3; }

/// Segments of `width` lanes loop a different number of times; in each trip: a rotation by
/// shfl within the segment's work-items, a vote, a local-memory exchange between two
/// sub_group_barrier(width)s, an inclusive scan and a reduction.
struct diverging_segments {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<i64> out, i64 width) const {
    auto buf = ki::localmemory<i64, max_slots>([] {});
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 lane = ki::get_sub_group_local_id(), size = ki::get_sub_group_size(), W = ki::get_max_sub_group_size();
    const i64 base = ki::get_sub_group_id() * W;
    const i64 seg = lane / width * width, count = seg + width < size ? width : size - seg, pos = lane - seg;
    i64 v = input(p.slot);
    const i64 trips = trips_of(lane / width, p.group);
    for (i64 t = 0; t < trips; ++t) {
      v = ki::shfl(v, (pos + 1) % count, width) * 3 + t;
      if (ki::sub_group_any(v % 4 == 0, width)) v += 1;
      buf[base + lane] = v;
      ki::sub_group_barrier(width);
      v += 2 * buf[base + seg + (pos + count - 1) % count];
      ki::sub_group_barrier(width);
      v = ki::sub_group_scan(plus{}, v, width) + ki::sub_group_reduce(plus{}, v, width) % 1000;
    }
    out[p.slot] = v;
  }
};

/// Whole sub-groups loop a different number of times, or return early; in each trip: a
/// rotation by shfl, a ballot, a local-memory exchange between two sub_group_barrier()s, an
/// exclusive scan.
struct independent_sub_groups {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, max_slots>([] {});
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 id = ki::get_sub_group_id();
    out[p.slot] = -1;
    if (id % 4 == 3) return;  // an early return of whole sub-groups
    const i64 lane = ki::get_sub_group_local_id(), size = ki::get_sub_group_size(), W = ki::get_max_sub_group_size();
    const i64 base = id * W;
    i64 v = input(p.slot);
    const i64 trips = trips_of(id, p.group) + (id % 4 == 1 ? 2 : 0);
    for (i64 t = 0; t < trips; ++t) {
      v = ki::shfl(v, (lane + 1) % size) + t;
      v += std::popcount(ki::sub_group_ballot(v % 3 == 0));
      buf[base + lane] = v;
      ki::sub_group_barrier();
      v -= buf[base + (lane + size - 1) % size] / 2;
      ki::sub_group_barrier();
      v = ki::sub_group_exclusive_scan(plus{}, v, i64{7}) % 100003;
    }
    out[p.slot] = v;
  }
};

/// The host's replay of one unit (segment or sub-group) of `count` work-items, in lane order.
std::vector<i64> replay_segment(std::vector<i64> v, i64 trips) {
  const auto count = static_cast<i64>(v.size());
  for (i64 t = 0; t < trips; ++t) {
    std::vector<i64> r(v.size());
    for (i64 i = 0; i < count; ++i)
      r[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + 1) % count)] * 3 + t;
    bool any = false;
    for (i64 x : r) any = any || x % 4 == 0;
    if (any)
      for (i64& x : r) x += 1;
    std::vector<i64> m(r.size());
    for (i64 i = 0; i < count; ++i)
      m[static_cast<std::size_t>(i)] =
          r[static_cast<std::size_t>(i)] + 2 * r[static_cast<std::size_t>((i + count - 1) % count)];
    i64 total = 0, prefix = 0;
    for (i64 x : m) total += x;
    for (i64 i = 0; i < count; ++i) {
      prefix += m[static_cast<std::size_t>(i)];
      v[static_cast<std::size_t>(i)] = prefix + total % 1000;
    }
  }
  return v;
}

std::vector<i64> replay_sub_group(std::vector<i64> v, i64 trips) {
  const auto size = static_cast<i64>(v.size());
  for (i64 t = 0; t < trips; ++t) {
    std::vector<i64> r(v.size());
    for (i64 i = 0; i < size; ++i) r[static_cast<std::size_t>(i)] = v[static_cast<std::size_t>((i + 1) % size)] + t;
    int votes = 0;
    for (i64 x : r) votes += x % 3 == 0 ? 1 : 0;
    for (i64& x : r) x += votes;
    std::vector<i64> m(r.size());
    for (i64 i = 0; i < size; ++i)
      m[static_cast<std::size_t>(i)] =
          r[static_cast<std::size_t>(i)] - r[static_cast<std::size_t>((i + size - 1) % size)] / 2;
    i64 acc = 7;
    for (i64 i = 0; i < size; ++i) {
      v[static_cast<std::size_t>(i)] = acc % 100003;
      acc += m[static_cast<std::size_t>(i)];
    }
  }
  return v;
}

}  // namespace ki_spec_sub_group_participation

using namespace ki_spec_sub_group_participation;

TEMPLATE_LIST_TEST_CASE("sub_group: with partitionable sub-groups, segments of a width diverge independently",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  int tested = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    if (!ki::supports_partitionable_subgroups(b)) continue;
    CHECK(ki::supports_independent_subgroups(b));  // "This extends supports_independent_subgroups ... and implies it."
    CHECK(ki::supports_subgroups(b));
    ++tested;
    const i64 W = ki::sub_group_size(b);
    for (const auto& s : sg::shapes(b)) {
      REQUIRE(s.items() + 3 * W <= max_slots);  // sg::shapes(): at most 4 W + 4 work-items, W <= 64
      for (i64 width : sg::widths(W)) {
        KI_INFO(cfg::describe(b) << "; " << sg::str(s) << "; width " << width);
        const i64 total = s.items() * s.groups;
        auto run = [&](const auto& be) {
          auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
          auto out = ki_test::filled<i64>(be, total, 0);
          ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, diverging_segments{}, rec, out,
                     width);
          return sg::launch_result<i64>{ki_test::read(be, rec), ki_test::read(be, out)};
        };
        const auto result = run(b);
        const auto l = sg::observe(b, s, result.rec);
        if (!l.ok) continue;
        const auto& got = result.out;
        sg::mismatches bad;
        for (const auto& [key, m] : l.members) {
          const i64 size = l.size_of(m[0]);
          for (i64 seg = 0; seg < size; seg += width) {
            std::vector<i64> v;
            for (i64 lane = seg; lane < seg + width && lane < size; ++lane)
              v.push_back(input(m[static_cast<std::size_t>(lane)]));
            const auto want = replay_segment(v, trips_of(seg / width, key.first));
            for (std::size_t i = 0; i < want.size(); ++i) {
              const i64 slot = m[static_cast<std::size_t>(seg) + i];
              if (got[static_cast<std::size_t>(slot)] != want[i])
                bad.add("group " + std::to_string(key.first) + ", sub-group " + std::to_string(key.second) + ", lane " +
                        std::to_string(seg + static_cast<i64>(i)) + ": got " +
                        std::to_string(got[static_cast<std::size_t>(slot)]) + ", expected " + std::to_string(want[i]));
            }
          }
        }
        bad.check("diverging segments");
        sg::against_reference(b, result, run, sg::none_unspecified, sg::equal_to{});
      }
    }
  }
  if (tested == 0) SKIP("supports_partitionable_subgroups is false for every configuration of this backend");
}

TEMPLATE_LIST_TEST_CASE("sub_group: with independent sub-groups, sub-groups loop differently or return early",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  int tested = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    if (!ki::supports_independent_subgroups(b)) continue;
    CHECK(ki::supports_subgroups(b));  // "Implies supports_subgroups."
    ++tested;
    const i64 W = ki::sub_group_size(b);
    for (const auto& s : sg::shapes(b)) {
      REQUIRE(s.items() + 3 * W <= max_slots);  // sg::shapes(): at most 4 W + 4 work-items, W <= 64
      KI_INFO(cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups;
      auto run = [&](const auto& be) {
        auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
        auto out = ki_test::filled<i64>(be, total, 0);
        ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, independent_sub_groups{}, rec, out);
        return sg::launch_result<i64>{ki_test::read(be, rec), ki_test::read(be, out)};
      };
      const auto result = run(b);
      const auto l = sg::observe(b, s, result.rec);
      if (!l.ok) continue;
      const auto& got = result.out;
      sg::mismatches bad;
      for (const auto& [key, m] : l.members) {
        const auto [group, id] = key;
        const i64 size = l.size_of(m[0]);
        std::vector<i64> v;
        for (i64 lane = 0; lane < size; ++lane) v.push_back(input(m[static_cast<std::size_t>(lane)]));
        auto want = id % 4 == 3 ? std::vector<i64>(v.size(), -1)
                                : replay_sub_group(v, trips_of(id, group) + (id % 4 == 1 ? 2 : 0));
        for (i64 lane = 0; lane < size; ++lane) {
          const i64 slot = m[static_cast<std::size_t>(lane)];
          if (got[static_cast<std::size_t>(slot)] != want[static_cast<std::size_t>(lane)])
            bad.add("group " + std::to_string(group) + ", sub-group " + std::to_string(id) + ", lane " +
                    std::to_string(lane) + ": got " + std::to_string(got[static_cast<std::size_t>(slot)]) +
                    ", expected " + std::to_string(want[static_cast<std::size_t>(lane)]));
        }
      }
      bad.check("independent sub-groups");
      sg::against_reference(b, result, run, sg::none_unspecified, sg::equal_to{});
    }
  }
  if (tested == 0) SKIP("supports_independent_subgroups is false for every configuration of this backend");
}
