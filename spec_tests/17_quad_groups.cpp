// Metal's quad-group functions (ki/quad.hpp): "The quad_* versions do the same within
// quad-groups of four threads": quad_shuffle, quad_shuffle_up/down/xor, quad_ballot, quad_all,
// quad_any. Each work-item computes every quad function and its width-4 sub-group form; the host
// checks that both agree and computes the expected values itself from the recorded layout (any
// layout): the source lane within the caller's quad, its own value where the source is outside
// the quad, nothing asserted where the source lane has no work-item (unspecified).
#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include <ki/quad.hpp>

#include "sub_groups.hpp"

namespace ki_spec_quad_groups {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

/// Per work-item: for each of the 13 shuffles (shuffle with a lane that differs per work-item,
/// down/up by 1-3, xor by 0-3) the quad form and the width-4 form, then ballot, all, any of two
/// predicates, each twice (quad, width 4).
constexpr i64 shuffles = 1 + 3 + 3 + 4, votes = 2 * 3, per = 2 * shuffles + 2 * votes;

KI_DEVICE inline i64 value_of(i64 slot, u64 salt) { return static_cast<i64>(sg::mix(static_cast<u64>(slot) ^ salt)); }
KI_DEVICE inline bool pred(int p, i64 slot, u64 salt) {
  return p == 0 ? (sg::mix(static_cast<u64>(slot) + salt) & 1) != 0 : slot % 5 != 0;
}

struct quads {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<i64> out, u64 salt) const {
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 v = value_of(p.slot, salt);
    const int lane = static_cast<int>(ki::get_sub_group_local_id());
    i64* o = &out[p.slot * per];
    i64 k = 0;
    const int src = (lane * 3 + 1) % 4;
    o[k++] = ki::quad_shuffle(v, src);
    o[k++] = ki::shfl(v, src, 4);
    for (int d = 1; d <= 3; ++d) {
      o[k++] = ki::quad_shuffle_down(v, d);
      o[k++] = ki::shfl_down(v, d, 4);
    }
    for (int d = 1; d <= 3; ++d) {
      o[k++] = ki::quad_shuffle_up(v, d);
      o[k++] = ki::shfl_up(v, d, 4);
    }
    for (int m = 0; m <= 3; ++m) {
      o[k++] = ki::quad_shuffle_xor(v, m);
      o[k++] = ki::shfl_xor(v, m, 4);
    }
    for (int q = 0; q < 2; ++q) {
      const bool b = pred(q, p.slot, salt);
      o[k++] = static_cast<i64>(ki::quad_ballot(b));
      o[k++] = static_cast<i64>(ki::sub_group_ballot(b, 4));
      o[k++] = ki::quad_all(b) ? 1 : 0;
      o[k++] = ki::sub_group_all(b, 4) ? 1 : 0;
      o[k++] = ki::quad_any(b) ? 1 : 0;
      o[k++] = ki::sub_group_any(b, 4) ? 1 : 0;
    }
  }
};

/// A quad function on a sub-group narrower than 4.
struct narrow {
  static constexpr unsigned line = __LINE__ + 1;
  KI_DEVICE void operator()(ki::span<i64> out) const { out[0] = ki::quad_shuffle_xor(i64{1}, 1); }
};

}  // namespace ki_spec_quad_groups

using namespace ki_spec_quad_groups;

TEMPLATE_LIST_TEST_CASE("quad: the quad_* functions are the width-4 forms, within quads of four lanes", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  i64 checked = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b);
    if (W < 4) continue;  // (the next test case: an error)
    for (const auto& s : sg::shapes(b)) {
      KI_INFO(cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups;
      const u64 salt = static_cast<u64>(97 * W + s.items());
      auto rec = ki_test::filled<i64>(b, total * sg::fields, -1);
      auto out = ki_test::filled<i64>(b, total * per, -1);
      ki::launch(b, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, quads{}, rec, out, salt);
      const auto l = sg::observe(b, s, ki_test::read(b, rec));
      if (!l.ok) continue;
      const auto got = ki_test::read(b, out);
      sg::mismatches bad;
      for (i64 slot = 0; slot < total; ++slot) {
        const i64 lane = l.lane_of(slot), size = l.size_of(slot), quad = lane / 4 * 4;
        const auto g = [&](i64 k) { return got[static_cast<std::size_t>(slot * per + k)]; };
        const std::string at =
            "slot " + std::to_string(slot) + " (lane " + std::to_string(lane) + " of " + std::to_string(size) + "): ";
        // src: the lane read, or own (outside the quad); no work-item there: unspecified.
        const auto expect_shuffle = [&](i64 k, i64 src, const std::string& what) {
          const i64 from = src == sg::own ? slot : (src < size ? l.at(slot, src) : -1);
          if (from < 0) return;  // unspecified (the oracle's poison may differ from call to call)
          ++checked;
          if (g(k) != g(k + 1)) bad.add(at + what + ": the quad form differs from the width-4 form");
          if (g(k) != value_of(from, salt)) bad.add(at + what + " read the wrong lane");
        };
        i64 k = 0;
        expect_shuffle(k, quad + (lane * 3 + 1) % 4, "quad_shuffle");
        k += 2;
        for (i64 d = 1; d <= 3; ++d, k += 2)
          expect_shuffle(k, lane + d < quad + 4 ? lane + d : sg::own, "quad_shuffle_down " + std::to_string(d));
        for (i64 d = 1; d <= 3; ++d, k += 2)
          expect_shuffle(k, lane - d >= quad ? lane - d : sg::own, "quad_shuffle_up " + std::to_string(d));
        for (i64 m = 0; m <= 3; ++m, k += 2) expect_shuffle(k, lane ^ m, "quad_shuffle_xor " + std::to_string(m));
        for (int q = 0; q < 2; ++q, k += 6) {
          u64 mask = 0;
          for (i64 m = quad; m < quad + 4 && m < size; ++m)
            if (pred(q, l.at(slot, m), salt)) mask |= u64{1} << (m - quad);
          const u64 present = size >= quad + 4 ? 0xF : (u64{1} << (size - quad)) - 1;
          for (i64 j = 0; j < 6; j += 2)
            if (g(k + j) != g(k + j + 1)) bad.add(at + "a quad vote differs from its width-4 form");
          if (static_cast<u64>(g(k)) != mask) bad.add(at + "quad_ballot = " + std::to_string(g(k)));
          if (g(k + 2) != (mask == present ? 1 : 0)) bad.add(at + "quad_all");
          if (g(k + 4) != (mask != 0 ? 1 : 0)) bad.add(at + "quad_any");
        }
      }
      bad.check("quad functions");
    }
  }
  CHECK(checked > 0);
}

TEMPLATE_LIST_TEST_CASE("quad: on a sub-group narrower than four lanes a quad function is an error naming width = 4",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  i64 narrow_variants = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    if (ki::sub_group_size(b) >= 4) continue;
    ++narrow_variants;
    KI_INFO(cfg::describe(b));
    auto out = ki_test::filled<i64>(b, 1, -1);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 1}, narrow{}, out);
    try {
      ki::synchronize(b);
      FAIL("no error for a width of 4 on a narrower sub-group");
    } catch (const ki::kernel_error& e) {
      KI_INFO(e.what());
      CHECK(std::string(e.what()).find("width = 4") != std::string::npos);
      CHECK(std::string(e.what()).find("17_quad_groups.cpp:" + std::to_string(narrow::line)) != std::string::npos);
    }
  }
  // GPUs have sub-groups of 32 or 64 lanes: nothing to check there.
  if (narrow_variants == 0) SUCCEED("no variant of this backend has sub-groups narrower than 4");
}
