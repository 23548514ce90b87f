// Spec: sub_group_any, sub_group_all, sub_group_ballot, without and with a width (0-based in ki):
//   "Whether pred is true for any / all work-items of the sub-group. All work-items of the
//   sub-group get the same result."
//   ballot: "bit i - 1 ... is set if and only if the sub-group has a work-item with
//   get_sub_group_local_id equal to i and its pred is true. All other bits, e.g. those of lanes
//   without a work-item in a partial sub-group, are zero ... count_ones(mask) counts the
//   work-items, and for a nonzero mask, trailing_zeros(mask) + 1 is the lane of the first one."
//   with a width: "whether pred is true for any or all work-items of the caller's segment, or a
//   mask of those for which it is, relative to the segment: bit i - 1 for the i-th lane of the
//   segment. Lanes without a work-item don't count."
// Predicates of several densities; the host computes each vote from the recorded predicates,
// sub-group ids and lanes (any layout).
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_votes {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

constexpr i64 patterns = 6;

/// The predicate of pattern p for the work-item at slot: all false, all true, about half,
/// sparse, mostly true, one work-item per work-group.
KI_DEVICE inline bool pred(i64 p, i64 slot, i64 lin, i64 n, u64 salt) {
  const u64 h = sg::mix(static_cast<u64>(slot) ^ salt ^ static_cast<u64>(p << 40));
  switch (p) {
    case 0: return false;
    case 1: return true;
    case 2: return (h & 1) != 0;
    case 3: return h % 7 == 0;
    case 4: return h % 9 != 0;
    default: return lin == (n * 2) / 3;
  }
}

/// Results per slot: for each pattern, for width 0 (none) and each power of two up to W:
/// any, all, ballot. The width is passed as int and as uint16 in alternation.
inline i64 results_per_item(i64 W) {
  return patterns * (1 + static_cast<i64>(std::bit_width(static_cast<u64>(W)))) * 3;
}

struct votes {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<i64> out, u64 salt) const {
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 W = ki::get_max_sub_group_size();
    i64 k = 0, per = 0;
    for (i64 w = W; w >= 1; w /= 2) ++per;
    per = patterns * (per + 1) * 3;
    i64* o = &out[p.slot * per];
    for (i64 pattern = 0; pattern < patterns; ++pattern) {
      const bool q = pred(pattern, p.slot, p.lin, p.n, salt);
      o[k++] = ki::sub_group_any(q) ? 1 : 0;
      o[k++] = ki::sub_group_all(q) ? 1 : 0;
      o[k++] = static_cast<i64>(ki::sub_group_ballot(q));
      int j = 0;
      for (i64 w = 1; w <= W; w *= 2, ++j) {
        if (j % 2 == 0) {
          const int wi = static_cast<int>(w);
          o[k++] = ki::sub_group_any(q, wi) ? 1 : 0;
          o[k++] = ki::sub_group_all(q, wi) ? 1 : 0;
          o[k++] = static_cast<i64>(ki::sub_group_ballot(q, wi));
        } else {
          const auto wu = static_cast<std::uint16_t>(w);
          o[k++] = ki::sub_group_any(q, wu) ? 1 : 0;
          o[k++] = ki::sub_group_all(q, wu) ? 1 : 0;
          o[k++] = static_cast<i64>(ki::sub_group_ballot(q, wu));
        }
      }
    }
  }
};

}  // namespace ki_spec_sub_group_votes

using namespace ki_spec_sub_group_votes;

TEMPLATE_LIST_TEST_CASE("sub_group: any, all and ballot over the sub-group and over segments of a width", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b);
    const i64 per = results_per_item(W);
    for (const auto& s : sg::shapes(b)) {
      KI_INFO(cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups, n = s.items();
      const u64 salt = static_cast<u64>(31 * W + n);
      auto run = [&](const auto& be) {
        auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
        auto out = ki_test::filled<i64>(be, total * per, -1);
        ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, votes{}, rec, out, salt);
        return sg::launch_result<i64>{ki_test::read(be, rec), ki_test::read(be, out)};
      };
      const auto result = run(b);
      const auto l = sg::observe(b, s, result.rec);
      if (!l.ok) continue;
      const auto& got = result.out;
      sg::mismatches bad;
      std::int64_t nonzero_ballots = 0;
      for (i64 slot = 0; slot < total; ++slot) {
        const i64 lane = l.lane_of(slot), size = l.size_of(slot);
        i64 k = 0;
        for (i64 pattern = 0; pattern < patterns; ++pattern) {
          std::vector<i64> ws{0};
          for (i64 w : sg::widths(W)) ws.push_back(w);
          for (i64 width : ws) {
            const i64 w = width != 0 ? width : W, seg = lane / w * w;
            bool any = false, all = true;
            u64 mask = 0;
            i64 count = 0, first = -1;
            for (i64 m = seg; m < seg + w && m < size; ++m) {
              const i64 from = l.at(slot, m);
              const bool q = pred(pattern, from, from % n, n, salt);
              any = any || q;
              all = all && q;
              if (q) {
                mask |= u64{1} << (m - seg);
                ++count;
                if (first < 0) first = m - seg;
              }
            }
            const i64 g_any = got[static_cast<std::size_t>(slot * per + k)];
            const i64 g_all = got[static_cast<std::size_t>(slot * per + k + 1)];
            const u64 g_ballot = static_cast<u64>(got[static_cast<std::size_t>(slot * per + k + 2)]);
            k += 3;
            const std::string at = "pattern " + std::to_string(pattern) + ", width " + std::to_string(width) +
                                   ", slot " + std::to_string(slot) + " (lane " + std::to_string(lane) + " of " +
                                   std::to_string(size) + "): ";
            if (g_any != (any ? 1 : 0)) bad.add(at + "any = " + std::to_string(g_any));
            if (g_all != (all ? 1 : 0)) bad.add(at + "all = " + std::to_string(g_all));
            if (g_ballot != mask)
              bad.add(at + "ballot = " + std::to_string(g_ballot) + ", expected " + std::to_string(mask));
            // What the spec derives from the mask: the count, and the first lane.
            if (std::popcount(g_ballot) != count) bad.add(at + "count_ones(ballot) is not the number of true preds");
            if (g_ballot != 0) {
              ++nonzero_ballots;
              if (std::countr_zero(g_ballot) != first) bad.add(at + "trailing_zeros(ballot) is not the first lane");
            }
          }
        }
      }
      bad.check("votes");
      CHECK(nonzero_ballots > 0);
      sg::against_reference(b, result, run, sg::none_unspecified, sg::equal_to{});
    }
  }
}
