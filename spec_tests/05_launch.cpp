// Spec: Kernel, calling a Kernel (launch geometry), kernel_function, @launch (ki::launch),
// the lower-level launch(kernel, groups, items, args), launch_configuration,
// max_work_group_size / max_work_group_dims / max_num_groups.
//
// "numgroups and workgroupsize: launch exactly that many work-groups of that many work-items.
// Either defaults to 1. ndrange and workgroupsize: launch cld.(ndrange, workgroupsize)
// work-groups. ndrange alone: the work-group size is chosen with launch_configuration, bounded
// by max_work_group_size and by max_work_group_dims, and filled first dimension first. Each is
// an Integer or a tuple of up to 3 Integers; missing dimensions are 1. ndrange and numgroups
// are mutually exclusive. ndrange is rounded up to whole work-groups and is not masked ...
// A zero anywhere in ndrange or numgroups launches nothing. Work-group sizes must be positive
// and fit max_work_group_dims and max_work_group_size(kernel), and the number of work-items in
// each dimension must fit an Int; anything else throws an ArgumentError before the backend
// sees it."
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ki/native.hpp>

#include "backends.hpp"

namespace ki_spec_launch {

using i64 = std::int64_t;
using ki_test::ContainsSubstring;
constexpr i64 int64_max = std::numeric_limits<i64>::max();

/// Counts how often each global linear id runs (hits) and records the launch shape as the
/// kernel sees it: local size, number of groups, global size (shape[0..8]); shape[9] counts
/// work-items beyond the expected total.
/// A kernel whose operator() is a template: its GPU entry depends on the launch's argument types.
struct generic_mark {
  template <class S>
  KI_DEVICE void operator()(S flag) const {
    flag[0] = 1;
  }
};

struct probe {
  KI_DEVICE void operator()(ki::span<i64> hits, ki::span<i64> shape) const {
    const auto gid = ki::get_global_id(), gs = ki::get_global_size();
    const i64 lin = gid.x + gs.x * (gid.y + gs.y * gid.z);
    if (lin < hits.size()) hits[lin] = hits[lin] + 1;  // each id once, so no race
    else shape[9] = 1;
    if (lin == 0) {
      const auto ls = ki::get_local_size(), ng = ki::get_num_groups();
      shape[0] = ls.x, shape[1] = ls.y, shape[2] = ls.z;
      shape[3] = ng.x, shape[4] = ng.y, shape[5] = ng.z;
      shape[6] = gs.x, shape[7] = gs.y, shape[8] = gs.z;
    }
  }
};

/// Sets flag[0] = 1 (from the first work-item): did the kernel run at all?
struct mark {
  KI_DEVICE void operator()(ki::span<int> flag) const {
    const auto g = ki::get_global_id();
    if (g.x == 0 && g.y == 0 && g.z == 0) flag[0] = 1;
  }
};

/// Records get_max_sub_group_size: shows which backend configuration a launch used.
struct width_probe {
  KI_DEVICE void operator()(ki::span<i64> out) const { out[0] = ki::get_max_sub_group_size(); }
};

/// Argument passed by reference to the kernel: each work-item must get its own copy.
struct counter {
  i64 v;
};
/// A kernel with state: each work-item must run its own copy.
struct stateful {
  mutable i64 acc = 10;
  KI_DEVICE void operator()(ki::span<i64> out, counter& c) const {
    const i64 g = ki::get_global_id().x;
    acc += g;
    c.v += 2 * g;
    out[2 * g] = acc;
    out[2 * g + 1] = c.v;
  }
};

template <class K, class B>
void expect_geometry(const B& b, const K& k, const ki::launch_options& o, std::array<i64, 3> items,
                     std::array<i64, 3> groups) {
  KI_INFO("expected work-groups " << ki_test::str(groups) << " of " << ki_test::str(items) << " work-items");
  const i64 total = items[0] * groups[0] * items[1] * groups[1] * items[2] * groups[2];
  auto hits = ki::zeros<i64>(b, total);
  auto shape = ki_test::filled<i64>(b, 10, -1);
  k(o, hits, shape);
  ki::synchronize(b);
  const auto s = ki_test::read(b, shape);
  CHECK(std::array<i64, 3>{s[0], s[1], s[2]} == items);
  CHECK(std::array<i64, 3>{s[3], s[4], s[5]} == groups);
  // get_global_size is the padded size.
  CHECK(std::array<i64, 3>{s[6], s[7], s[8]} ==
        std::array<i64, 3>{items[0] * groups[0], items[1] * groups[1], items[2] * groups[2]});
  CHECK(s[9] == -1);  // nothing beyond the expected work-items ran
  ki_test::check_all(
      ki_test::read(b, hits), [](i64) { return 1; }, "every work-item (padding included) runs once");
}

/// The launch throws std::invalid_argument naming each needle, and the kernel did not run.
template <class B>
void expect_rejected(const B& b, const ki::launch_options& o, const std::vector<std::string>& needles) {
  auto flag = ki::zeros<int>(b, 1);
  const auto k = ki::kernel_function(b, mark{});
  const std::string msg = ki_test::thrown_message<std::invalid_argument>([&] { k(o, flag); });
  for (const auto& n : needles) CHECK_THAT(msg, ContainsSubstring(n));
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
}

/// The launch is accepted and runs nothing.
template <class B>
void expect_nothing_runs(const B& b, const ki::launch_options& o) {
  auto flag = ki::zeros<int>(b, 1);
  const auto k = ki::kernel_function(b, mark{});
  k(o, flag);
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
}

/// "filled first dimension first": x takes as much of s as it can, then y, then z.
inline std::array<i64, 3> fill_first(i64 s, std::array<i64, 3> nd, std::array<i64, 3> max_dims) {
  std::array<i64, 3> l{};
  for (int d = 0; d < 3; ++d) {
    l[d] = std::min({s, nd[d], max_dims[d]});
    s /= l[d];
  }
  return l;
}

inline i64 cld(i64 a, i64 b) { return a / b + (a % b != 0); }

}  // namespace ki_spec_launch

using namespace ki_spec_launch;

TEMPLATE_LIST_TEST_CASE("launch: numgroups and workgroupsize launch exactly that", "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  expect_geometry(b, k, {.numgroups = 4, .workgroupsize = 8}, {8, 1, 1}, {4, 1, 1});
  expect_geometry(b, k, {.numgroups = {2, 3}, .workgroupsize = {4, 5}}, {4, 5, 1}, {2, 3, 1});
  expect_geometry(b, k, {.numgroups = {2, 2, 2}, .workgroupsize = {2, 3, 4}}, {2, 3, 4}, {2, 2, 2});
  // Missing dimensions are 1, for each keyword independently.
  expect_geometry(b, k, {.numgroups = 3, .workgroupsize = {2, 2}}, {2, 2, 1}, {3, 1, 1});
  expect_geometry(b, k, {.numgroups = {2, 3, 2}, .workgroupsize = 4}, {4, 1, 1}, {2, 3, 2});
  // Unsigned and narrow integer types are values like any other.
  expect_geometry(b, k, {.numgroups = std::uint8_t{3}, .workgroupsize = {std::uint64_t{2}, short{3}}}, {2, 3, 1},
                  {3, 1, 1});
}

TEMPLATE_LIST_TEST_CASE("launch: numgroups and workgroupsize default to 1", "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  expect_geometry(b, k, {.numgroups = 5}, {1, 1, 1}, {5, 1, 1});
  expect_geometry(b, k, {.workgroupsize = {3, 2}}, {3, 2, 1}, {1, 1, 1});
  expect_geometry(b, k, {}, {1, 1, 1}, {1, 1, 1});
  // Calling the kernel with arguments only: one group of one work-item.
  auto hits = ki::zeros<i64>(b, 1);
  auto shape = ki_test::filled<i64>(b, 10, -1);
  static_assert(std::is_void_v<decltype(k(hits, shape))>, "a launch returns nothing");
  k(hits, shape);
  ki::synchronize(b);
  CHECK(ki_test::read(b, hits) == std::vector<i64>{1});
  CHECK(ki_test::read(b, shape) == std::vector<i64>{1, 1, 1, 1, 1, 1, 1, 1, 1, -1});
}

TEMPLATE_LIST_TEST_CASE("launch: ndrange with workgroupsize launches cld(ndrange, workgroupsize) groups, unmasked",
                        "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  // Padding work-items run, and get_global_size is the padded size (probe checks both).
  expect_geometry(b, k, {.ndrange = 100, .workgroupsize = 32}, {32, 1, 1}, {4, 1, 1});
  expect_geometry(b, k, {.ndrange = 64, .workgroupsize = 16}, {16, 1, 1}, {4, 1, 1});
  expect_geometry(b, k, {.ndrange = 1, .workgroupsize = 256}, {256, 1, 1}, {1, 1, 1});
  expect_geometry(b, k, {.ndrange = {10, 7}, .workgroupsize = {4, 3}}, {4, 3, 1}, {3, 3, 1});
  expect_geometry(b, k, {.ndrange = {5, 6, 7}, .workgroupsize = {2, 4, 3}}, {2, 4, 3}, {3, 2, 3});
  expect_geometry(b, k, {.ndrange = {20, 3}, .workgroupsize = 8}, {8, 1, 1}, {3, 3, 1});
  expect_geometry(b, k, {.ndrange = 9, .workgroupsize = {1, 5}}, {1, 5, 1}, {9, 1, 1});
}

TEMPLATE_LIST_TEST_CASE("launch: ndrange alone takes the work-group size from launch_configuration", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  const auto max_dims = ki::max_work_group_dims(b);
  struct launch_case {
    std::array<i64, 3> nd;
    int rank;
    i64 max_size;  // the max_work_group_size keyword
  };
  const std::vector<launch_case> cases = {
      {{1000, 1, 1}, 1, int64_max},
      {{10, 1, 1}, 1, int64_max},
      {{1, 1, 1}, 1, int64_max},
      {{10, 1000, 1}, 2, int64_max},
      {{1, 1, 1000}, 3, int64_max},  // z bounded by max_work_group_dims
      {{1000, 1000, 1}, 2, int64_max},
      {{3, 5, 7}, 3, int64_max},
      {{1000, 1, 1}, 1, 100},
      {{1000, 1, 1}, 1, 1},
      {{50, 50, 1}, 2, 7},
      {{33, 1, 1}, 1, 32},
  };
  for (const auto& c : cases) {
    KI_INFO("ndrange " << ki_test::str(c.nd) << ", max_work_group_size = " << c.max_size);
    const i64 nitems = c.nd[0] * c.nd[1] * c.nd[2];
    const i64 s = ki::launch_configuration(k, nitems, c.max_size).workgroupsize;
    REQUIRE(s >= 1);
    REQUIRE(s <= c.max_size);
    const auto items = fill_first(s, c.nd, max_dims);
    const std::array<i64, 3> groups{cld(c.nd[0], items[0]), cld(c.nd[1], items[1]), cld(c.nd[2], items[2])};
    expect_geometry(b, k, {.ndrange = ki_test::dims_of(c.nd, c.rank), .max_work_group_size = c.max_size}, items,
                    groups);
  }
}

TEMPLATE_LIST_TEST_CASE("launch: a zero anywhere in ndrange or numgroups launches nothing", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  expect_nothing_runs(b, {.ndrange = 0});
  expect_nothing_runs(b, {.ndrange = {5, 0}});
  expect_nothing_runs(b, {.ndrange = {3, 4, 0}});
  expect_nothing_runs(b, {.ndrange = 0, .workgroupsize = 4});
  expect_nothing_runs(b, {.ndrange = {0, 5}, .workgroupsize = {1, 5}});
  expect_nothing_runs(b, {.numgroups = 0});
  expect_nothing_runs(b, {.numgroups = {2, 0, 3}});
  expect_nothing_runs(b, {.numgroups = 0, .workgroupsize = {2, 2}});
  expect_nothing_runs(b, {.ndrange = std::uint64_t{0}, .max_work_group_size = 3});
}

TEMPLATE_LIST_TEST_CASE("launch: invalid geometry throws std::invalid_argument naming the value", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto max_dims = ki::max_work_group_dims(b);
  const i64 kmax = ki::max_work_group_size(ki::kernel_function(b, mark{}));

  SECTION("ndrange and numgroups together") {
    expect_rejected(b, {.ndrange = 10, .numgroups = 2}, {"ndrange", "numgroups"});
    expect_rejected(b, {.ndrange = 10, .numgroups = 2, .workgroupsize = 5}, {"ndrange", "numgroups"});
  }
  SECTION("non-positive workgroupsize") {
    expect_rejected(b, {.workgroupsize = 0}, {"workgroupsize", "0"});
    expect_rejected(b, {.numgroups = 2, .workgroupsize = {8, -7}}, {"workgroupsize", "-7"});
    expect_rejected(b, {.ndrange = 16, .workgroupsize = {4, 4, -2}}, {"workgroupsize", "-2"});
  }
  SECTION("negative ndrange or numgroups") {
    expect_rejected(b, {.ndrange = {10, -5}}, {"ndrange", "-5"});
    expect_rejected(b, {.ndrange = -12345, .workgroupsize = 4}, {"ndrange", "-12345"});
    expect_rejected(b, {.numgroups = -12345}, {"numgroups", "-12345"});
    expect_rejected(b, {.numgroups = {1, 2, -3}, .workgroupsize = 2}, {"numgroups", "-3"});
  }
  SECTION("workgroupsize beyond max_work_group_dims") {
    const i64 z = max_dims[2] + 1;
    expect_rejected(b, {.workgroupsize = {1, 1, z}}, {"workgroupsize", std::to_string(z)});
    const i64 x = max_dims[0] + 1;
    expect_rejected(b, {.ndrange = x, .workgroupsize = x}, {"workgroupsize", std::to_string(x)});
  }
  SECTION("workgroupsize beyond max_work_group_size(kernel)") {
    // A shape within max_work_group_dims whose product exceeds the kernel's limit.
    const i64 x = std::min(max_dims[0], kmax), y = kmax / x + 1;
    REQUIRE(y <= max_dims[1]);
    expect_rejected(b, {.workgroupsize = {x, y}}, {"workgroupsize", std::to_string(x * y)});
    expect_rejected(b, {.ndrange = {x, y}, .workgroupsize = {x, y}}, {std::to_string(x * y)});
  }
  SECTION("the number of work-items in a dimension overflows int64") {
    const i64 g = int64_max / 2 + 1;  // 2^62 groups of 2
    expect_rejected(b, {.numgroups = g, .workgroupsize = 2}, {std::to_string(g)});
    expect_rejected(b, {.numgroups = {1, g}, .workgroupsize = {1, 2}}, {std::to_string(g)});
    // ndrange rounded up to whole groups: cld(2^63 - 1, 256) * 256 = 2^63.
    expect_rejected(b, {.ndrange = int64_max, .workgroupsize = 256}, {std::to_string(cld(int64_max, 256))});
    expect_rejected(b, {.ndrange = {1, 1, int64_max}, .workgroupsize = {1, 1, 2}}, {std::to_string(cld(int64_max, 2))});
  }
  SECTION("unsigned values beyond int64") {
    const std::uint64_t big = std::uint64_t{1} << 63, max = std::numeric_limits<std::uint64_t>::max();
    expect_rejected(b, {.ndrange = big}, {"ndrange", "9223372036854775808"});
    expect_rejected(b, {.ndrange = {std::uint64_t{4}, max}}, {"ndrange", "18446744073709551615"});
    expect_rejected(b, {.numgroups = max}, {"numgroups", "18446744073709551615"});
    expect_rejected(b, {.numgroups = 1, .workgroupsize = big}, {"workgroupsize", "9223372036854775808"});
  }
  SECTION("non-positive max_work_group_size") {
    expect_rejected(b, {.ndrange = 100, .max_work_group_size = 0}, {"max_work_group_size", "0"});
    expect_rejected(b, {.ndrange = 100, .max_work_group_size = -5}, {"max_work_group_size", "-5"});
  }
}

TEMPLATE_LIST_TEST_CASE("launch: more work-groups than the backend allows is an error", "[launch]", ki_test::backends) {
  // "The number of work-groups is validated by the backend": every ki backend throws the
  // ArgumentError of a bad launch (std::invalid_argument) naming the count, the dimension and
  // its limit, before anything runs.
  const auto b = ki_test::make<TestType>();
  const auto maxg = ki::max_num_groups(b);
  auto flag = ki::zeros<int>(b, 1);
  const auto k = ki::kernel_function(b, mark{});
  const std::string msg = ki_test::thrown_message<std::invalid_argument>([&] {
    k({.numgroups = {1, maxg[1] + 1}}, flag);
    ki::synchronize(b);
  });
  CHECK_THAT(msg, ContainsSubstring(std::to_string(maxg[1] + 1) + " work-groups in dimension 1"));
  CHECK_THAT(msg, ContainsSubstring("max_num_groups[1] = " + std::to_string(maxg[1])));
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
}

TEMPLATE_LIST_TEST_CASE("launch: a launch of 2^63 work-items or more in total is an error naming its size", "[launch]",
                        ki_test::backends) {
  // max_num_groups bounds each dimension, and "a launch within these limits works for any
  // work-group size (as long as the number of work-items in each dimension fits an Int)": every
  // dimension below fits, but not their product. ki counts a launch's work-items in one
  // std::int64_t, so such a launch (292 years at a nanosecond per work-item) is refused, on the
  // host, naming its geometry (docs/spec-table.md: the one place ki is stricter than the text).
  const auto b = ki_test::make<TestType>();
  const auto maxg = ki::max_num_groups(b);
  const i64 per_group = std::min({ki::max_work_group_dims(b)[0], ki::max_work_group_size(b), i64{1024}});
  const auto total = static_cast<long double>(maxg[0]) * static_cast<long double>(per_group) *
                     static_cast<long double>(maxg[1]) * static_cast<long double>(maxg[2]);
  if (total < 0x1p63L) {
    ki_test::left_out("a launch within max_num_groups of 2^63 work-items", "this device's limits stay below");
    return;
  }
  const std::string size = std::to_string(maxg[0]) + " x " + std::to_string(maxg[1]) + " x " + std::to_string(maxg[2]) +
                           " work-groups of " + std::to_string(per_group) + " x 1 x 1 work-items";
  expect_rejected(b, {.numgroups = {maxg[0], maxg[1], maxg[2]}, .workgroupsize = per_group},
                  {size, "does not fit std::int64_t"});
}

TEMPLATE_LIST_TEST_CASE(
    "launch: launches at the limits run: max_work_group_size(kernel), max_work_group_dims, "
    "max_num_groups",
    "[launch]", ki_test::backends) {
  // "The largest number of work-items a work-group can have ... for launches of the compiled
  // kernel"; "The maximum number of work-items along each dimension of a work-group ...
  // max_work_group_size bounds their product"; "The maximum number of work-groups along each
  // dimension of a launch ... a launch within these limits works for any work-group size". One
  // past each limit is rejected: "launch: invalid geometry ..." and "launch: more work-groups
  // than the backend allows is an error".
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  const i64 kmax = ki::max_work_group_size(k);
  const auto dims = ki::max_work_group_dims(b);
  const auto maxg = ki::max_num_groups(b);
  KI_INFO(ki_test::limits(b) << ", max_work_group_size(kernel) " << kmax);
  REQUIRE(kmax >= 1);
  REQUIRE(kmax <= ki::max_work_group_size(b));
  // The largest work-groups: as many work-items as the kernel allows, filled x first; and each
  // dimension at its own limit (or the kernel's, where that is lower).
  const i64 x = std::min(kmax, dims[0]), y = std::min(dims[1], kmax / x), z = std::min(dims[2], kmax / (x * y));
  expect_geometry(b, k, {.numgroups = 2, .workgroupsize = {x, y, z}}, {x, y, z}, {2, 1, 1});
  if (kmax <= dims[0]) expect_geometry(b, k, {.numgroups = 2, .workgroupsize = kmax}, {kmax, 1, 1}, {2, 1, 1});
  else ki_test::left_out("a 1-D work-group of max_work_group_size(kernel)", "beyond max_work_group_dims[0]");
  const i64 ylim = std::min(dims[1], kmax), zlim = std::min(dims[2], kmax);
  expect_geometry(b, k, {.numgroups = {1, 2, 1}, .workgroupsize = {1, ylim, 1}}, {1, ylim, 1}, {1, 2, 1});
  expect_geometry(b, k, {.numgroups = {1, 1, 2}, .workgroupsize = {1, 1, zlim}}, {1, 1, zlim}, {1, 1, 2});
  // The most work-groups along each dimension, of one work-item each (a dimension whose limit is
  // too large to run in a test is left out, declared).
  constexpr i64 most_run = i64{1} << 17;
  for (int d = 0; d < 3; ++d) {
    const i64 m = maxg[static_cast<std::size_t>(d)];
    if (m > most_run) {
      ki_test::left_out("max_num_groups[" + std::to_string(d) + "] = " + std::to_string(m) + " work-groups",
                        "more than the " + std::to_string(most_run) + " a test runs");
      continue;
    }
    std::array<i64, 3> groups{1, 1, 1};
    groups[static_cast<std::size_t>(d)] = m;
    expect_geometry(b, k, {.numgroups = {groups[0], groups[1], groups[2]}}, {1, 1, 1}, groups);
  }
}

TEMPLATE_LIST_TEST_CASE("launch: unknown compiler and launch options are errors naming them", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto flag = ki::zeros<int>(b, 1);
  std::string msg = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::kernel_function(b, mark{}, {.options = {{"no_such_compiler_option", 1}}});
  });
  CHECK_THAT(msg, ContainsSubstring("no_such_compiler_option"));

  // Through the one-call form, the options go to kernel_function.
  msg = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::launch(b, {.ndrange = 1, .options = {{"another_unknown_option", 2}}}, mark{}, flag);
  });
  CHECK_THAT(msg, ContainsSubstring("another_unknown_option"));

  const auto k = ki::kernel_function(b, mark{});
  msg = ki_test::thrown_message<std::invalid_argument>([&] {
    k({.ndrange = 1, .options = {{"no_such_launch_option", 3}}}, flag);
  });
  CHECK_THAT(msg, ContainsSubstring("no_such_launch_option"));

  msg = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::launch(k, {1, 1, 1}, {1, 1, 1}, std::tie(flag), {{"bad_low_level_option", 4}});
  });
  CHECK_THAT(msg, ContainsSubstring("bad_low_level_option"));

  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
}

TEMPLATE_LIST_TEST_CASE("launch: the one-call ki::launch compiles, launches and returns the kernel", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto hits = ki::zeros<i64>(b, 64);
  auto shape = ki_test::filled<i64>(b, 10, -1);
  const auto k = ki::launch(b, {.ndrange = 64, .workgroupsize = 16, .name = "probe_kernel"}, probe{}, hits, shape);
  static_assert(std::is_same_v<std::remove_const_t<decltype(k)>, ki::kernel<TestType, probe>>);
  CHECK(k.name == "probe_kernel");
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, hits), [](i64) { return 1; }, "hits");
  CHECK(ki_test::read(b, shape) == std::vector<i64>{16, 1, 1, 4, 1, 1, 64, 1, 1, -1});
  // The returned kernel launches again.
  expect_geometry(b, k, {.numgroups = 2, .workgroupsize = 3}, {3, 1, 1}, {2, 1, 1});
}

TEMPLATE_LIST_TEST_CASE("launch: launch = false only compiles", "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto flag = ki::zeros<int>(b, 1);
  const auto k = ki::launch(b, {.launch = false}, mark{}, flag);
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
  k({.ndrange = 10}, flag);
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 1);

  // The launch keywords can't be used with launch = false.
  auto flag2 = ki::zeros<int>(b, 1);
  CHECK_THROWS_AS(ki::launch(b, {.launch = false, .ndrange = 4}, mark{}, flag2), std::invalid_argument);
  CHECK_THROWS_AS(ki::launch(b, {.launch = false, .numgroups = 1}, mark{}, flag2), std::invalid_argument);
  CHECK_THROWS_AS(ki::launch(b, {.launch = false, .workgroupsize = 2}, mark{}, flag2), std::invalid_argument);
  CHECK_THROWS_AS(ki::launch(b, {.launch = false, .max_work_group_size = 64}, mark{}, flag2), std::invalid_argument);
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag2)[0] == 0);
}

TEMPLATE_LIST_TEST_CASE("launch: the lower-level launch(kernel, groups, items, args)", "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  {
    auto hits = ki::zeros<i64>(b, 2 * 3 * 1 * 4 * 2 * 1);
    auto shape = ki_test::filled<i64>(b, 10, -1);
    ki::launch(k, {2, 3, 1}, {4, 2, 1}, std::tie(hits, shape));  // ki::arrays are converted
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, hits), [](i64) { return 1; }, "hits");
    CHECK(ki_test::read(b, shape) == std::vector<i64>{4, 2, 1, 2, 3, 1, 8, 6, 1, -1});
  }
  {
    auto hits = ki::zeros<i64>(b, 12);
    auto shape = ki_test::filled<i64>(b, 10, -1);
    ki::launch(k, {1, 1, 3}, {1, 2, 2}, std::tuple{ki::argconvert(b, hits), ki::argconvert(b, shape)});  // spans
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, hits), [](i64) { return 1; }, "hits");
    CHECK(ki_test::read(b, shape) == std::vector<i64>{1, 2, 2, 1, 1, 3, 1, 2, 6, -1});
  }
  // Its preconditions are checked too: positive, within the limits, no overflow.
  const auto m = ki::kernel_function(b, mark{});
  auto flag = ki::zeros<int>(b, 1);
  const auto max_dims = ki::max_work_group_dims(b);
  const i64 kmax = ki::max_work_group_size(m);
  const auto rejected = [&](std::array<i64, 3> g, std::array<i64, 3> i, const std::string& needle) {
    KI_INFO("groups " << ki_test::str(g) << ", items " << ki_test::str(i));
    const std::string msg =
        ki_test::thrown_message<std::invalid_argument>([&] { ki::launch(m, g, i, std::tie(flag)); });
    CHECK_THAT(msg, ContainsSubstring(needle));
  };
  rejected({0, 1, 1}, {1, 1, 1}, "0");
  rejected({1, -4, 1}, {1, 1, 1}, "-4");
  rejected({1, 1, 1}, {1, 1, 0}, "0");
  rejected({1, 1, 1}, {-6, 1, 1}, "-6");
  rejected({1, 1, 1}, {1, 1, max_dims[2] + 1}, std::to_string(max_dims[2] + 1));
  const i64 x = std::min(max_dims[0], kmax), y = kmax / x + 1;
  rejected({1, 1, 1}, {x, y, 1}, std::to_string(x * y));
  rejected({int64_max / 2 + 1, 1, 1}, {2, 1, 1}, "overflow");
  ki::synchronize(b);
  CHECK(ki_test::read(b, flag)[0] == 0);
}

TEMPLATE_LIST_TEST_CASE("launch: launch_configuration", "[launch]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, probe{});
  const i64 kmax = ki::max_work_group_size(k);
  CHECK(kmax >= 1);
  CHECK(kmax <= ki::max_work_group_size(b));
  const std::vector<std::optional<i64>> nitems = {std::nullopt, 1, 2, 31, 32, 33, 1000, i64{1} << 40, int64_max};
  for (const auto& n : nitems) {
    for (i64 bound : {i64{1}, i64{3}, i64{64}, i64{100}, i64{1000}, int64_max}) {
      KI_INFO("nitems " << (n ? std::to_string(*n) : "unknown") << ", max_work_group_size " << bound);
      const auto r = ki::launch_configuration(k, n, bound);
      CHECK(r.workgroupsize >= 1);
      CHECK(r.workgroupsize <= std::min(bound, kmax));
    }
  }
  CHECK(ki::launch_configuration(k).workgroupsize <= kmax);
  // "nitems and max_work_group_size are positive."
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::launch_configuration(k, 0); }),
             ContainsSubstring("0"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::launch_configuration(k, -3); }),
             ContainsSubstring("-3"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::launch_configuration(k, 10, 0); }),
             ContainsSubstring("max_work_group_size"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::launch_configuration(k, 10, -8); }),
             ContainsSubstring("-8"));
}

TEMPLATE_LIST_TEST_CASE("launch: kernel.backend is the backend value given to kernel_function", "[launch]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  const TestType cb = cfg::configured();
  auto out = ki_test::filled<i64>(cb, 1, -1);
  const auto k = ki::kernel_function(cb, width_probe{});
  const auto k2 = ki::launch(cb, {.launch = false}, width_probe{}, out);
  if constexpr (cfg::configurable) {
    // configured() differs from make() in every field same() compares.
    CHECK_FALSE(cfg::same(cfg::make(), cb));
    CHECK(cfg::same(k.backend, cb));
    CHECK(cfg::same(k2.backend, cb));
  } else {
    ki_test::left_out("kernel.backend compared with the backend value",
                      std::string(cfg::name) + " values carry no configuration to compare");
  }
  CHECK(ki::max_work_group_size(k) <= ki::max_work_group_size(cb));
  // Launches run with that configuration: the kernel sees the width cb was configured with
  // (read from the configuration, not from ki; 0: the hardware's, either of two).
  k({.numgroups = 1, .workgroupsize = 1}, out);
  ki::synchronize(cb);
  const i64 seen = ki_test::read(cb, out)[0], configured = cfg::configured_width(cb);
  if (configured > 0) CHECK(seen == configured);
  else CHECK((seen == 32 || seen == 64));
}

TEMPLATE_LIST_TEST_CASE("launch: each work-item gets its own copy of the kernel and of the arguments", "[launch]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 200;
  auto out = ki_test::filled<i64>(b, 2 * n, -1);
  const auto k = ki::kernel_function(b, stateful{});
  counter c{5};
  k({.numgroups = 4, .workgroupsize = n / 4}, out, c);
  ki::synchronize(b);
  CHECK(k.f.acc == 10);  // the kernel object kept by the host is untouched
  CHECK(c.v == 5);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return i % 2 == 0 ? 10 + i / 2 : 5 + 2 * (i / 2); }, "per-item copies");
}

// Issue "The oracle, exact", item 15: one portable type for "the kernel failed". A kernel's
// failure surfaces at synchronize as a ki::device_error on every backend (ki::kernel_error on
// the CPU backends, ki::cuda::error / ki::hip::error on GPUs), and the backend stays usable.
namespace {
struct writes_past_the_end {
  static constexpr unsigned fault_line = __LINE__ + 4;  // the out-of-bounds access below
  KI_DEVICE void operator()(ki::span<int> a, bool fault) const {
    const auto i = ki::get_global_id().x;
    static_assert(fault_line == __LINE__ + 1);
    if (fault && i == 3) a[a.size() + i] = 1;  // out of bounds: a fault on every backend
    else a[i] = 2;
  }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE("launch: a kernel's failure is a ki::device_error on every backend", "[launch]",
                        ki_test::backends) {
#if (KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP) && KI_GPU_EMULATION
  // The emulated GPU: the fault is the GPU's sticky error, surfacing at synchronize as the
  // backend's error with the oracle's diagnostic (work-group, work-item, line); every later call
  // on the device fails the same way until the device is reset.
#if KI_TEST_BACKEND_CUDA
  using gpu_error = ki::cuda::error;
  const auto reset = [] { return cudaDeviceReset(); };
#else
  using gpu_error = ki::hip::error;
  const auto reset = [] { return hipDeviceReset(); };
#endif
  STATIC_REQUIRE(std::is_base_of_v<ki::device_error, gpu_error>);
  const auto b = ki_test::make<TestType>();
  auto a = ki::zeros<int>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, writes_past_the_end{}, a, true);
  bool caught = false;
  try {
    ki::synchronize(b);
  } catch (const gpu_error& e) {
    caught = true;
    KI_INFO(e.what());
    const std::string what = e.what();
    CHECK(what.find("ErrorLaunchFailure") != std::string::npos);
    CHECK(what.find("out of bounds") != std::string::npos);
    CHECK(what.find("work-item (3, 0, 0)") != std::string::npos);
    CHECK(what.find("05_launch.cpp:" + std::to_string(writes_past_the_end::fault_line)) != std::string::npos);
  }
  CHECK(caught);
  CHECK_THROWS_AS(ki::synchronize(b), gpu_error);  // sticky
  CHECK(reset() == 0);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, writes_past_the_end{}, a, false);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64) { return 2; }, "after the device was reset");
#elif KI_TEST_BACKEND_CUDA
  STATIC_REQUIRE(std::is_base_of_v<ki::device_error, ki::cuda::error>);
  SKIP("not provoked on a GPU: an illegal address leaves the CUDA context unusable for the rest of the suite");
#elif KI_TEST_BACKEND_HIP
  STATIC_REQUIRE(std::is_base_of_v<ki::device_error, ki::hip::error>);
  SKIP("not provoked on a GPU: an illegal address leaves the HIP context unusable for the rest of the suite");
#else
  STATIC_REQUIRE(std::is_base_of_v<ki::device_error, ki::kernel_error>);
  const auto b = ki_test::make<TestType>();
  auto a = ki::zeros<int>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, writes_past_the_end{}, a, true);
  bool caught = false;
  try {
    ki::synchronize(b);
  } catch (const ki::device_error& e) {
    caught = true;
    CHECK(dynamic_cast<const ki::kernel_error*>(&e) != nullptr);
    CHECK(std::string(e.what()).find("out of bounds") != std::string::npos);
  }
  CHECK(caught);
  // The backend stays usable: the next launch runs.
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, writes_past_the_end{}, a, false);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64) { return 2; }, "after the failed launch");
#endif
}

TEMPLATE_LIST_TEST_CASE("launch: ki::native exposes the backend's kernel object where it has one", "[launch]",
                        ki_test::backends) {
  // The spec: a Kernel wraps "the backend's own kernel object kern".
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, mark{});
  constexpr bool has = requires { ki::native(k); };
  // The GPU backends have one (their __global__ entry); the CPU backends none, at compile time.
  static_assert(has == bool(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP));
  if constexpr (has) {
    const auto n = ki::native(k);
    REQUIRE(n.has_value());
    CHECK(n->function != nullptr);
    CHECK(n->attributes.maxThreadsPerBlock > 0);
    CHECK(ki::max_work_group_size(k) <= n->attributes.maxThreadsPerBlock);  // the kernel's limit comes from it
    // A generic operator() has no one entry before a launch.
    CHECK_FALSE(ki::native(ki::kernel_function(b, generic_mark{})).has_value());
    // The entry runs: launching the kernel writes its flag.
    auto flag = ki::zeros<int>(b, 1);
    k(flag);
    CHECK(ki_test::read(b, flag) == std::vector<int>{1});
  }
}
