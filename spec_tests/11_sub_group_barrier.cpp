// Spec: sub_group_barrier() and sub_group_barrier(width):
//   "wait until all work-items of the sub-group have reached the barrier, and make their writes
//   to global and local memory before it visible to the sub-group."
//   with a width: "for the work-items of the caller's segment of width consecutive lanes of the
//   sub-group ... wait until they have reached the barrier, and make their writes to global and
//   local memory before it visible to the segment."
// Each work-item writes a value to the slot of its lane, passes the barrier, and reads the slot
// of another lane of its sub-group (or segment); a second barrier keeps the next round's writes
// from overtaking the reads. Without the barrier the reads would see stale values or fresh
// (uninitialised) memory. Slots are sub-group id * W + lane (the spec's advice for any layout).
// Not tested: "It doesn't order memory with other segments" promises nothing to observe.
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_barrier {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

constexpr i64 rounds = 3;
constexpr i64 max_slots = 1024;  // sub-group slots per work-group that local memory has room for

KI_DEVICE inline i64 value(i64 slot, i64 round, i64 width) { return slot * 1000 + round * 100 + width; }

/// The lane whose slot the caller reads in `round`: the next ones, cyclically, within the
/// work-items of its segment [seg, end).
KI_DEVICE inline i64 partner(i64 lane, i64 seg, i64 end, i64 round) {
  return seg + (lane - seg + 1 + round) % (end - seg);
}

/// Results per work-item: rounds for no width, then rounds for each power of two, for local
/// memory and for global memory.
inline i64 results_per_item(i64 W) { return 2 * rounds * (1 + static_cast<i64>(std::bit_width(static_cast<u64>(W)))); }

struct exchange {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<i64> scratch, ki::span<i64> out) const {
    auto local = ki::localmemory<i64, max_slots>([] {});
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 W = ki::get_max_sub_group_size(), lane = ki::get_sub_group_local_id(), size = ki::get_sub_group_size();
    const i64 base = ki::get_sub_group_id() * W, global_base = p.group * max_slots + base;
    i64 per = 1;
    for (i64 w = 1; w <= W; w *= 2) ++per;
    i64* o = &out[p.slot * 2 * rounds * per];
    i64 k = 0;
    for (i64 width = 0; width <= W; width = width == 0 ? 1 : 2 * width) {
      const i64 w = width == 0 ? W : width, seg = lane / w * w, end = seg + w < size ? seg + w : size;
      for (i64 r = 0; r < rounds; ++r) {
        local[base + lane] = value(p.slot, r, width);
        scratch[global_base + lane] = -value(p.slot, r, width);
        if (width == 0) ki::sub_group_barrier();
        else ki::sub_group_barrier(width);
        const i64 from = partner(lane, seg, end, r);
        o[k++] = local[base + from];
        o[k++] = scratch[global_base + from];
        if (width == 0) ki::sub_group_barrier();
        else ki::sub_group_barrier(static_cast<std::uint8_t>(width));
      }
    }
  }
};

}  // namespace ki_spec_sub_group_barrier

using namespace ki_spec_sub_group_barrier;

TEMPLATE_LIST_TEST_CASE(
    "sub_group: sub_group_barrier makes writes to local and global memory visible to the "
    "sub-group (with a width: to the segment)",
    "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b), per = results_per_item(W);
    for (const auto& s : sg::shapes(b)) {
      // Room for a slot per lane of every sub-group, for a few more sub-groups than the minimum
      // (checked below against the number the work-items observed).
      REQUIRE(s.items() + 3 * W <= max_slots);  // sg::shapes(): at most 4 W + 4 work-items, W <= 64
      KI_INFO(cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups;
      auto run = [&](const auto& be) {
        auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
        auto scratch = ki::allocate<i64>(be, s.groups * max_slots);  // uninitialised, as local memory
        auto out = ki_test::filled<i64>(be, total * per, 0);
        ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, exchange{}, rec, scratch, out);
        return sg::launch_result<i64>{ki_test::read(be, rec), ki_test::read(be, out)};
      };
      const auto result = run(b);
      const auto l = sg::observe(b, s, result.rec);
      if (!l.ok) continue;
      std::size_t too_many = 0;
      for (const auto& [key, m] : l.members)
        if ((key.second + 1) * W > max_slots) ++too_many;
      REQUIRE(too_many == 0);
      const auto& got = result.out;
      sg::mismatches bad;
      for (i64 slot = 0; slot < total; ++slot) {
        const i64 lane = l.lane_of(slot), size = l.size_of(slot);
        i64 k = 0;
        for (i64 width = 0; width <= W; width = width == 0 ? 1 : 2 * width) {
          const i64 w = width == 0 ? W : width, seg = lane / w * w, end = seg + w < size ? seg + w : size;
          for (i64 r = 0; r < rounds; ++r) {
            const i64 from = l.at(slot, partner(lane, seg, end, r));
            const i64 want = value(from, r, width);
            const std::string at = "width " + std::to_string(width) + ", round " + std::to_string(r) + ", slot " +
                                   std::to_string(slot) + " (lane " + std::to_string(lane) + " of " +
                                   std::to_string(size) + "): ";
            const i64 loc = got[static_cast<std::size_t>(slot * per + k)];
            const i64 glo = got[static_cast<std::size_t>(slot * per + k + 1)];
            if (loc != want)
              bad.add(at + "local memory read " + std::to_string(loc) + ", expected " + std::to_string(want));
            if (glo != -want)
              bad.add(at + "global memory read " + std::to_string(glo) + ", expected " + std::to_string(-want));
            k += 2;
          }
        }
      }
      bad.check("sub_group_barrier");
      sg::against_reference(b, result, run, sg::none_unspecified, sg::equal_to{});
    }
  }
}
