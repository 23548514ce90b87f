// Checked-access mode beyond the gallery: what is and is not a race (atomics, sub_group_barrier,
// writes of an unchanged value by policy, multi-dimensional indices), and the launch report.
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "gallery_support.hpp"

namespace {

using namespace ki_test::gallery;
using kind = ki::kernel_error::kind;
const std::string this_file = "checked_access.cpp";
std::string at(unsigned line) { return this_file + ":" + std::to_string(line); }

/// Every work-item adds 1 to out[0] atomically: atomics never race.
struct atomic_count {
  void operator()(ki::span<i64> out) const { ki::atomic_fetch_add(&out[0], i64{1}); }
};

TEST_CASE("checked: atomics never race, within or between work-groups", "[oracle][checked]") {
  auto o = run(backend_for("cuda"), atomic_count{}, 4, 64);
  CHECK(!o.error);
  CHECK(o.out[0] == 256);
}

/// Lane 0 writes local memory, sub_group_barrier, the other lanes of its sub-group read it.
struct sub_group_exchange {
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 sg = ki::get_sub_group_id(), lane = ki::get_sub_group_local_id();
    if (lane == 0) buf[sg] = 10 + sg;
    ki::sub_group_barrier();
    out[ki::get_global_id().x] = buf[sg];
  }
};

TEST_CASE("checked: sub_group_barrier orders the accesses of its sub-group", "[oracle][checked]") {
  for (const auto& p : all_profiles()) {
    INFO("profile " << p);
    auto o = run(backend_for(p), sub_group_exchange{}, 1, 64);
    CHECK(!o.error);
  }
}

/// Every work-item writes 1 to the same local flag (the same value), then a barrier.
struct same_value_flag {
  static constexpr unsigned line = __LINE__ + 3;
  void operator()(ki::span<i64> out) const {
    auto flag = ki::localmemory<i64, 1>([] {});
    flag[0] = 1;
    ki::barrier();
    out[ki::get_global_id().x] = flag[0];
  }
};

TEST_CASE("checked: writing the value an element holds is a race by policy, or allowed", "[oracle][checked]") {
  auto b = backend_for("cuda");
  auto o = run(b, same_value_flag{}, 1, 8);
  REQUIRE(o.error);
  CHECK(o.error->error_kind() == kind::data_race);
  INFO(o.error->what());
  CHECK(std::string(o.error->what())
            .find("work-item (0, 0, 0) wrote it at " + at(same_value_flag::line) +
                  ", then work-item (1, 0, 0) read it at " + at(same_value_flag::line)) != std::string::npos);
  b.same_value_writes = ki::reference::same_value_writes::allowed;
  auto a = run(b, same_value_flag{}, 1, 8);
  CHECK(!a.error);
  CHECK(a.out == std::vector<i64>(8, 1));
}

/// 2-D local memory and spans with (x, y) indices; item (x, y) reads (x+1, y) without a barrier.
struct cartesian_race {
  static constexpr unsigned line_write = __LINE__ + 5;
  static constexpr unsigned line_read = __LINE__ + 5;
  void operator()(ki::span<i64> out) const {
    auto tile = ki::localmemory<i64, 8, 8>([] {});
    const auto l = ki::get_local_id();
    tile(l.x, l.y) = l.x;
    out[ki::get_global_id().x + 8 * l.y] = tile((l.x + 1) % 8, l.y);
  }
};

TEST_CASE("checked: races through multi-dimensional indices name the linear element", "[oracle][checked]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = ki::dims{8, 8}}, cartesian_race{}, out);
  try {
    ki::synchronize(b);
    FAIL("no race reported");
  } catch (const ki::kernel_error& e) {
    INFO(e.what());
    CHECK(e.error_kind() == kind::data_race);
    CHECK(std::string(e.what()).find("race on element 1 of localmemory at " + at(cartesian_race::line_write - 2) +
                                     ": work-item (0, 0, 0) read it at " + at(cartesian_race::line_read) +
                                     ", then work-item (1, 0, 0) wrote it at " + at(cartesian_race::line_write)) !=
          std::string::npos);
  }
}

/// Binding a reference to an element compiles in checked mode (recorded where it was bound).
struct element_reference {
  void operator()(ki::span<i64> out) const {
    auto& r = out[ki::get_global_id().x];
    r = 5;
    r += 1;
  }
};

TEST_CASE("checked: kernels that bind references to elements compile and run", "[oracle][checked]") {
  auto o = run(backend_for("cuda"), element_reference{}, 2, 32);
  CHECK(!o.error);
  CHECK(o.out == std::vector<i64>(64, 6));
}

TEST_CASE("checked: the report of a race as text and JSON; the backend stays usable", "[oracle][checked]") {
  auto o = run(backend_for("cuda"), same_value_flag{}, 1, 4);
  REQUIRE(o.report);
  const std::string j = o.report->json();
  INFO(j);
  CHECK(j.rfind("{\"kernel\":\"kernel\",\"profile\":\"cuda\",\"seed\":0,\"order\":\"forward\",\"diagnostics\":[{"
                "\"kind\":\"data-race\","
                "\"severity\":\"error\",\"where\":[\"" +
                    at(same_value_flag::line) + "\"],\"count\":3,",
                0) == 0);
  const std::string s = o.report->str();
  CHECK(s.rfind(
            "ki::reference report: kernel 'kernel', profile 'cuda', schedule forward (seed 0):\n  error data-race at " +
                at(same_value_flag::line) + " (3 instances)\n",
            0) == 0);
  auto ok = run(backend_for("cuda"), atomic_count{}, 1, 4);
  CHECK(!ok.error);
  CHECK(ok.out[0] == 4);
}

}  // namespace

namespace {
/// Each work-item writes out[i] (line write_line) and reads in[i + 1] (line read_line).
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
constexpr unsigned write_line = __LINE__ + 5;
constexpr unsigned read_line = __LINE__ + 5;
struct shift_copy {
  void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    const i64 i = ki::get_global_id().x;
    out[i] =
        in[i + 1];
  }
};
// clang-format on
struct seen_access {
  i64 item;
  const void* address;
  unsigned line;
};
void record_access(void* ctx, const ki::reference::trace_event& e) {
  if (e.kind == ki::reference::trace_kind::access)
    static_cast<std::vector<seen_access>*>(ctx)->push_back({e.item, e.address, e.where.line});
}
}  // namespace

TEST_CASE("checked: the trace hook sees every recorded access with its work-item, element and line",
          "[oracle][checked][trace]") {
  const auto b = backend_for("cuda");
  std::vector<i64> h(65, 1);
  auto in = ki::to_device(b, h);
  auto out = ki::zeros<i64>(b, 64);
  std::vector<seen_access> seen;
  ki::reference::set_trace_hook(&record_access, &seen);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, shift_copy{}, out, in);
  ki::synchronize(b);
  ki::reference::set_trace_hook(nullptr);
  REQUIRE(seen.size() == 128);
  for (i64 i = 0; i < 64; ++i) {
    INFO("work-item " << i);
    bool wrote = false, read = false;
    for (const auto& s : seen)
      if (s.item == i) {
        wrote |= s.address == out.data() + i && s.line == write_line;
        read |= s.address == in.data() + i + 1 && s.line == read_line;
      }
    CHECK(wrote);
    CHECK(read);
  }
}
