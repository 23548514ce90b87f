// Metal's threadgroup size hints (ki/hints.hpp):
//   "maxthreads=n limits threadgroups to n threads ... minthreads=(x, y, z) requires exactly that
//   threadgroup size ... and launches with another size are rejected. Both are reflected in the
//   kernel's maxthreads."
// In ki: launch_hints{.maxthreads, .required_size}, declared by the kernel type or given with
// ki::with_hints; max_work_group_size(kernel) reflects both; a launch against them is
// std::invalid_argument naming the sizes, before anything runs; a required size is the default
// work-group size. (On CUDA and HIP the hints also reach the device compiler as
// __launch_bounds__.)
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "backends.hpp"

namespace ki_spec_launch_hints {

using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;

/// Records, per work-group, its work-group size (x, y, z).
struct record_size {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const auto g = ki::get_group_id(), n = ki::get_num_groups();
    const auto s = ki::get_local_size();
    const i64 group = g.x + n.x * (g.y + n.y * g.z);
    if (ki::get_local_id() == ki::xyz<i64>{0, 0, 0}) {
      out[3 * group] = s.x;
      out[3 * group + 1] = s.y;
      out[3 * group + 2] = s.z;
    }
  }
};

/// Each work-item stores its work-group's x size (a kernel without hints of its own).
struct local_size_x {
  KI_DEVICE void operator()(ki::span<i64> out) const { out[ki::get_global_id().x] = ki::get_local_size().x; }
};

struct at_most_64 : record_size {
  static constexpr ki::launch_hints hints{.maxthreads = 64};
};
struct exactly_8x4 : record_size {
  static constexpr ki::launch_hints hints{.required_size = {8, 4, 1}};
};
struct both : record_size {
  static constexpr ki::launch_hints hints{.maxthreads = 16, .required_size = {4, 2, 2}};
};

static_assert(ki::hints_of<record_size>.maxthreads == 0 && !ki::hints_of<record_size>.has_required(),
              "a kernel without hints has none");
static_assert(ki::hints_of<both>.bound() == 16 && ki::hints_of<exactly_8x4>.bound() == 32 &&
                  ki::hints_of<at_most_64>.bound() == 64,
              "the bound given to the device compiler");

}  // namespace ki_spec_launch_hints

using namespace ki_spec_launch_hints;

TEMPLATE_LIST_TEST_CASE("launch: maxthreads bounds max_work_group_size(kernel) and every launch of it", "[launch]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const auto k = ki::kernel_function(b, at_most_64{});
  const i64 plain = ki::max_work_group_size(ki::kernel_function(b, record_size{}));
  CHECK(ki::max_work_group_size(k) == std::min<i64>(64, plain));
  CHECK(decltype(k)::hints.maxthreads == 64);
  // ndrange alone: the chosen work-group size respects the bound.
  auto out = ki_test::filled<i64>(b, 3 * 1000, 0);
  k({.ndrange = 1000}, out);
  const auto h = ki_test::read(b, out);
  CHECK(h[0] >= 1);
  CHECK(h[0] * h[1] * h[2] <= 64);
  CHECK(ki::launch_configuration(k, 1000).workgroupsize <= 64);
  if (plain > 64) {
    CHECK_THROWS_MATCHES(k({.numgroups = 1, .workgroupsize = 65}, out), std::invalid_argument,
                         Catch::Matchers::MessageMatches(ContainsSubstring("65 work-items") &&
                                                         ContainsSubstring("max_work_group_size(kernel) = 64")));
    CHECK_THROWS_AS(ki::launch(k, {1, 1, 1}, {128, 1, 1}, std::tie(out)), std::invalid_argument);
  }
  // The compiler option of the same name applies too: the smaller one wins.
  const auto k16 = ki::kernel_function(b, at_most_64{}, {.options = {{"maxthreads", 16}}});
  CHECK(ki::max_work_group_size(k16) == std::min<i64>(16, plain));
}

TEMPLATE_LIST_TEST_CASE("launch: a required work-group size is the default one, and another size is rejected",
                        "[launch]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const auto k = ki::kernel_function(b, exactly_8x4{}, {.name = "tile"});
  CHECK(ki::max_work_group_size(k) == 32);
  CHECK(ki::launch_configuration(k, 1000).workgroupsize == 32);
  // ndrange alone: work-groups of (8, 4, 1), cld(20, 8) x cld(9, 4) of them.
  auto out = ki_test::filled<i64>(b, 3 * 9, 0);
  k({.ndrange = {20, 9}}, out);
  const auto h = ki_test::read(b, out);
  for (i64 g = 0; g < 9; ++g) {
    CHECK(h[static_cast<std::size_t>(3 * g)] == 8);
    CHECK(h[static_cast<std::size_t>(3 * g + 1)] == 4);
    CHECK(h[static_cast<std::size_t>(3 * g + 2)] == 1);
  }
  // The required size given explicitly, in either launch form, runs.
  k({.numgroups = 2, .workgroupsize = {8, 4}}, out);
  ki::launch(k, {1, 1, 1}, {8, 4, 1}, std::tie(out));
  ki::synchronize(b);
  // Another size: rejected, naming both, before anything runs.
  CHECK_THROWS_MATCHES(
      k({.ndrange = {20, 9}, .workgroupsize = {4, 8}}, out), std::invalid_argument,
      Catch::Matchers::MessageMatches(ContainsSubstring("kernel 'tile' requires work-groups of (8, 4, 1)") &&
                                      ContainsSubstring("this launch has (4, 8, 1)")));
  CHECK_THROWS_MATCHES(k({.numgroups = 1, .workgroupsize = 32}, out), std::invalid_argument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("(32, 1, 1)")));
  CHECK_THROWS_AS(ki::launch(k, {1, 1, 1}, {8, 2, 2}, std::tie(out)), std::invalid_argument);
}

TEMPLATE_LIST_TEST_CASE("launch: with_hints gives a kernel hints, and both hints apply together", "[launch]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const auto k = ki::kernel_function(b, ki::with_hints<ki::launch_hints{.required_size = {16, 1, 1}}>(local_size_x{}));
  CHECK(ki::max_work_group_size(k) == 16);
  auto out = ki_test::filled<i64>(b, 48, 0);
  k({.ndrange = 48}, out);
  for (const i64 v : ki_test::read(b, out)) CHECK(v == 16);
  CHECK_THROWS_AS(k({.ndrange = 48, .workgroupsize = 8}, out), std::invalid_argument);

  const auto kb = ki::kernel_function(b, both{});
  CHECK(ki::max_work_group_size(kb) == 16);
  auto o2 = ki_test::filled<i64>(b, 3 * 4, 0);
  kb({.ndrange = {8, 4, 2}}, o2);
  const auto h = ki_test::read(b, o2);
  CHECK(h[0] == 4);
  CHECK(h[1] == 2);
  CHECK(h[2] == 2);
}
