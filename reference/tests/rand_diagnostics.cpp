// The oracle's checks of ki::seed (ki/rand.hpp, docs/random.md): every work-item of a launch
// that draws calls ki::seed(s), with the same s, before its first draw. A launch that breaks
// the rule is a ki::kernel_error of kind invalid_seed at synchronize, naming the work-group,
// the work-item and the source lines, whatever order the work-items run in:
//   - work-items that seed with different values;
//   - a work-item that seeds after it has drawn;
//   - work-items that seed while others draw unseeded.
//
// Line numbers are checked against __LINE__: each kernel records the line of each call in a
// `static constexpr unsigned line_... = __LINE__ + k` a fixed number of lines above it.
#include <cstdint>
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
using u32 = std::uint32_t;
using xyz = ki::xyz<i64>;
using kind = ki::kernel_error::kind;
using Catch::Matchers::ContainsSubstring;
using ki_test::oracle::sync_error;
constexpr ki_test::oracle::source_file this_file{"rand_diagnostics.cpp"};

/// Work-item 3 seeds with 2, the others with 1.
struct different_seeds {
  static constexpr unsigned line_seed = __LINE__ + 3;
  void operator()(ki::span<u32> out) const {
    const i64 l = ki::get_local_id().x;
    ki::seed(l == 3 ? 2 : 1);
    out[ki::get_global_id().x] = ki::rand<u32>();
  }
};

/// Work-groups seed with their group id.
struct seed_per_group {
  void operator()(ki::span<u32> out) const {
    ki::seed(static_cast<std::uint64_t>(ki::get_group_id().x));
    out[ki::get_global_id().x] = ki::rand<u32>();
  }
};

/// Draws, then seeds.
struct seed_after_draw {
  static constexpr unsigned line_seed = __LINE__ + 4;
  void operator()(ki::span<u32> out) const {
    const i64 i = ki::get_global_id().x;
    out[i] = ki::rand<u32>();
    ki::seed(5);
    out[i] += ki::rand<u32>();
  }
};

/// Work-item `unseeded` draws without seeding; the others seed with 9 first.
struct partly_seeded {
  static constexpr unsigned line_seed = __LINE__ + 4, line_draw = __LINE__ + 5;
  i64 unseeded;
  void operator()(ki::span<u32> out) const {
    const i64 i = ki::get_global_id().x;
    if (i != unseeded) ki::seed(9);
    out[i] = ki::rand<u32>();
  }
};

/// The rule kept: every work-item seeds with 9, then draws twice.
struct well_seeded {
  void operator()(ki::span<u32> out) const {
    const i64 i = ki::get_global_id().x;
    ki::seed(9);
    out[2 * i] = ki::rand<u32>();
    out[2 * i + 1] = ki::rand<u32>();
  }
};

ki::reference::backend with_order(ki::reference::order o) {
  ki::reference::backend b{.threads = 1};
  b.schedule = ki::reference::schedule{o, 0};
  return b;
}

}  // namespace

TEST_CASE("rand oracle: work-items that seed with different values", "[oracle][rand]") {
  const ki::reference::backend b{.threads = 1};
  auto out = ki::allocate<u32>(b, 16);
  ki::launch(b, {.ndrange = 16, .workgroupsize = 8}, different_seeds{}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::invalid_seed);
  CHECK(e->group() == xyz{0, 0, 0});
  CHECK(e->local() == xyz{3, 0, 0});  // the first to disagree with work-item 0, which seeded first
  const std::string m = e->what();
  CHECK_THAT(m, ContainsSubstring("ki::seed(2)"));
  CHECK(this_file.names(m, "ki::seed(2) at ", different_seeds::line_seed));
  CHECK_THAT(m, ContainsSubstring("work-item (0, 0, 0) of work-group (0, 0, 0) seeded with 1"));
  CHECK(this_file.names(m, "seeded with 1 at ", different_seeds::line_seed));
  CHECK(ki::reference::to_string(e->error_kind()) == std::string("invalid-seed"));
}

TEST_CASE("rand oracle: work-groups that seed with different values", "[oracle][rand]") {
  const ki::reference::backend b{.threads = 1};
  auto out = ki::allocate<u32>(b, 16);
  ki::launch(b, {.ndrange = 16, .workgroupsize = 8}, seed_per_group{}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::invalid_seed);
  CHECK(e->group() == xyz{1, 0, 0});
  CHECK(e->local() == xyz{0, 0, 0});
  CHECK_THAT(std::string(e->what()), ContainsSubstring("ki::seed(1)"));
  CHECK_THAT(std::string(e->what()), ContainsSubstring("seeded with 0"));
}

TEST_CASE("rand oracle: a work-item that seeds after it drew", "[oracle][rand]") {
  const ki::reference::backend b{.threads = 1};
  auto out = ki::allocate<u32>(b, 8);
  ki::launch(b, {.ndrange = 8, .workgroupsize = 8}, seed_after_draw{}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::invalid_seed);
  CHECK(e->local() == xyz{0, 0, 0});
  const std::string m = e->what();
  CHECK(this_file.names(m, "ki::seed(5) at ", seed_after_draw::line_seed));
  CHECK_THAT(m, ContainsSubstring("after it had drawn 1 number"));
}

TEST_CASE("rand oracle: some work-items seed, others draw unseeded, in either order", "[oracle][rand]") {
  SECTION("the unseeded draw comes first") {
    const auto b = with_order(ki::reference::order::forward);
    auto out = ki::allocate<u32>(b, 8);
    ki::launch(b, {.ndrange = 8, .workgroupsize = 8}, partly_seeded{0}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::invalid_seed);
    CHECK(e->local() == xyz{1, 0, 0});  // the first to seed, after work-item 0 drew
    const std::string m = e->what();
    CHECK(this_file.names(m, "ki::seed(9) at ", partly_seeded::line_seed));
    CHECK_THAT(m, ContainsSubstring("work-item (0, 0, 0) of work-group (0, 0, 0) drew without seeding"));
    CHECK(this_file.names(m, "drew without seeding at ", partly_seeded::line_draw));
  }
  SECTION("the seeds come first") {
    const auto b = with_order(ki::reference::order::reverse);
    auto out = ki::allocate<u32>(b, 8);
    ki::launch(b, {.ndrange = 8, .workgroupsize = 8}, partly_seeded{0}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::invalid_seed);
    CHECK(e->local() == xyz{0, 0, 0});  // runs last: every other one has seeded
    const std::string m = e->what();
    CHECK(this_file.names(m, "drew a random number without seeding at ", partly_seeded::line_draw));
    CHECK_THAT(m, ContainsSubstring("work-item (7, 0, 0) of work-group (0, 0, 0) called ki::seed(9)"));
  }
}

TEST_CASE("rand oracle: a launch that keeps the rule runs, in every order, to the same numbers", "[oracle][rand]") {
  std::vector<u32> first;
  for (auto o : {ki::reference::order::forward, ki::reference::order::reverse, ki::reference::order::random}) {
    auto b = with_order(o);
    b.schedule.seed = o == ki::reference::order::random ? 12345 : 0;
    auto out = ki::allocate<u32>(b, 64);
    ki::launch(b, {.ndrange = 32, .workgroupsize = 16}, well_seeded{}, out);
    REQUIRE_FALSE(sync_error(b));
    const std::vector<u32> h = ki::to_host(b, out);
    if (first.empty()) first = h;
    CHECK(h == first);
    for (i64 i = 0; i < 32; ++i) CHECK(h[2 * i + 1] == ki::rand_value<u32>(9, static_cast<std::uint64_t>(i), 1));
  }
}

TEST_CASE("rand oracle: ki::rand and ki::seed outside a kernel", "[oracle][rand]") {
  CHECK_THROWS_AS(ki::rand<u32>(), std::logic_error);
  CHECK_THROWS_AS(ki::seed(1), std::logic_error);
  CHECK_THROWS_WITH(ki::rand<float>(), ContainsSubstring("ki::rand"));
}
