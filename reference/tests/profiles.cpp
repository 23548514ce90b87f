// The device profiles of the reference backend: the supports_* queries answer from the profile,
// the adversarial layout really scatters lanes over several partial sub-groups, and every kind
// of sub-group function (not only shuffles) must be executed by the whole sub-group.
#include <algorithm>
#include <array>
#include <utility>
#include <cstdlib>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "test_support.hpp"

namespace {
using i64 = std::int64_t;
using kind = ki::kernel_error::kind;
using Catch::Matchers::ContainsSubstring;
using ki_test::oracle::sync_error;
constexpr ki_test::oracle::source_file this_file{"profiles.cpp"};

struct expected_profile {
  const char* name;
  i64 width;
  bool linear, independent, partitionable, float64;
};

// From the preset table of docs/sub-groups.md.
const expected_profile presets[] = {
    {"cuda", 32, true, true, true, true},        {"amd-wave64", 64, true, true, false, true},
    {"amd-wave32", 32, true, true, false, true}, {"intel", 16, false, true, false, false},
    {"apple", 32, true, true, false, false},     {"strict", 16, false, false, false, false},
};

struct record_layout {
  KI_DEVICE void operator()(ki::span<i64> sg, ki::span<i64> lane, ki::span<i64> size, ki::span<i64> count) const {
    const auto i = ki::get_local_id().x;
    sg[i] = ki::get_sub_group_id();
    lane[i] = ki::get_sub_group_local_id();
    size[i] = ki::get_sub_group_size();
    count[i] = ki::get_num_sub_groups();
  }
};

// Only work-items with local id < `active` call the function; the others return at once.
template <int Which>
struct partial_call {
  static constexpr unsigned line = __LINE__ + 6;  // the line of the Which == 0 call
  int active;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const auto i = ki::get_local_id().x;
    if (i >= active) return;
    i64 r = 0;
    if constexpr (Which == 0) r = ki::sub_group_reduce(std::plus<>{}, i64(i));
    if constexpr (Which == 1) r = ki::sub_group_any(i == 0) ? 1 : 0;
    if constexpr (Which == 2) r = static_cast<i64>(ki::sub_group_ballot(i % 2 == 0));
    if constexpr (Which == 3) ki::sub_group_barrier();
    if constexpr (Which == 4) r = ki::sub_group_exclusive_scan(std::plus<>{}, i64(i), i64(0), 8);
    out[i] = r;
  }
};

template <int Which>
void check_partial(const char* what, const char* waiting = "items 0-19", const char* exited = "items 20-31 exited") {
  const ki::reference::backend b{.device = ki::reference::profile::preset("cuda")};
  auto out = ki::zeros<i64>(b, 32);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, partial_call<Which>{20}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::cannot_finish);
  const std::string msg = e->what();
  CHECK(this_file.names(msg, std::string(waiting) + " wait at " + what + " ", partial_call<Which>::line + Which));
  CHECK_THAT(msg, ContainsSubstring(exited));
}

}  // namespace

TEST_CASE("profiles: every supports_* query answers from the preset", "[profiles]") {
  for (const auto& p : presets) {
    INFO(p.name);
    const ki::reference::backend b{.device = ki::reference::profile::preset(p.name)};
    CHECK(ki::sub_group_size(b) == p.width);
    CHECK(ki::supports_subgroups(b));
    CHECK(ki::supports_linear_subgroups(b) == p.linear);
    CHECK(ki::supports_independent_subgroups(b) == p.independent);
    CHECK(ki::supports_partitionable_subgroups(b) == p.partitionable);
    CHECK(ki::supports_float64(b) == p.float64);
    CHECK(ki::supports_unified(b) == (std::string(p.name) != "strict"));  // optional: strict has none
    CHECK(ki::supports_shuffle<double>(b));                               // moved as bytes, even without float64
    // partitionable implies independent, independent implies sub-groups
    CHECK((!ki::supports_partitionable_subgroups(b) || ki::supports_independent_subgroups(b)));
  }
}

// The table of presets (profile::presets()) is the only list of them: reference/CMakeLists.txt
// reads their names from its source for the CTests per preset (KI_REFERENCE_PRESETS, given to
// this program as KI_TEST_REFERENCE_PRESETS, separated by commas) and must find them all, in order.
TEST_CASE("profiles: the build reads the preset names from their table", "[profiles]") {
  const auto table = ki::reference::profile::presets();
  std::string names;
  for (const auto& p : table) names += (names.empty() ? "" : ",") + std::string(p.name);
  CHECK(names == KI_TEST_REFERENCE_PRESETS);
  REQUIRE(!table.empty());
  CHECK(std::string(table.front().name) == ki::reference::profile{}.name);  // cuda: the defaults first
  std::set<std::string> distinct;
  for (const auto& p : table) {
    INFO(p.name);
    CHECK(distinct.insert(p.name).second);  // preset(name) finds each
    CHECK(std::string(ki::reference::profile::preset(p.name).name) == p.name);
    CHECK_NOTHROW(ki::reference::detail::validate(p));
  }
}

TEST_CASE("profiles: the adversarial layout scatters lanes over several partial sub-groups", "[profiles]") {
  for (const char* name : {"intel", "strict"}) {
    INFO(name);
    const ki::reference::backend b{.device = ki::reference::profile::preset(name)};
    const i64 n = 40, w = ki::sub_group_size(b);
    auto sg = ki::zeros<i64>(b, n), lane = ki::zeros<i64>(b, n), size = ki::zeros<i64>(b, n),
         count = ki::zeros<i64>(b, n);
    ki::launch(b, {.numgroups = 1, .workgroupsize = n}, record_layout{}, sg, lane, size, count);
    const auto s = ki::to_host(b, sg), l = ki::to_host(b, lane), z = ki::to_host(b, size), c = ki::to_host(b, count);
    // More sub-groups than cld(n, W): several of them are partial.
    CHECK(c[0] > (n + w - 1) / w);
    i64 partial = 0;
    std::map<i64, std::vector<i64>> members;  // sub-group -> items by lane
    for (i64 i = 0; i < n; ++i) members[s[i]].push_back(i);
    for (const auto& [g, items] : members)
      if (static_cast<i64>(items.size()) < w) ++partial;
    CHECK(partial >= 2);
    // Not the linear layout: some item is not at lane lin % W of sub-group lin / W.
    bool scattered = false;
    for (i64 i = 0; i < n; ++i) scattered = scattered || s[i] != i / w || l[i] != i % w;
    CHECK(scattered);
    // Still a valid layout: lanes 0..size-1 of each sub-group, each exactly once.
    for (const auto& [g, items] : members) {
      std::set<i64> lanes;
      for (i64 i : items) {
        lanes.insert(l[i]);
        CHECK(z[i] == static_cast<i64>(items.size()));
      }
      CHECK(static_cast<i64>(lanes.size()) == static_cast<i64>(items.size()));
      CHECK(*lanes.rbegin() == static_cast<i64>(items.size()) - 1);
    }
  }
}

TEST_CASE("profiles: votes, collectives and sub_group_barrier executed by part of a sub-group: cannot_finish",
          "[profiles]") {
  check_partial<0>("sub_group_reduce");
  check_partial<1>("sub_group_any");
  check_partial<2>("sub_group_ballot");
  check_partial<3>("sub_group_barrier");
  // With a width on a partitionable device (cuda), only the segment of 8 lanes has to execute
  // it together: segments 0 and 1 (items 0-15) complete, segment 2 waits for items 20-23.
  check_partial<4>("sub_group_exclusive_scan", "items 16-19", "items 0-15, 20-31 exited");
}

namespace {
struct throw_after_reduce {
  static constexpr unsigned line = __LINE__ + 3;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const auto i = ki::get_local_id().x;
    const i64 r = ki::sub_group_reduce(std::plus<>{}, i64(i));
    if (i == 5) throw std::runtime_error("boom");
    out[i] = r;
  }
};
}  // namespace

TEST_CASE("profiles: an error after a sub-group function names that function and its line", "[profiles]") {
  const ki::reference::backend b{.device = ki::reference::profile::preset("cuda")};
  auto out = ki::zeros<i64>(b, 32);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, throw_after_reduce{}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::exception);
  CHECK(e->local() == ki::xyz<i64>{5, 0, 0});
  CHECK(this_file.at_line(e->where(), throw_after_reduce::line));
  CHECK(this_file.names(e->what(), "(after sub_group_reduce ", throw_after_reduce::line));
}

namespace {
/// Work-item 3 of group 1 adds to a 64-bit counter (or a double, or a 32-bit one); the others
/// add to a 32-bit counter, which every profile supports.
template <class T>
struct one_atomic {
  static constexpr unsigned line = __LINE__ + 5;  // the atomic_fetch_add below
  void operator()(ki::span<std::int32_t> small, ki::span<T> big) const {
    if (ki::get_group_id().x != 1 || ki::get_local_id().x != 3) {
      ki::atomic_fetch_add(&small[0], 1);
    } else {
      ki::atomic_fetch_add(&big[0], T(1));
    }
  }
};

template <class T>
std::optional<ki::kernel_error> run_one_atomic(const char* profile) {
  const ki::reference::backend b{.device = ki::reference::profile::preset(profile)};
  auto small = ki::zeros<std::int32_t>(b, 1);
  auto big = ki::zeros<T>(b, 1);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, one_atomic<T>{}, small, big);
  auto e = sync_error(b);
  if (!e) CHECK(ki::to_host(b, big)[0] == T(1));
  return e;
}
}  // namespace

TEST_CASE("profiles: a 64-bit atomic without supports_atomics64 is an unsupported error at its line", "[profiles]") {
  // apple: no 64-bit atomics.
  const auto e = run_one_atomic<std::int64_t>("apple");
  REQUIRE(e);
  CHECK(e->error_kind() == kind::unsupported);
  CHECK(e->group() == ki::xyz<i64>{1, 0, 0});
  CHECK(e->local() == ki::xyz<i64>{3, 0, 0});
  CHECK(this_file.at_line(e->where(), one_atomic<std::int64_t>::line));
  const std::string what = e->what();
  INFO(what);
  CHECK_THAT(what, ContainsSubstring("work-item (3, 0, 0) (linear 3) of work-group (1, 0, 0) called "
                                     "ki::atomic_fetch_add on long int at " +
                                     this_file.loc(one_atomic<std::int64_t>::line) +
                                     ", which profile 'apple' does not support: it has no 64-bit atomics "
                                     "(supports_atomics64 is false)"));
  CHECK(ki::reference::report_of(*e) != nullptr);
  // A 32-bit atomic is fine there, and the 64-bit one on a profile that has them.
  CHECK(!run_one_atomic<std::int32_t>("apple"));
  CHECK(!run_one_atomic<std::int64_t>("cuda"));
  CHECK(!run_one_atomic<std::uint64_t>("intel"));
}

TEST_CASE("profiles: an atomic on double without supports_float64 is an unsupported error", "[profiles]") {
  // intel: 64-bit atomics, no float64.
  const auto e = run_one_atomic<double>("intel");
  REQUIRE(e);
  CHECK(e->error_kind() == kind::unsupported);
  CHECK(e->local() == ki::xyz<i64>{3, 0, 0});
  CHECK(this_file.at_line(e->where(), one_atomic<double>::line));
  CHECK_THAT(std::string(e->what()),
             ContainsSubstring("called ki::atomic_fetch_add on double at " + this_file.loc(one_atomic<double>::line) +
                               ", which profile 'intel' does not support: it has no float64"));
  // apple lacks both: the 64-bit atomics are named.
  const auto a = run_one_atomic<double>("apple");
  REQUIRE(a);
  CHECK_THAT(std::string(a->what()), ContainsSubstring("no 64-bit atomics"));
  CHECK(!run_one_atomic<double>("cuda"));
  CHECK(!run_one_atomic<float>("strict"));
}

namespace {
/// Records what the kernel's device reports: the sub-group size and the work-group's limit.
struct record_device {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    if (ki::get_local_id().x == 0) out[0] = ki::get_max_sub_group_size();
  }
};
}  // namespace

TEST_CASE("profiles: one profile per emulated device: queries and launches answer for the active device",
          "[profiles]") {
  ki::reference::backend b{.threads = 1};
  b.device_profiles = {ki::reference::profile::preset("cuda"), ki::reference::profile::preset("amd-wave64"),
                       ki::reference::profile::preset("apple"), ki::reference::profile::preset("strict")};
  REQUIRE(ki::ndevices(b) == 4);
  struct want {
    i64 width;
    bool partitionable, atomics64, unified;
  };
  const want w[] = {
      {32, true, true, true}, {64, false, true, true}, {32, false, false, true}, {16, false, true, false}};
  for (int d = 0; d < 4; ++d) {
    INFO("device " << d);
    ki::set_device(b, d);
    CHECK(&ki::reference::device_profile(b, d) == &b.device_profiles[static_cast<std::size_t>(d)]);
    CHECK(ki::sub_group_size(b) == w[d].width);
    CHECK(ki::max_work_group_size(b) == b.device_profiles[static_cast<std::size_t>(d)].max_work_group_size);
    CHECK(ki::supports_partitionable_subgroups(b) == w[d].partitionable);
    CHECK(ki::supports_atomics64(b) == w[d].atomics64);
    CHECK(ki::supports_unified(b) == w[d].unified);
    // A launch on the device runs with its profile: the kernel sees its sub-group width.
    auto out = ki::zeros<i64>(b, 1);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, record_device{}, out);
    CHECK(ki::to_host(b, out) == std::vector<i64>{w[d].width});
    // versioninfo names the active device's profile, and every device's.
    std::ostringstream info;
    ki::versioninfo(info, b);
    CHECK_THAT(info.str(), ContainsSubstring(std::string("profile:            ") +
                                             b.device_profiles[static_cast<std::size_t>(d)].name +
                                             " (per device: cuda amd-wave64 apple strict)"));
  }
  // A work-group size that one device allows and another does not.
  ki::set_device(b, 3);
  CHECK(ki::max_work_group_size(b) == 256);
  auto o3 = ki::zeros<i64>(b, 1);
  CHECK_THROWS_AS(ki::launch(b, {.numgroups = 1, .workgroupsize = 512}, record_device{}, o3), std::invalid_argument);
  ki::set_device(b, 1);
  auto o1 = ki::zeros<i64>(b, 1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 512}, record_device{}, o1);
  CHECK(ki::to_host(b, o1) == std::vector<i64>{64});
  // Work on a device that another backend value's list lacks is an error naming the count.
  ki::reference::backend two{.threads = 1};
  two.device_profiles = {b.device_profiles[0], b.device_profiles[1]};
  ki::set_device(b, 3);
  CHECK_THROWS_WITH(ki::allocate<i64>(two, 4),
                    ContainsSubstring("on device 3, but the backend's device_profiles has 2 devices"));
  ki::set_device(b, 0);
  // Without per-device profiles every device is `device` (the profile's `devices` of them).
  const ki::reference::backend one{.device = ki::reference::profile::preset("amd-wave64")};
  CHECK(&ki::reference::device_profile(one, 0) == &one.device);
}

// KI_REFERENCE_PROFILE naming several presets: one per device (run in a process of its own with
// KI_REFERENCE_PROFILE=amd-wave64,intel: CTest oracle/KI_REFERENCE_PROFILE-per-device).
TEST_CASE("KI_REFERENCE_PROFILE with several names gives each device its own profile", "[.profile_list_env]") {
  const char* v = std::getenv("KI_REFERENCE_PROFILE");
  REQUIRE(v != nullptr);
  REQUIRE(std::string(v) == "amd-wave64,intel");
  const ki::reference::backend b{.threads = 1};
  CHECK(std::string(b.device.name) == "amd-wave64");
  REQUIRE(b.device_profiles.size() == 2);
  CHECK(ki::ndevices(b) == 2);
  ki::set_device(b, 0);
  CHECK(ki::sub_group_size(b) == 64);
  ki::set_device(b, 1);
  CHECK(ki::sub_group_size(b) == 16);
  CHECK_FALSE(ki::supports_float64(b));
  ki::set_device(b, 0);
}

namespace {
/// y[i] = a * x[i]: its first argument is the float64 (or float) value a.
template <class A>
struct scale_by {
  void operator()(A a, ki::span<const double> x, ki::span<double> y) const {
    const auto i = ki::get_global_id().x;
    y[i] = static_cast<double>(a) * x[i];
  }
};
/// The same, taking float64 values in a std::array by value.
struct scale_by_array {
  void operator()(std::int64_t, std::array<double, 2> a, ki::span<double> y) const { y[ki::get_global_id().x] = a[1]; }
};
struct ka_scale {
  template <class G>
  void operator()(G& g, ki::span<double> y, long double a) const {
    g.items([&](auto i) { y[i.global_linear()] = static_cast<double>(a); });
  }
};
}  // namespace

TEST_CASE("profiles: a float64 kernel argument without supports_float64 is refused on the host, naming it",
          "[profiles]") {
  // The spec: Float64 values can be stored and loaded (as words) on a device without float64, so
  // spans of double are storage; what the device lacks is arithmetic, which a by-value float64
  // argument is there for (real devices refuse it: Metal has no double type).
  for (const char* name : {"apple", "intel", "strict"}) {
    INFO(name);
    const ki::reference::backend b{.device = ki::reference::profile::preset(name), .print_warnings = false};
    REQUIRE_FALSE(ki::supports_float64(b));
    auto x = ki::ones<double>(b, 8);
    auto y = ki::to_device(b, std::vector<double>(8, -1.0));
    const auto refused = [&](auto&& launch, const std::string& says) {
      try {
        launch();
        FAIL("launched");
      } catch (const std::invalid_argument& e) {
        CHECK_THAT(std::string(e.what()), ContainsSubstring(says));
        CHECK_THAT(std::string(e.what()), ContainsSubstring("which profile '" + std::string(name) +
                                                            "' does not support (supports_float64 is false)"));
      }
      ki::synchronize(b);
      CHECK(ki::to_host(b, y) == std::vector<double>(8, -1.0));  // nothing ran
    };
    refused(
        [&] {
          ki::launch(b, {.numgroups = 1, .workgroupsize = 8, .name = "scale"}, scale_by<double>{}, 2.0, ki::Const(x),
                     y);
        },
        "kernel 'scale': argument 0 (from 0) is a double, a float64 value");
    refused(
        [&] {
          ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, scale_by_array{}, i64{1}, std::array<double, 2>{1.0, 2.0},
                     y);
        },
        "kernel 'scale_by_array': argument 1 (from 0) is a std::array<double, 2>");
    ki::ka::kernel k(b, ka_scale{}, 8, 8);
    refused([&] { k(y, 3.0L); }, "argument 1 (from 0) is a long double");
    // float arguments and spans of double run.
    ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, scale_by<float>{}, 2.0f, ki::Const(x), y);
    ki::synchronize(b);
    CHECK(ki::to_host(b, y) == std::vector<double>(8, 2.0));
  }
  // With float64 (cuda), all of them run.
  const ki::reference::backend c{.device = ki::reference::profile::preset("cuda")};
  auto x = ki::ones<double>(c, 8);
  auto y = ki::zeros<double>(c, 8);
  ki::launch(c, {.numgroups = 1, .workgroupsize = 8}, scale_by<double>{}, 3.0, ki::Const(x), y);
  ki::synchronize(c);
  CHECK(ki::to_host(c, y) == std::vector<double>(8, 3.0));
  ki::launch(c, {.numgroups = 1, .workgroupsize = 8}, scale_by_array{}, i64{1}, std::array<double, 2>{1.0, 4.0}, y);
  ki::synchronize(c);
  CHECK(ki::to_host(c, y) == std::vector<double>(8, 4.0));
  ki::ka::kernel k(c, ka_scale{}, 8, 8);
  k(y, 5.0L);
  ki::synchronize(c);
  CHECK(ki::to_host(c, y) == std::vector<double>(8, 5.0));
}

namespace {
/// A KA kernel that counts in a 64-bit @localmem bin (line: the atomic's line).
struct ka_count64 {
  static constexpr int line = __LINE__ + 8;
  template <class G>
  void operator()(G& g, ki::span<std::int64_t> out) const {
    auto bins = g.template localmem<std::int64_t, 1>([] {});
    g.items([&](auto i) {
      if (i.local_linear() == 0) bins[0] = 0;
    });
    g.synchronize();
    g.items([&](auto) { bins.atomic_fetch_add(0, std::int64_t{1}); });
    g.synchronize();
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = bins[0];
    });
  }
};
}  // namespace

TEST_CASE("profiles: a KA atomic on 64-bit @localmem without supports_atomics64 is an unsupported error",
          "[profiles][ka]") {
  for (const char* name : {"apple", "cuda"}) {
    INFO(name);
    const ki::reference::backend b{.device = ki::reference::profile::preset(name), .print_warnings = false};
    auto out = ki::zeros<std::int64_t>(b, 2);
    ki::ka::kernel k(b, ka_count64{}, 8, 16);
    k(out);
    const auto e = sync_error(b);
    if (ki::supports_atomics64(b)) {
      REQUIRE_FALSE(e);
      CHECK(ki::to_host(b, out) == std::vector<std::int64_t>{8, 8});
      continue;
    }
    REQUIRE(e);
    CHECK(e->error_kind() == kind::unsupported);
    CHECK(e->group() == ki::xyz<i64>{0, 0, 0});
    CHECK(this_file.at_line(e->where(), ka_count64::line));
    CHECK_THAT(std::string(e->what()),
               ContainsSubstring("which profile 'apple' does not support: it has no 64-bit atomics"));
  }
}
