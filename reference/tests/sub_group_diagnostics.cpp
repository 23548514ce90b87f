// The oracle's diagnostics for sub-groups (DESIGN.md, "Unspecified is visible", "Errors are
// precise"; docs/sub-groups.md, "The rules the oracle checks"):
//   - a read of a lane without a work-item is legal, and reported as a warning with the call
//     site and the exact number of such reads in the launch;
//   - misuse is a ki::kernel_error at synchronize: a sub-group whose work-items do not all
//     execute a function (cannot_finish), participants that disagree on offset, mask, width,
//     init or function (collective_mismatch), a bad width, offset or mask (invalid_collective),
//     sub-groups executing different sequences without independent sub-groups, segments
//     diverging without partitionable sub-groups;
//   - profiles: unknown preset names and impossible profiles are std::invalid_argument.
//
// Line numbers are checked against __LINE__: each kernel records the line of each call in a
// `static constexpr unsigned line_... = __LINE__ + k` a fixed number of lines above it.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "test_support.hpp"

namespace {

using i64 = std::int64_t;
using u64 = std::uint64_t;
using xyz = ki::xyz<i64>;
using kind = ki::kernel_error::kind;
using Catch::Matchers::ContainsSubstring;

ki::reference::profile preset(const char* name) { return ki::reference::profile::preset(name); }

using ki_test::oracle::sync_error;
/// Call sites as the oracle prints them: "sub_group_diagnostics.cpp:<line>".
constexpr ki_test::oracle::source_file this_file{"sub_group_diagnostics.cpp"};

struct plus {
  i64 operator()(i64 x, i64 y) const { return x + y; }
};
struct max_op {
  i64 operator()(i64 x, i64 y) const { return x < y ? y : x; }
};
struct add_k {  // an operator with state: the same type, another k, is another operator
  i64 k;
  i64 operator()(i64 x, i64 y) const { return x + y + k; }
};

// --- unspecified reads ------------------------------------------------------------------------

/// Records (sub-group id, lane, size) per work-item, then shuffles that read lanes without a
/// work-item in partial sub-groups, and functions that never do.
struct unspecified_reads {
  static constexpr unsigned line_shfl = __LINE__ + 10, line_down = __LINE__ + 11, line_xor = __LINE__ + 12;
  void operator()(ki::span<i64> rec, ki::span<i64> out) const {
    const auto l = ki::get_local_id(), ls = ki::get_local_size();
    const i64 slot = ki::get_group_id().x * ls.x * ls.y + l.x + ls.x * l.y;
    rec[3 * slot] = ki::get_sub_group_id();
    rec[3 * slot + 1] = ki::get_sub_group_local_id();
    rec[3 * slot + 2] = ki::get_sub_group_size();
    const i64 W = ki::get_max_sub_group_size(), v = slot;
    // Unsigned: a lane without a work-item gives the oracle's poison, whose sum overflows.
    std::uint64_t r = 0;
    r += static_cast<std::uint64_t>(ki::shfl(v, W - 1));
    r += static_cast<std::uint64_t>(ki::shfl_down(v, 4));
    r += static_cast<std::uint64_t>(ki::shfl_xor(v, W / 2, W));
    r += static_cast<std::uint64_t>(ki::sub_group_reduce(plus{}, v)) + static_cast<std::uint64_t>(ki::shfl(v, 0)) +
         static_cast<std::uint64_t>(ki::shfl_up(v, 3)) + ki::sub_group_ballot(true);
    out[slot] = static_cast<i64>(r);
  }
};

/// The expected counts per call site, from the layout the work-items observed.
struct expected_counts {
  i64 shfl = 0, down = 0, xor_ = 0;
};
expected_counts count_unspecified(const std::vector<i64>& rec, i64 W) {
  expected_counts e;
  for (std::size_t i = 0; i + 2 < rec.size(); i += 3) {
    const i64 lane = rec[i + 1], size = rec[i + 2];
    if (W - 1 >= size) ++e.shfl;                     // lane W - 1 has no work-item
    if (lane + 4 < W && lane + 4 >= size) ++e.down;  // within the width, no work-item
    if ((lane ^ (W / 2)) >= size) ++e.xor_;
  }
  return e;
}

void check_warnings(const ki::reference::backend& b, std::array<i64, 3> groups_items, const char* poison_text) {
  const i64 groups = groups_items[0], nx = groups_items[1], ny = groups_items[2], total = groups * nx * ny;
  const i64 W = b.device.sub_group_width;
  (void)ki::reference::take_warnings();  // earlier launches' warnings
  auto rec = ki::zeros<i64>(b, 3 * total);
  auto out = ki::zeros<i64>(b, total);
  ki::launch(b, {.numgroups = groups, .workgroupsize = {nx, ny}}, unspecified_reads{}, rec, out);
  ki::synchronize(b);
  const auto e = count_unspecified(ki::to_host(b, rec), W);
  const auto warnings = ki::reference::take_warnings();
  std::map<unsigned, const ki::reference::warning*> by_line;
  for (const auto& w : warnings) {
    INFO("warning at " << w.where << ": " << w.message);
    CHECK(w.kind == "unspecified-lane-read");
    bool known = false;
    for (unsigned line : {unspecified_reads::line_shfl, unspecified_reads::line_down, unspecified_reads::line_xor})
      if (this_file.at_line(w.where, line)) by_line[line] = &w, known = true;
    CHECK(known);  // no warning for functions that read no empty lane
    CHECK_THAT(w.message, ContainsSubstring(poison_text));
    CHECK_THAT(w.message, ContainsSubstring(std::to_string(w.count) + (w.count == 1 ? " time" : " times")));
  }
  const std::pair<unsigned, i64> want[] = {{unspecified_reads::line_shfl, e.shfl},
                                           {unspecified_reads::line_down, e.down},
                                           {unspecified_reads::line_xor, e.xor_}};
  for (const auto& [line, count] : want) {
    INFO("call at line " << line << ": " << count << " reads of lanes without a work-item");
    if (count == 0) {
      CHECK(by_line.count(line) == 0);
    } else {
      REQUIRE(by_line.count(line) == 1);
      CHECK(by_line[line]->count == count);
      CHECK_THAT(by_line[line]->message, ContainsSubstring(line == unspecified_reads::line_shfl   ? "shfl at "
                                                           : line == unspecified_reads::line_down ? "shfl_down at "
                                                                                                  : "shfl_xor at "));
    }
  }
  CHECK(ki::reference::take_warnings().empty());  // taken
}

// --- divergence and disagreement --------------------------------------------------------------

/// Items below `participants` (linear local id) shuffle; the others exit.
struct divergent_shuffle {
  static constexpr unsigned line = __LINE__ + 4;
  i64 participants;
  void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x;
    if (l < participants) out[l] = ki::shfl(l, 0);
  }
};

/// Widths that differ between the work-items of a sub-group (mode 0: 16 for lanes 0-15, 8 for
/// the others, segments that tile the sub-group; mode 1: 4 for lanes 0-3, 8 for the others),
/// and widths that are right: the same for every lane, changing from one execution to the next
/// (mode 2, a butterfly), with segments that loop different numbers of times (mode 3).
struct segment_widths {
  static constexpr unsigned line = __LINE__ + 6;
  int mode;
  void operator()(ki::span<i64> out) const {
    const i64 lane = ki::get_sub_group_local_id();
    i64 v = lane;
    if (mode < 2) {
      v = ki::shfl(v, 0, mode == 0 ? (lane < 16 ? 16 : 8) : (lane < 4 ? 4 : 8));
    } else if (mode == 2) {
      for (int w = 2; w <= 32; w *= 2) v += ki::shfl_xor(v, 1, w);
    } else {
      for (i64 k = 0; k <= lane / 8; ++k) v += ki::shfl_down(v, 1, 8);
    }
    out[ki::get_local_id().x] = v;
  }
};

/// Sub-group matrix operations (ki/sub_group_matrix.hpp) in a divergent branch: lanes 0-3
/// multiply and the others skip it (mode 0) or store instead (mode 1).
// clang-format off
struct divergent_matrix {
  static constexpr unsigned line_mul = __LINE__ + 5, line_store = __LINE__ + 6;
  int mode;
  void operator()(ki::span<float> out) const {
    const auto a = ki::sub_group_matrix<float>::filled(1.0f);
    auto c = a;
    if (ki::get_sub_group_local_id() < 4) c = ki::multiply(a, a);
    else if (mode == 1) ki::sub_group_store(a, out);
  }
};
// clang-format on

/// Lanes 0-3 pass one argument, the others another: which one is `what`.
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
struct disagreeing {
  static constexpr unsigned base = __LINE__;
  static constexpr unsigned line_down = base + 8, line_xor = base + 9, line_width = base + 10, line_init = base + 11,
                            line_a = base + 13, line_b = base + 15;
  int what;
  void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, lane = ki::get_sub_group_local_id();
    const bool low = lane < 4;
    i64 r = 0;
    if (what == 0) r = ki::shfl_down(l, low ? 1 : 2);
    if (what == 1) r = ki::shfl_xor(l, low ? 1 : 3);
    if (what == 2) r = ki::shfl(l, 0, low ? 4 : 8);
    if (what == 3) r = ki::sub_group_exclusive_scan(plus{}, l, low ? i64{0} : i64{1});
    if (what == 4) {
      if (low) r = ki::shfl(l, 1);
      else
        r = ki::shfl_up(l, 1);
    }
    if (what == 5) r = ki::shfl_up(l, low ? 1 : 2);
    if (what == 6) r = ki::shfl_down(l, low ? 1 : 2, 8);
    if (what == 7) r = ki::shfl_xor(l, low ? 1 : 3, 8);
    if (what == 8) {  // one call site (the same location), two operators
      const auto at = ki::source_location::current();
      r = low ? ki::sub_group_reduce(plus{}, l, at) : ki::sub_group_reduce(max_op{}, l, at);
    }
    if (what == 9) r = ki::sub_group_reduce(add_k{low ? 0 : 1}, l);
    if (what == 10) r = ki::sub_group_reduce(add_k{2}, l);  // (the same state: no error)
    if (what == 11) {  // a closure capturing by reference: its state is not compared (no error)
      const i64 k = 0;
      r = ki::sub_group_reduce([&](i64 x, i64 y) { return x + y + k; }, l);
    }
    out[l] = r;
  }
};
// clang-format on
/// The lines of cases 5-8 of disagreeing, counted from its base like the others.
constexpr unsigned line_up = disagreeing::base + 17, line_down_w = disagreeing::base + 18,
                   line_xor_w = disagreeing::base + 19, line_op = disagreeing::base + 21,
                   line_op_state = disagreeing::base + 24;

/// A struct with padding, whose init values differ in a field (an error) or only in the
/// padding bytes (the same value: no error).
struct padded {
  std::int8_t key;
  std::int32_t tag;
  bool operator==(const padded& o) const { return key == o.key && tag == o.tag; }
};
struct padded_min {
  padded operator()(const padded& x, const padded& y) const { return y.key < x.key ? y : x; }
};
struct padded_inits {
  static constexpr unsigned line = __LINE__ + 9;
  bool differ_in_value;
  void operator()(ki::span<std::int32_t> out) const {
    const i64 l = ki::get_local_id().x, lane = ki::get_sub_group_local_id();
    padded init, v;
    std::memset(&init, static_cast<int>(lane + 1), sizeof init);  // padding bytes differ by lane
    std::memset(&v, 0, sizeof v);
    init.key = static_cast<std::int8_t>(differ_in_value && lane == 5 ? 2 : 1), init.tag = -1;
    v.key = static_cast<std::int8_t>(l % 3), v.tag = static_cast<std::int32_t>(l);
    out[l] = ki::sub_group_exclusive_scan(padded_min{}, v, init).tag;
  }
};

// --- invalid arguments ------------------------------------------------------------------------

/// Call number `which` with a bad width, offset or mask, after a valid shuffle.
struct invalid_call {
  static constexpr unsigned line_first = __LINE__ + 6;  // the calls are on consecutive lines
  int which;
  void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x;
    i64 r = ki::shfl(l, 0);
    switch (which) {
      case 0: r += ki::shfl(l, 0, 3); break;
      case 1: r += ki::shfl_down(l, 1, 64); break;
      case 2: r += ki::sub_group_any(true, 0) ? 1 : 0; break;
      case 3: r += ki::shfl_up(l, 1, -4); break;
      case 4: r += ki::sub_group_reduce(plus{}, l, std::numeric_limits<u64>::max()); break;
      case 5: ki::sub_group_barrier(12); break;
      case 6: r += ki::shfl_down(l, -1); break;
      case 7: r += ki::shfl_up(l, std::numeric_limits<i64>::min()); break;
      case 8: r += ki::shfl_xor(l, 32); break;
      case 9: r += ki::shfl_xor(l, 4, 4); break;
      case 10: r += ki::shfl_xor(l, -1); break;
      case 11: r += ki::shfl_xor(l, std::numeric_limits<u64>::max()); break;
      case 12: r += static_cast<i64>(ki::sub_group_ballot(true, 48)); break;
      case 13: r += ki::sub_group_exclusive_scan(plus{}, l, i64{0}, 2u * 64u); break;
      case 14: r += ki::shfl(l, 0, -1); break;
      case 15: r += ki::shfl(l, 0, -2); break;
      case 16: r += ki::shfl_xor(l, 1, 3); break;
      case 17: r += ki::sub_group_all(true, 64) ? 1 : 0; break;
      case 18: r += ki::sub_group_scan(plus{}, l, 0); break;
      case 19: r += ki::sub_group_scan(plus{}, l, -8); break;
      default: break;
    }
    out[l] = r;
  }
};

// --- participation ----------------------------------------------------------------------------

/// Sub-group 0 executes one function, the others another (or the same one more often).
struct different_sequences {
  static constexpr unsigned line_a = __LINE__ + 6, line_b = __LINE__ + 8, line_c = __LINE__ + 9;
  bool different_lengths;
  void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, id = ki::get_sub_group_id();
    i64 r = 0;
    if (!different_lengths) {
      r = id == 0 ? ki::shfl(l, 0) : static_cast<i64>(ki::sub_group_any(l % 2 == 0));
    } else {
      r = ki::shfl(l, 0);
      if (id == 0) r += ki::shfl_xor(l, 1);
    }
    out[l] = r;
  }
};

/// Only the segment of lanes 0-3 (width 4) shuffles; or every segment does, segment 0 twice.
struct segment_only {
  static constexpr unsigned line = __LINE__ + 7;
  bool loop;
  void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, lane = ki::get_sub_group_local_id();
    i64 v = l;
    const i64 trips = loop ? (lane < 4 ? 2 : 1) : (lane < 4 ? 1 : 0);
    for (i64 t = 0; t < trips; ++t) {
      v = ki::shfl(v, 1, 4) + 100;
    }
    out[l] = v;
  }
};

struct trivial {
  void operator()(ki::span<i64> out) const { out[ki::get_global_id().x] = ki::shfl(i64{7}, 0); }
};

}  // namespace

TEST_CASE("reading a lane without a work-item is a warning with the call site and the exact count",
          "[sub_group_diagnostics]") {
  SECTION("cuda preset: linear layout, the poison word") {
    for (int threads : {1, 0}) {
      INFO("threads = " << threads);
      const ki::reference::backend b{.device = preset("cuda"), .threads = threads, .print_warnings = false};
      // 1-D groups of 40 items: sub-group 1 has lanes 0-7 only. By hand: shfl(v, 31) reads no
      // work-item in those 8 lanes; shfl_down(v, 4) in lanes 4-7; shfl_xor(v, 16, 32) in all 8.
      check_warnings(b, {3, 40, 1}, "the poison word 0xFFBADBAD");
      const auto e = [&] {
        auto rec = ki::zeros<i64>(b, 3 * 120);
        auto out = ki::zeros<i64>(b, 120);
        ki::launch(b, {.numgroups = 3, .workgroupsize = 40}, unspecified_reads{}, rec, out);
        return count_unspecified(ki::to_host(b, rec), 32);
      }();
      (void)ki::reference::take_warnings();
      CHECK(e.shfl == 3 * 8);
      CHECK(e.down == 3 * 4);
      CHECK(e.xor_ == 3 * 8);
    }
  }
  SECTION("intel preset: adversarial layout of a 2-D group, several partial sub-groups") {
    check_warnings(ki::reference::backend{.device = preset("intel"), .print_warnings = false}, {4, 7, 5},
                   "the poison word 0xFFBADBAD");
  }
  SECTION("strict preset: seeded random poison") {
    check_warnings(ki::reference::backend{.device = preset("strict"), .threads = 1, .print_warnings = false}, {2, 9, 9},
                   "seeded random bytes");
  }
  SECTION("full sub-groups read no empty lane: no warning") {
    const ki::reference::backend b{.device = preset("cuda"), .print_warnings = false};
    (void)ki::reference::take_warnings();
    auto rec = ki::zeros<i64>(b, 3 * 128);
    auto out = ki::zeros<i64>(b, 128);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 64}, unspecified_reads{}, rec, out);
    ki::synchronize(b);
    CHECK(ki::reference::take_warnings().empty());
  }
  SECTION("one warning per call site and launch") {
    const ki::reference::backend b{.device = preset("cuda"), .print_warnings = false};
    (void)ki::reference::take_warnings();
    auto rec = ki::zeros<i64>(b, 3 * 10);
    auto out = ki::zeros<i64>(b, 10);
    for (int k = 0; k < 2; ++k) ki::launch(b, {.numgroups = 1, .workgroupsize = 10}, unspecified_reads{}, rec, out);
    ki::synchronize(b);
    const auto w = ki::reference::take_warnings();
    // Per launch: shfl(v, 31) in 10 lanes, shfl_down(v, 4) in lanes 6-9, shfl_xor(v, 16, 32) in 10.
    REQUIRE(w.size() == 6);
    i64 shfl = 0, down = 0, xor_ = 0;
    for (const auto& x : w) {
      if (this_file.at_line(x.where, unspecified_reads::line_shfl)) {
        shfl += x.count;
        CHECK(x.count == 10);
      }
      if (this_file.at_line(x.where, unspecified_reads::line_down)) {
        down += x.count;
        CHECK(x.count == 4);
      }
      if (this_file.at_line(x.where, unspecified_reads::line_xor)) {
        xor_ += x.count;
        CHECK(x.count == 10);
      }
    }
    CHECK(shfl == 20);
    CHECK(down == 8);
    CHECK(xor_ == 20);
  }
}

TEST_CASE("a shuffle that only part of a sub-group executes: cannot_finish names the items and the line",
          "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("cuda")};
  auto out = ki::zeros<i64>(b, 64);
  SECTION("one sub-group") {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, divergent_shuffle{3}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::cannot_finish);
    CHECK(e->group() == xyz{0, 0, 0});
    CHECK(e->local() == xyz{0, 0, 0});
    CHECK(this_file.at_line(e->where(), divergent_shuffle::line));
    const std::string what = e->what();
    CHECK(this_file.names(what, "items 0-2 wait at shfl ", divergent_shuffle::line));
    CHECK_THAT(what, ContainsSubstring("(sub-group 0)"));
    CHECK_THAT(what, ContainsSubstring("items 3-7 exited"));
  }
  SECTION("the second, partial sub-group") {
    ki::launch(b, {.numgroups = 1, .workgroupsize = 40}, divergent_shuffle{36}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::cannot_finish);
    CHECK(e->local() == xyz{32, 0, 0});
    const std::string what = e->what();
    CHECK(this_file.names(what, "items 32-35 wait at shfl ", divergent_shuffle::line));
    CHECK_THAT(what, ContainsSubstring("(sub-group 1)"));
    CHECK_THAT(what, ContainsSubstring("items 0-31, 36-39 exited"));
  }
  // The backend stays usable.
  ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, divergent_shuffle{8}, out);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out)[5] == 0);
}

TEST_CASE("participants that disagree: collective_mismatch names both lanes and values", "[sub_group_diagnostics]") {
  // amd-wave32: W = 32, linear, not partitionable, so that the 16 work-items execute every
  // function (also those with a width) together as one sub-group.
  const ki::reference::backend b{.device = preset("amd-wave32")};
  REQUIRE_FALSE(ki::supports_partitionable_subgroups(b));
  auto out = ki::zeros<i64>(b, 32);
  struct expectation {
    int what;
    unsigned line;
    std::string text;
  };
  const expectation cases[] = {
      {0, disagreeing::line_down,
       "shfl_down at " + this_file.loc(disagreeing::line_down) + ": offset differs: lane 0 passes 1, lane 4 passes 2"},
      {1, disagreeing::line_xor,
       "shfl_xor at " + this_file.loc(disagreeing::line_xor) + ": mask differs: lane 0 passes 1, lane 4 passes 3"},
      {2, disagreeing::line_width,
       "shfl at " + this_file.loc(disagreeing::line_width) + ": width differs: lane 0 passes 4, lane 4 passes 8"},
      {3, disagreeing::line_init,
       "sub_group_exclusive_scan at " + this_file.loc(disagreeing::line_init) + ": init differs"},
      {4, disagreeing::line_a,
       "the work-items execute different communication functions together: lane 0 is at shfl " +
           this_file.loc(disagreeing::line_a) + ", lane 4 at shfl_up " + this_file.loc(disagreeing::line_b)},
      {5, line_up, "shfl_up at " + this_file.loc(line_up) + ": offset differs: lane 0 passes 1, lane 4 passes 2"},
      {6, line_down_w,
       "shfl_down at " + this_file.loc(line_down_w) + ": offset differs: lane 0 passes 1, lane 4 passes 2"},
      {7, line_xor_w, "shfl_xor at " + this_file.loc(line_xor_w) + ": mask differs: lane 0 passes 1, lane 4 passes 3"},
      {8, line_op,
       "sub_group_reduce at " + this_file.loc(line_op) +
           ": operator differs: lane 0 passes plus, lane 4 passes max_op"},
      {9, line_op_state,
       "sub_group_reduce at " + this_file.loc(line_op_state) +
           ": operator differs (the same type, another state): lane 0 passes one add_k, lane 4 another"},
  };
  for (const auto& c : cases) {
    INFO("case " << c.what);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 16}, disagreeing{c.what}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::collective_mismatch);
    CHECK(e->group() == xyz{0, 0, 0});
    const std::string what = e->what();
    CHECK_THAT(what, ContainsSubstring("sub-group 0: " + c.text));
  }
  // The lane of shfl may differ: no error.
  ki::launch(b, {.numgroups = 1, .workgroupsize = 16}, divergent_shuffle{16}, out);
  ki::synchronize(b);
  // Operators of one type and one state, and closures (whose by-reference captures differ per
  // work-item): no error.
  for (const int what : {10, 11}) {
    INFO("case " << what);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 16}, disagreeing{what}, out);
    CHECK_NOTHROW(ki::synchronize(b));
  }
  // With partitionable sub-groups (cuda preset) each segment synchronises on its own, and the
  // widths are compared call site by call site: lane 4 passes another width than lane 0 did
  // (not "items 4-7 wait", the deadlock the segments would otherwise end in).
  const ki::reference::backend cuda{.device = preset("cuda")};
  ki::launch(cuda, {.numgroups = 1, .workgroupsize = 16}, disagreeing{2}, out);
  const auto e = sync_error(cuda);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::collective_mismatch);
  CHECK(this_file.names(e->what(), "shfl at ", disagreeing::line_width));
  CHECK_THAT(std::string(e->what()), ContainsSubstring("width differs: lane 0 passes 4, lane 4 passes 8"));
  // An offset or mask that differs inside a segment of a width is compared there too.
  for (const int what : {6, 7}) {
    INFO("case " << what << " on cuda");
    ki::launch(cuda, {.numgroups = 1, .workgroupsize = 16}, disagreeing{what}, out);
    const auto e2 = sync_error(cuda);
    REQUIRE(e2);
    CHECK(e2->error_kind() == kind::collective_mismatch);
    CHECK(e2->local() == xyz{4, 0, 0});
    CHECK_THAT(std::string(e2->what()),
               ContainsSubstring(what == 6 ? "offset differs: lane 0 passes 1, lane 4 passes 2"
                                           : "mask differs: lane 0 passes 1, lane 4 passes 3"));
  }
}

TEST_CASE("exclusive scan init: compared by value, not by padding bytes", "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("cuda")};
  auto out = ki::zeros<std::int32_t>(b, 12);
  // The same init in every work-item, with different padding bytes: a legal call.
  ki::launch(b, {.numgroups = 1, .workgroupsize = 12}, padded_inits{false}, out);
  ki::synchronize(b);
  const auto h = ki::to_host(b, out);
  // Keys l % 3 = 0, 1, 2, 0, ...: lane 0 gets init (tag -1), every later lane the first key 0 (lane 0).
  CHECK(h[0] == -1);
  for (std::size_t i = 1; i < h.size(); ++i) CHECK(h[i] == 0);
  // An init that differs in a field is still reported.
  ki::launch(b, {.numgroups = 1, .workgroupsize = 12}, padded_inits{true}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::collective_mismatch);
  CHECK(this_file.names(e->what(), "sub_group_exclusive_scan at ", padded_inits::line));
  CHECK_THAT(std::string(e->what()), ContainsSubstring("init differs"));
  CHECK_THAT(std::string(e->what()), ContainsSubstring("lane 5"));
}

TEST_CASE("a bad width, offset or mask: invalid_collective names the value and the line", "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("cuda")};  // W = 32
  auto out = ki::zeros<i64>(b, 32);
  const std::string width_rule = "must be a power of two between 1 and the sub-group width 32";
  const std::string texts[] = {
      "shfl: width = 3 " + width_rule,
      "shfl_down: width = 64 " + width_rule,
      "sub_group_any: width = 0 " + width_rule,
      "shfl_up: width = -4 " + width_rule,
      "sub_group_reduce: width = 18446744073709551615 " + width_rule,
      "sub_group_barrier: width = 12 " + width_rule,
      "shfl_down: offset = -1 must be at least 0",
      "shfl_up: offset = -9223372036854775808 must be at least 0",
      "shfl_xor: mask = 32 must be between 0 and 31 (the sub-group width - 1)",
      "shfl_xor: mask = 4 must be between 0 and 3 (width - 1)",
      "shfl_xor: mask = -1 must be between 0 and 31",
      "shfl_xor: mask = 18446744073709551615 must be between 0 and 31",
      "sub_group_ballot: width = 48 " + width_rule,
      "sub_group_exclusive_scan: width = 128 " + width_rule,
      "shfl: width = -1 " + width_rule,
      "shfl: width = -2 " + width_rule,
      "shfl_xor: width = 3 " + width_rule,
      "sub_group_all: width = 64 " + width_rule,
      "sub_group_scan: width = 0 " + width_rule,
      "sub_group_scan: width = -8 " + width_rule,
  };
  for (int which = 0; which < static_cast<int>(std::size(texts)); ++which) {
    INFO("call " << which);
    const unsigned line = invalid_call::line_first + static_cast<unsigned>(which);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, invalid_call{which}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::invalid_collective);
    CHECK(e->group() == xyz{0, 0, 0});
    const std::string what = e->what();
    // The first work-item to make the call (after the valid shfl: the last one released).
    CHECK(e->local().x >= 0);
    CHECK(e->local().x < 32);
    CHECK_THAT(what, ContainsSubstring("work-item (" + std::to_string(e->local().x) + ", 0, 0)"));
    CHECK(this_file.at_line(e->where(), line));
    CHECK_THAT(what, ContainsSubstring(texts[which]));
    CHECK(this_file.names(what, "(at ", line));
    CHECK_THAT(what, !ContainsSubstring("after barrier"));  // no barrier was passed at that line
  }
  ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, invalid_call{-1}, out);
  ki::synchronize(b);
}

TEST_CASE("without independent sub-groups, sub-groups executing different sequences: collective_mismatch",
          "[sub_group_diagnostics]") {
  // 64 work-items of a 2-D group (8 x 8): the strict preset (W = 16, adversarial) makes several
  // sub-groups.
  const ki::reference::backend strict{.device = preset("strict"), .threads = 1};
  REQUIRE_FALSE(ki::supports_independent_subgroups(strict));
  auto out = ki::zeros<i64>(strict, 64);
  SECTION("different functions") {
    ki::launch(strict, {.numgroups = 1, .workgroupsize = {8, 8}}, different_sequences{false}, out);
    const auto e = sync_error(strict);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::collective_mismatch);
    const std::string what = e->what();
    CHECK_THAT(what, ContainsSubstring("without independent sub-groups (profile 'strict')"));
    CHECK_THAT(what, ContainsSubstring("the same communication functions in the same order"));
    CHECK(this_file.names(what, "shfl at ", different_sequences::line_a));
    CHECK(this_file.names(what, "sub_group_any at ", different_sequences::line_a));
  }
  SECTION("different numbers of functions") {
    ki::launch(strict, {.numgroups = 1, .workgroupsize = {8, 8}}, different_sequences{true}, out);
    const auto e = sync_error(strict);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::collective_mismatch);
    const std::string what = e->what();
    CHECK_THAT(what, ContainsSubstring("without independent sub-groups (profile 'strict')"));
    CHECK_THAT(what, ContainsSubstring("executed 2"));
    CHECK_THAT(what, ContainsSubstring("executed 1"));
    CHECK(this_file.at_line(e->where(), different_sequences::line_c));
  }
  SECTION("with independent sub-groups (intel preset) the same kernels run") {
    const ki::reference::backend intel{.device = preset("intel"), .threads = 1};
    REQUIRE(ki::supports_independent_subgroups(intel));
    for (bool lengths : {false, true}) {
      ki::launch(intel, {.numgroups = 1, .workgroupsize = {8, 8}}, different_sequences{lengths}, out);
      CHECK_NOTHROW(ki::synchronize(intel));
    }
  }
}

TEST_CASE("without partitionable sub-groups, a width function executed by some segments only: cannot_finish",
          "[sub_group_diagnostics]") {
  ki::reference::backend amd{.device = preset("amd-wave32")};
  REQUIRE_FALSE(ki::supports_partitionable_subgroups(amd));
  auto out = ki::zeros<i64>(amd, 32);
  SECTION("other segments skip it") {
    ki::launch(amd, {.numgroups = 1, .workgroupsize = 32}, segment_only{false}, out);
    const auto e = sync_error(amd);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::cannot_finish);
    CHECK(this_file.at_line(e->where(), segment_only::line));
    const std::string what = e->what();
    CHECK(this_file.names(what, "items 0-3 wait at shfl ", segment_only::line));
    CHECK_THAT(what, ContainsSubstring("items 4-31 exited"));
  }
  SECTION("segment 0 loops once more") {
    ki::launch(amd, {.numgroups = 1, .workgroupsize = 32}, segment_only{true}, out);
    const auto e = sync_error(amd);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::cannot_finish);
    CHECK(this_file.names(e->what(), "items 0-3 wait at shfl ", segment_only::line));
  }
  SECTION("with partitionable sub-groups (cuda preset) the same kernels work") {
    const ki::reference::backend cuda{.device = preset("cuda")};
    REQUIRE(ki::supports_partitionable_subgroups(cuda));
    for (bool loop : {false, true}) {
      INFO("loop " << loop);
      ki::launch(cuda, {.numgroups = 1, .workgroupsize = 32}, segment_only{loop}, out);
      const auto h = ki::to_host(cuda, out);
      // Segment 0 (items 0-3) reads lane 1 of its segment: 1 + 100, then (loop) 101 + 100.
      for (i64 l = 0; l < 32; ++l) {
        const i64 want = l < 4 ? (loop ? 201 : 101) : (loop ? 4 * (l / 4) + 1 + 100 : l);
        CHECK(h[static_cast<std::size_t>(l)] == want);
      }
    }
  }
}

TEST_CASE("profiles: unknown preset names and impossible profiles are std::invalid_argument",
          "[sub_group_diagnostics]") {
  try {
    (void)ki::reference::profile::preset("no-such-device");
    FAIL("nothing was thrown");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("'no-such-device'"));
    std::string known;  // every preset, in the table's order
    for (const auto& p : ki::reference::profile::presets()) known += (known.empty() ? "" : ", ") + std::string(p.name);
    CHECK_THAT(std::string(e.what()), ContainsSubstring("(known: " + known + ")"));
  }
  for (const auto& p : ki::reference::profile::presets())
    CHECK(std::string(ki::reference::profile::preset(p.name).name) == p.name);

  auto launch_with = [](const ki::reference::profile& p) {
    const ki::reference::backend b{.device = p, .threads = 1};
    auto out = ki::zeros<i64>(b, 4);
    try {
      ki::launch(b, {.numgroups = 1, .workgroupsize = 4}, trivial{}, out);
    } catch (const std::invalid_argument& e) {
      ki::synchronize(b);  // nothing was queued
      return std::string(e.what());
    }
    ki::synchronize(b);
    return std::string("<nothing thrown>");
  };
  for (std::int64_t w : {12, 0, 128, -32, 3}) {
    INFO("sub_group_width = " << w);
    auto p = preset("cuda");
    p.sub_group_width = w;
    CHECK_THAT(launch_with(p), ContainsSubstring("sub_group_width = " + std::to_string(w) +
                                                 " must be a power of two between 1 and 64"));
  }
  auto p = preset("cuda");
  p.independent_subgroups = false;  // partitionable stays true
  CHECK_THAT(launch_with(p), ContainsSubstring("partitionable_subgroups implies independent_subgroups"));
  CHECK_THAT(launch_with(preset("strict")), ContainsSubstring("<nothing thrown>"));
}

// Run by CTest with KI_REFERENCE_PROFILE=no-such-device (hidden otherwise: see CMakeLists.txt).
TEST_CASE("KI_REFERENCE_PROFILE with an unknown name is std::invalid_argument naming it", "[.unknown_profile_env]") {
  const char* v = std::getenv("KI_REFERENCE_PROFILE");
  REQUIRE(v != nullptr);
  REQUIRE(std::string(v) == "no-such-device");
  try {
    (void)ki::reference::profile::from_environment();
    FAIL("nothing was thrown");
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("'no-such-device'"));
  }
  // The default backend reads the variable too.
  try {
    const ki::reference::backend b{};
    FAIL("nothing was thrown, the device is " << b.device.name);
  } catch (const std::invalid_argument& e) {
    CHECK_THAT(std::string(e.what()), ContainsSubstring("'no-such-device'"));
  }
}

TEST_CASE("sub-group matrix operations are collectives: divergence and different operations are named with lines",
          "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("amd-wave32")};
  auto out = ki::zeros<float>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, divergent_matrix{0}, out);
  auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::cannot_finish);
  CHECK(this_file.names(e->what(), "items 0-3 wait at shfl ", divergent_matrix::line_mul));
  CHECK_THAT(std::string(e->what()), ContainsSubstring("items 4-31 exited"));
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, divergent_matrix{1}, out);
  e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::collective_mismatch);
  CHECK_THAT(std::string(e->what()),
             ContainsSubstring("lane 0 is at shfl " + this_file.loc(divergent_matrix::line_mul) +
                               ", lane 4 at sub_group_all " + this_file.loc(divergent_matrix::line_store)));
}

TEST_CASE(
    "partitionable sub-groups: a width that differs between work-items of a sub-group names both widths and lanes",
    "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("cuda")};
  REQUIRE(ki::supports_partitionable_subgroups(b));
  auto out = ki::zeros<i64>(b, 32);
  const std::string want[] = {"width differs: lane 0 passes 16, lane 16 passes 8",
                              "width differs: lane 0 passes 4, lane 4 passes 8"};
  for (int mode = 0; mode < 2; ++mode) {
    INFO("mode " << mode);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, segment_widths{mode}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::collective_mismatch);
    const std::string what = e->what();
    CHECK(this_file.names(what, "sub-group 0: shfl at ", segment_widths::line));
    CHECK_THAT(what, ContainsSubstring(want[mode]));
  }
  // The same width for every lane, changing between executions; segments looping apart: no error.
  for (int mode = 2; mode < 4; ++mode) {
    INFO("mode " << mode);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, segment_widths{mode}, out);
    CHECK_FALSE(sync_error(b));
  }
}

namespace {
/// Lanes 0-3 shuffle an int, the others a long, at one call site (a generic lambda's).
struct two_types {
  static constexpr unsigned line = __LINE__ + 2;  // the shfl below
  void operator()(ki::span<i64> out) const {
    const auto sh = [](auto v) { return ki::shfl(v, 0); };
    const i64 l = ki::get_local_id().x;
    out[l] = l < 4 ? sh(static_cast<int>(l)) : static_cast<i64>(sh(static_cast<long>(l)));
  }
};
}  // namespace

TEST_CASE("participants that pass different value types: collective_mismatch names the types readably",
          "[sub_group_diagnostics]") {
  const ki::reference::backend b{.device = preset("amd-wave32")};
  auto out = ki::zeros<i64>(b, 16);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 16}, two_types{}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::collective_mismatch);
  // The names as the compiler spells them, not typeid's mangled "i" and "l".
  CHECK_THAT(std::string(e->what()),
             ContainsSubstring("sub-group 0: shfl at " + this_file.loc(two_types::line) +
                               ": value types differ: lane 0 passes int, lane 4 passes long int"));
}
