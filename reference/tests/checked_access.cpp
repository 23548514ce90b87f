// Checked-access mode beyond the gallery: what is and is not a race (atomics, sub_group_barrier,
// writes of an unchanged value by policy, multi-dimensional indices), and the launch report.
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ka.hpp>

#include "gallery_support.hpp"

namespace {

using namespace ki_test::gallery;
using kind = ki::kernel_error::kind;
using Catch::Matchers::ContainsSubstring;
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

/// Lane `writer` writes local memory, every segment of `width` lanes passes its own
/// sub_group_barrier(width) (width 0: sub_group_barrier() of the whole sub-group), lane `reader`
/// reads it. Spec: a segment barrier makes writes "visible to the segment. It doesn't order
/// memory with other segments": ordered only when both lanes are in one segment.
struct segment_exchange {
  static constexpr unsigned line_write = __LINE__ + 6, line_read = __LINE__ + 9;
  i64 width, writer, reader;
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 1>([] {});
    const i64 lane = ki::get_sub_group_local_id();
    const bool first_sub_group = ki::get_sub_group_id() == 0;
    if (first_sub_group && lane == writer) buf[0] = 42;
    if (width == 0) ki::sub_group_barrier();
    else ki::sub_group_barrier(width);
    if (first_sub_group && lane == reader) out[0] = buf[0];
  }
};

TEST_CASE("checked: a segment barrier orders only the accesses of its segment", "[oracle][checked]") {
  // One sub-group of 32 (cuda: partitionable sub-groups, segments synchronise on their own) and
  // one of 64 lanes on a profile whose sub-groups are not partitionable (all segments resolve
  // together there, but the barrier still orders only within each).
  for (const std::string p : {"cuda", "amd-wave64"}) {
    INFO("profile " << p);
    const i64 n = p == "cuda" ? 32 : 64;
    for (const std::uint64_t seed : {0, 1}) {
      INFO("seed " << seed);
      // Lane 0 writes, lane 4 (the next segment of 4) reads: a race, reported with both lines.
      auto o = run(backend_for(p, seed), segment_exchange{4, 0, 4}, 1, n);
      REQUIRE(o.error);
      CHECK(o.error->error_kind() == kind::data_race);
      const std::string what = o.error->what();
      INFO(what);
      const std::string w = "work-item (0, 0, 0) wrote it at " + at(segment_exchange::line_write);
      const std::string r = "work-item (4, 0, 0) read it at " + at(segment_exchange::line_read);
      if (seed == 0) CHECK(what.find(w + ", then " + r) != std::string::npos);
      else CHECK(what.find("work-item (4, 0, 0)") != std::string::npos);  // (reverse: the read comes first)
      CHECK(what.find(at(segment_exchange::line_write)) != std::string::npos);
      CHECK(what.find(at(segment_exchange::line_read)) != std::string::npos);
      // The same with segments of 8 and lanes 3 and 12; and lane 7 reading after lane 3 wrote
      // with segments of 4 (3 is in the first, 7 in the second).
      auto o8 = run(backend_for(p, seed), segment_exchange{8, 3, 12}, 1, n);
      CHECK((o8.error && o8.error->error_kind() == kind::data_race));
      auto o47 = run(backend_for(p, seed), segment_exchange{4, 3, 7}, 1, n);
      CHECK((o47.error && o47.error->error_kind() == kind::data_race));
      // Within one segment the barrier orders them: no race, the value read is the one written.
      for (const auto& [width, writer, reader] : {std::array<i64, 3>{4, 0, 3}, std::array<i64, 3>{4, 5, 6},
                                                  std::array<i64, 3>{8, 0, 7}, std::array<i64, 3>{16, 1, 14}}) {
        INFO("width " << width << ", lane " << writer << " writes, lane " << reader << " reads");
        auto s = run(backend_for(p, seed), segment_exchange{width, writer, reader}, 1, n);
        CHECK(!s.error);
        CHECK(s.out[0] == 42);
      }
      // The whole sub-group's barrier (no width, or the full width) orders every lane with every other.
      for (const i64 width : {i64{0}, n}) {
        INFO("width " << width);
        auto f = run(backend_for(p, seed), segment_exchange{width, 0, 4}, 1, n);
        CHECK(!f.error);
        CHECK(f.out[0] == 42);
      }
    }
  }
}

/// Item i writes element i of local memory (global: of out), a barrier with `flags`, then
/// reads element i + 1: ordered only where the flags name that memory. (A full barrier orders
/// the read of out with the write of the result.)
struct flagged_exchange {
  static constexpr unsigned line_write_global = __LINE__ + 6, line_write_local = __LINE__ + 7, line_read = __LINE__ + 9;
  ki::barrier_flags flags;
  bool global;
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 i = ki::get_local_id().x, n = ki::get_local_size().x;
    if (global) out[i] = 10 + i;
    else buf[i] = 10 + i;
    ki::barrier(flags);
    const i64 v = global ? out[(i + 1) % n] : buf[(i + 1) % n];
    ki::barrier();
    out[i] = v;
  }
};

TEST_CASE("checked: barrier(flags) orders only the memory its flags name", "[oracle][checked]") {
  using f = ki::barrier_flags;
  struct expectation {
    f flags;
    bool global, race;
  };
  const expectation cases[] = {
      {f::local | f::global, false, false}, {f::local, false, false}, {f::global, false, true}, {f::none, false, true},
      {f::local | f::global, true, false},  {f::global, true, false}, {f::local, true, true},   {f::none, true, true},
  };
  for (const auto& c : cases) {
    INFO("flags " << static_cast<unsigned>(c.flags) << ", " << (c.global ? "global" : "local") << " memory");
    auto o = run(backend_for("cuda"), flagged_exchange{c.flags, c.global}, 1, 8);
    if (!c.race) {
      CHECK(!o.error);
      for (i64 i = 0; i < 8; ++i) CHECK(o.out[static_cast<std::size_t>(i)] == 10 + (i + 1) % 8);
      continue;
    }
    REQUIRE(o.error);
    CHECK(o.error->error_kind() == kind::data_race);
    const std::string what = o.error->what();
    INFO(what);
    CHECK(what.find(at(c.global ? flagged_exchange::line_write_global : flagged_exchange::line_write_local)) !=
          std::string::npos);
    CHECK(what.find(at(flagged_exchange::line_read)) != std::string::npos);
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
  // With the instrumentation a store is a store, also of the value already there (before, and
  // still without it, "... then work-item (1, 0, 0) read it").
  const std::string second = KI_CHECKED_HOOKS ? "wrote" : "read";
  CHECK(std::string(o.error->what())
            .find(std::string(KI_CHECKED_HOOKS ? "write-write" : "read-write") +
                  " race on element 0 of localmemory at " + at(same_value_flag::line - 1) +
                  ": work-item (0, 0, 0) wrote it at " + at(same_value_flag::line) + ", then work-item (1, 0, 0) " +
                  second + " it at " + at(same_value_flag::line)) != std::string::npos);
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
  CHECK(
      j.rfind("{\"kernel\":\"same_value_flag\",\"profile\":\"cuda\",\"seed\":0,\"order\":\"forward\",\"diagnostics\":[{"
              "\"kind\":\"data-race\","
              "\"severity\":\"error\",\"where\":[\"" +
                  at(same_value_flag::line) + "\"],\"count\":3,",
              0) == 0);
  const std::string s = o.report->str();
  CHECK(s.rfind("ki::reference report: kernel 'same_value_flag', profile 'cuda', schedule forward (seed 0):\n  error "
                "data-race at " +
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

// --- the KA layer in checked-access mode -------------------------------------------------------

// (the tests name the lines of these accesses, counted from __LINE__: kept as they are)
// clang-format off
/// Each work-item writes its slot of local memory and reads its neighbour's: in one phase
/// (what 0), in two phases with no synchronize between (what 1), or with one (what 2; what 3:
/// @synchronize(cond) with cond false, which on the CPU always synchronises).
struct ka_neighbours {
  static constexpr unsigned line_mem = __LINE__ + 3, line_write = __LINE__ + 5, line_read = __LINE__ + 9;
  template <class G>
  void operator()(G& g, ki::span<i64> out, int what) const {
    auto buf = g.template localmem<i64, 16>([] {});
    g.items([&](auto i) {
      buf[i.local_linear()] = i.local_linear();
      if (what == 0) out[i.global_linear()] = buf[(i.local_linear() + 1) % 16];
    });
    if (what == 2) g.synchronize(); else if (what == 3) g.synchronize(what < 0);
    g.items([&](auto i) { if (what != 0) out[i.global_linear()] = buf[(i.local_linear() + 1) % 16]; });
  }
};
// clang-format on

TEST_CASE("checked: KA phases race without a synchronize between them, and not across one", "[oracle][checked]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 32);
  for (const int what : {0, 1}) {
    ki::ka::kernel(b, ka_neighbours{}, ki::ka::groupsize<16>)({.ndrange = 32, .name = "ka_neighbours"}, out, what);
    try {
      ki::synchronize(b);
      FAIL("no race reported");
    } catch (const ki::kernel_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == kind::data_race);
      CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
      // One phase: item 0 reads element 1 before item 1 writes it. Two phases: item 1 writes it
      // in the first, item 0 reads it in the second.
      const bool one = what == 0;
      CHECK(e.local() == (one ? ki::xyz<i64>{1, 0, 0} : ki::xyz<i64>{0, 0, 0}));
      CHECK(e.where() == at(one ? ka_neighbours::line_write : ka_neighbours::line_read));
      const std::string head = "kernel 'ka_neighbours': work-group (0, 0, 0): ";
      const std::string elem = " race on element 1 of localmem at " + at(ka_neighbours::line_mem) + ": ";
      CHECK(msg.find(head + (one ? "read-write" : "write-read") + elem +
                     (one ? "work-item (0, 0, 0) read it at " + at(ka_neighbours::line_write + 1) +
                                ", then work-item (1, 0, 0) wrote it at " + at(ka_neighbours::line_write)
                          : "work-item (1, 0, 0) wrote it at " + at(ka_neighbours::line_write) +
                                ", then work-item (0, 0, 0) read it at " + at(ka_neighbours::line_read)) +
                     ", with no synchronize between them") != std::string::npos);
    }
  }
  for (const int what : {2, 3}) {
    INFO("what " << what);
    ki::copyto(b, out, std::vector<i64>(32, -1));
    ki::ka::kernel(b, ka_neighbours{}, ki::ka::groupsize<16>)({.ndrange = 32}, out, what);
    ki::synchronize(b);
    const auto h = ki::to_host(b, out);
    for (i64 k = 0; k < 32; ++k) CHECK(h[static_cast<std::size_t>(k)] == (k + 1) % 16);
  }
}

/// What does not race: local atomics, writes of a work-item's own element in several phases,
/// group-level code, a collective's values.
struct ka_no_race {
  template <class G>
  void operator()(G& g, ki::span<i64> out, ki::span<const i64> x) const {
    auto bins = g.template localmem<i64, 4>([] {});
    g.items(4, [&](auto i) { bins[i.local_linear()] = 0; });
    g.synchronize();
    g.items([&](auto i) { ki::atomic_fetch_add(&bins[x[i.global_linear()] % 4], i64{1}); });
    g.items([&](auto i) { out[i.global_linear()] = 1; });
    g.items([&](auto i) { out[i.global_linear()] += 1; });
    const i64 s = g.reduce(std::plus<>{}, i64{0}, [&](auto i) { return out[i.global_linear()]; });
    g.synchronize();
    g.items([&](auto i) { out[i.global_linear()] = s + bins[i.local_linear() % 4]; });
  }
};

TEST_CASE("checked: KA local atomics, a work-item's own elements and collectives do not race", "[oracle][checked]") {
  for (const auto order :
       {ki::reference::order::forward, ki::reference::order::reverse, ki::reference::order::random}) {
    auto b = backend_for("cuda", 5);
    b.schedule.items = order;
    std::vector<i64> hx(64);
    for (i64 k = 0; k < 64; ++k) hx[static_cast<std::size_t>(k)] = k * 7 % 11;
    auto x = ki::to_device(b, hx);
    auto out = ki::zeros<i64>(b, 64);
    ki::ka::kernel(b, ka_no_race{}, 16)({.ndrange = 64}, out, ki::ka::Const(x));
    ki::synchronize(b);
    const auto h = ki::to_host(b, out);
    for (i64 k = 0; k < 64; ++k) {
      i64 bin = 0;
      for (i64 j = k / 16 * 16; j < k / 16 * 16 + 16; ++j) bin += hx[static_cast<std::size_t>(j)] % 4 == k % 4;
      CHECK(h[static_cast<std::size_t>(k)] == 32 + bin);
    }
  }
}

// clang-format off
/// Work-item 0 of every group writes out[0] (what 0), or each group reads the first element of
/// the next group's part, which that group writes (what 1).
struct ka_between_groups {
  static constexpr unsigned line_write = __LINE__ + 4, line_read = __LINE__ + 6;
  template <class G>
  void operator()(G& g, ki::span<i64> out, ki::span<i64> seen, int what) const {
    g.items([&](auto i) {
      if (what == 0 && i.local_linear() == 0) out[0] = i.group_linear() + 1;
      if (what == 1) out[i.global_linear()] = 1;
      if (what == 1 && i.local_linear() == 0) seen[i.group_linear()] = out[(i.global_linear() + 16) % 64];
    });
  }
};
// clang-format on

TEST_CASE("checked: KA work-groups race on global memory one of them writes", "[oracle][checked]") {
  auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 64), seen = ki::zeros<i64>(b, 4);
  for (const int what : {0, 1}) {
    ki::ka::kernel(b, ka_between_groups{}, 16)({.ndrange = 64, .name = "between"}, out, seen, what);
    try {
      ki::synchronize(b);
      FAIL("no race reported");
    } catch (const ki::kernel_error& e) {
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == kind::data_race);
      CHECK(e.group() == (what == 0 ? ki::xyz<i64>{1, 0, 0} : ki::xyz<i64>{3, 0, 0}));
      if (what == 0)
        CHECK(msg.find("kernel 'between': write-write race between work-groups on element 0 of a ki::span of 64 "
                       "elements: work-item (0, 0, 0) of work-group (0, 0, 0) wrote it at " +
                       at(ka_between_groups::line_write) +
                       ", work-item (0, 0, 0) of work-group (1, 0, 0) wrote it at " +
                       at(ka_between_groups::line_write)) != std::string::npos);
      else  // the lowest element: group 0 writes element 0, group 3 reads it
        CHECK(msg.find("read-write race between work-groups on element 0 of a ki::span of 64 elements: work-item "
                       "(0, 0, 0) of work-group (0, 0, 0) wrote it at " +
                       at(ka_between_groups::line_read - 1) +
                       ", work-item (0, 0, 0) of work-group (3, 0, 0) read it at " +
                       at(ka_between_groups::line_read)) != std::string::npos);
    }
  }
}

// Issue "The oracle, exact", item 9: what checked-access mode keeps for races between
// work-groups is bounded by the elements a launch touches (not groups x elements), a launch
// beyond the limit fails with a resource error that says so, running out of memory is a
// kernel_error too, and the backend stays usable after each.
namespace {
struct read_all {  // every work-item of every group reads all of `in` and writes its own element
  void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    i64 s = 0;
    for (i64 k = 0; k < in.size(); ++k) s += in[k];
    out[ki::get_global_id().x] = s;
  }
};
struct allocates_too_much {
  void operator()(ki::span<i64> out) const {
    if (ki::get_global_id().x == 5) throw std::bad_alloc();  // (what an exhausted allocation throws)
    out[ki::get_global_id().x] = 1;
  }
};
}  // namespace

TEST_CASE("checked: the record of global accesses is bounded by the elements touched", "[oracle][checked]") {
  ki::reference::backend b = backend_for("cuda");
  // 64 groups x 4 work-items each read 1024 elements: 65536 (group, element) pairs, but only
  // 1024 + 256 elements. A limit of 2000 elements holds it.
  b.checked_elements = 2000;
  auto in = ki::zeros<i64>(b, 1024);
  auto out = ki::zeros<i64>(b, 256);
  ki::launch(b, {.numgroups = 64, .workgroupsize = 4}, read_all{}, out, in);
  CHECK_NOTHROW(ki::synchronize(b));
  // Beyond the limit: a resource error naming it, and the backend stays usable.
  b.checked_elements = 1000;
  ki::launch(b, {.numgroups = 64, .workgroupsize = 4}, read_all{}, out, in);
  try {
    ki::synchronize(b);
    FAIL("no error beyond the limit");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == kind::resource);
    const std::string m = e.what();
    CHECK(m.find("more than 1000 records") != std::string::npos);
    CHECK(m.find("checked_elements") != std::string::npos);
  }
  b.checked_elements = 0;  // (KI_REFERENCE_CHECKED_ELEMENTS, else 1 << 24)
  ki::launch(b, {.numgroups = 64, .workgroupsize = 4}, read_all{}, out, in);
  CHECK_NOTHROW(ki::synchronize(b));
}

TEST_CASE("checked: running out of memory in a kernel is a resource error, and the backend stays usable",
          "[oracle][checked]") {
  const auto b = backend_for("cuda");
  auto out = ki::zeros<i64>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, allocates_too_much{}, out);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == kind::resource);
    CHECK(e.local().x == 5);
    CHECK(std::string(e.what()).find("ran out of memory") != std::string::npos);
  }
  auto in = ki::zeros<i64>(b, 16);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, read_all{}, out, in);
  CHECK_NOTHROW(ki::synchronize(b));
}

/// Work-item 0 of every group writes 1 to flag[0] (KI), or every work-item of every group does
/// (KA, one phase): the same value, from every group.
struct ki_flag_from_every_group {
  static constexpr unsigned line = __LINE__ + 2;
  void operator()(ki::span<i64> out) const {
    if (ki::get_local_id().x == 0) out[0] = 1;
  }
};
struct ka_flag_from_every_item {
  static constexpr unsigned line = __LINE__ + 3;
  template <class G>
  void operator()(G& g, ki::span<i64> flag) const {
    g.items([&](auto) { flag[0] = 1; });
  }
};

TEST_CASE("checked: the same-value policy holds between work-groups and in KA kernels", "[oracle][checked]") {
  auto b = backend_for("cuda");
  // Policy race: a race, named for what the access was. With the instrumentation a store is a
  // store; without it, a store of the value already there cannot be told from a load, and the
  // report says so.
  const std::string second = KI_CHECKED_HOOKS ? "wrote it" : "read it";
  auto o = run(b, ki_flag_from_every_group{}, 4, 8);
  REQUIRE(o.error);
  {
    const std::string what = o.error->what();
    INFO(what);
    CHECK(o.error->error_kind() == kind::data_race);
    CHECK(o.error->group() == ki::xyz<i64>{1, 0, 0});
    CHECK_THAT(what,
               ContainsSubstring("race between work-groups on element 0 of a ki::span of 32 elements: "
                                 "work-item (0, 0, 0) of work-group (0, 0, 0) wrote it at " +
                                 at(ki_flag_from_every_group::line) + ", work-item (0, 0, 0) of work-group (1, 0, 0) " +
                                 second + " at " + at(ki_flag_from_every_group::line)));
    if (!KI_CHECKED_HOOKS) CHECK_THAT(what, ContainsSubstring("KI_REFERENCE_SAME_VALUE_WRITES=allowed takes it"));
  }
  auto flag = ki::zeros<i64>(b, 1);
  ki::ka::kernel ka(b, ka_flag_from_every_item{}, 8);
  ka({.ndrange = 32}, flag);
  try {
    ki::synchronize(b);
    FAIL("no race reported");
  } catch (const ki::kernel_error& e) {
    INFO(e.what());
    CHECK(e.error_kind() == kind::data_race);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("work-item (0, 0, 0) wrote it at " + at(ka_flag_from_every_item::line) +
                                 ", then work-item (1, 0, 0) " + second));
  }
  // Policy allowed: no race, between groups or within one, in either layer.
  b.same_value_writes = ki::reference::same_value_writes::allowed;
  auto a = run(b, ki_flag_from_every_group{}, 4, 8);
  CHECK(!a.error);
  CHECK(a.out[0] == 1);
  ki::ka::kernel(b, ka_flag_from_every_item{}, 8)({.ndrange = 32}, flag);  // (a kernel keeps its backend value)
  ki::synchronize(b);
  CHECK(ki::to_host(b, flag)[0] == 1);
  // ... but writes of different values still race between groups.
  auto out = ki::zeros<i64>(b, 64), seen = ki::zeros<i64>(b, 4);
  ki::ka::kernel(b, ka_between_groups{}, 16)({.ndrange = 64}, out, seen, 0);
  try {
    ki::synchronize(b);
    FAIL("no race reported");
  } catch (const ki::kernel_error& e) {
    INFO(e.what());
    CHECK(e.error_kind() == kind::data_race);
    CHECK_THAT(std::string(e.what()), ContainsSubstring("write-write race between work-groups"));
  }
}

// --- Races the kernel means (ki::intended_race) and every race of a launch (race_reports::all) ---
namespace {
// clang-format off
/// Every work-item sets a debug flag (a same-value store: a race, but the kernel means it), and
/// reads its neighbour's element of local memory without a barrier (a race it does not mean).
struct debug_flag_and_race {
  static constexpr unsigned base = __LINE__, line_flag = base + 4, line_write = base + 5, line_read = base + 6;
  void operator()(ki::span<i64> out, ki::span<i64> flag) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    flag[ki::intended_race(0)] = 1;
    buf[l] = l;
    out[ki::get_global_id().x] = buf[(l + 1) % n];  // BUG: no barrier
  }
};
/// "Last writer wins" on a whole array declared intended: different values, in every group.
struct last_writer_wins {
  static constexpr unsigned line_declared = __LINE__ + 2;
  void operator()(ki::span<i64> out, ki::span<i64> last) const {
    auto w = ki::intended_race(last);
    w[0] = ki::get_global_id().x;
    out[ki::get_global_id().x] = 1;
  }
};
/// Races at two pairs of lines in every group: a missing barrier, and a flag every work-item sets.
struct two_races {
  static constexpr unsigned base = __LINE__, line_write = base + 4, line_read = base + 5, line_flag = base + 6;
  void operator()(ki::span<i64> out, ki::span<i64> flag) const {
    auto buf = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    buf[l] = l;
    out[ki::get_global_id().x] = buf[(l + 1) % n] + 100;  // BUG: no barrier
    flag[ki::get_group_id().x] = l;                        // BUG: every work-item, different values
  }
};
/// KA: the same two races, and an intended one (a localmem declared intended).
struct ka_two_races {
  static constexpr unsigned base = __LINE__, line_intended = base + 4, line_write = base + 5, line_read = base + 6;
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    auto p = g.template localmem<i64, 16>([] {});
    auto scratch = ki::intended_race(g.template localmem<i64, 1>([] {}));
    g.items([&](auto i) { p[i.local_linear()] = i.local_linear(); });
    g.items([&](auto i) { out[i.global_linear()] = p[(i.local_linear() + 1) % 16]; });  // BUG: no synchronize
    g.items([&](auto i) { scratch[0] = i.local_linear(); });
  }
};
// clang-format on

std::int64_t intended_count(const std::vector<ki::reference::warning>& w, unsigned line) {
  std::int64_t n = 0;
  for (const auto& x : w)
    if (x.kind == "intended-race" && x.where.find(at(line)) != std::string::npos) n += x.count;
  return n;
}
}  // namespace

TEST_CASE("checked: a race declared ki::intended_race is a warning, and the race that is not is the error",
          "[oracle][checked]") {
  const auto b = backend_for("cuda");
  auto flag = ki::zeros<i64>(b, 1);
  const auto o = run(b, debug_flag_and_race{}, 2, 64, flag);
  REQUIRE(o.error);
  const std::string w = o.error->what();
  INFO(w);
  CHECK(o.error->error_kind() == kind::data_race);
  CHECK_THAT(w, ContainsSubstring("race on element 1 of localmemory"));
  CHECK_THAT(w, !ContainsSubstring(at(debug_flag_and_race::line_flag)));
  CHECK(intended_count(o.warnings, debug_flag_and_race::line_flag) > 0);
  // Without the declaration the flag's race is the one reported (it comes first).
}

TEST_CASE("checked: an array declared ki::intended_race races in and between work-groups without an error",
          "[oracle][checked]") {
  const auto b = backend_for("cuda");
  auto last = ki::zeros<i64>(b, 1);
  const auto o = run(b, last_writer_wins{}, 4, 32, last);
  INFO((o.error ? o.error->what() : std::string("no error")));
  CHECK(!o.error);
  CHECK(intended_count(o.warnings, last_writer_wins::line_declared) > 0);
  for (const auto& x : o.warnings)
    if (x.kind == "intended-race") CHECK_THAT(x.message, ContainsSubstring("ki::intended_race at"));
}

TEST_CASE("checked: race_reports::all runs every work-group and lists every race of the launch per pair of lines",
          "[oracle][checked]") {
  auto b = backend_for("cuda");
  auto flag = ki::zeros<i64>(b, 4);
  // first_group (default): the lowest group's races end the launch.
  const auto first = run(b, two_races{}, 4, 64, flag);
  REQUIRE(first.error);
  CHECK_THAT(std::string(first.error->what()), !ContainsSubstring("KI_REFERENCE_RACES=all"));
  b.races = ki::reference::race_reports::all;
  const auto o = run(b, two_races{}, 4, 64, flag);
  REQUIRE(o.error);
  const std::string w = o.error->what();
  INFO(w);
  CHECK(o.error->error_kind() == kind::data_race);
  CHECK(o.error->group() == ki::xyz<i64>{0, 0, 0});
  CHECK_THAT(w, ContainsSubstring("all the launch's races (KI_REFERENCE_RACES=all): "));
  // (the forward schedule: item 63 also reads element 0 after item 0 wrote it, a third pair)
  CHECK_THAT(w, ContainsSubstring(" in 4 work-groups, at 3 pairs of lines:"));
  CHECK_THAT(w, ContainsSubstring("race on element 1 of localmemory"));
  CHECK_THAT(w, ContainsSubstring(" at " + at(two_races::line_flag)));
  // Every group ran to its end (each work-item wrote its element: neighbour or poison, + 100).
  std::size_t unwritten = 0;
  for (const i64 v : o.out) unwritten += v == 0;
  CHECK(unwritten == 0);
  // The report lists each pair of lines with its count.
  REQUIRE(o.report);
  REQUIRE(!o.report->diagnostics.empty());
  CHECK(o.report->diagnostics.front().instances.size() == 3);
}

TEST_CASE("checked: KA kernels: intended races are warnings, race_reports::all lists every race", "[oracle][checked]") {
  auto b = backend_for("cuda");
  b.print_warnings = false;
  auto out = ki::zeros<i64>(b, 64);
  (void)ki::reference::take_warnings();
  ki::ka::kernel(b, ka_two_races{}, 16)({.ndrange = 64}, out);
  std::string w;
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == kind::data_race);
    w = e.what();
  }
  INFO(w);
  CHECK_THAT(w, ContainsSubstring("race on element 1 of localmem"));
  CHECK_THAT(w, !ContainsSubstring("KI_REFERENCE_RACES=all"));
  CHECK(intended_count(ki::reference::take_warnings(), ka_two_races::line_intended) > 0);
  b.races = ki::reference::race_reports::all;
  ki::ka::kernel(b, ka_two_races{}, 16)({.ndrange = 64}, out);
  w.clear();
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    w = e.what();
  }
  CHECK_THAT(w, ContainsSubstring("all the launch's races (KI_REFERENCE_RACES=all): "));
  CHECK_THAT(w, ContainsSubstring(" in 4 work-groups, at 1 pair of lines:"));
}
