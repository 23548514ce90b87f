// The oracle's duty to report misuse precisely (DESIGN.md, "Errors are precise"): every failure
// of a launch surfaces at ki::synchronize as a ki::kernel_error naming the work-group, the
// work-item and, where there is one, the source line; the backend stays usable afterwards.
//
// Line numbers are checked against __LINE__: each kernel below records the line of its
// barrier or localmemory call in a `static constexpr unsigned line...` a fixed number of lines
// above it (the distance is stated next to each).
#include <cstdint>
#include <functional>
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

// The cuda preset, whatever KI_REFERENCE_PROFILE says: these tests check exact messages,
// limits and the fixed poison word of that profile.
const ki::reference::profile cuda = ki::reference::profile::preset("cuda");

using i64 = std::int64_t;
using xyz = ki::xyz<i64>;
using kind = ki::kernel_error::kind;
using Catch::Matchers::ContainsSubstring;

using ki_test::oracle::sync_error;
/// Call sites as the oracle prints them: "diagnostics.cpp:<line>".
constexpr ki_test::oracle::source_file this_file{"diagnostics.cpp"};

// --- kernels ------------------------------------------------------------------------------

/// Reads its right neighbour through local memory; a healthy kernel to run after failures.
struct healthy {
  void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 1024>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = 100 * g + l;
    ki::barrier();
    out[g * n + l] = buf[(l + 1) % n];
  }
};

/// Runs `healthy` on b and checks its results: the backend still works.
void check_usable(const ki::reference::backend& b) {
  const i64 groups = 3, n = 64;
  auto out = ki::zeros<i64>(b, groups * n);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n}, healthy{}, out);
  ki::synchronize(b);
  const auto h = ki::to_host(b, out);
  std::size_t bad = 0;
  for (i64 i = 0; i < groups * n; ++i)
    if (h[static_cast<std::size_t>(i)] != 100 * (i / n) + (i % n + 1) % n) ++bad;
  CHECK(bad == 0);
}

/// The work-item at (group, local) throws; optionally after passing a barrier.
struct throw_at {
  static constexpr unsigned line = __LINE__ + 4;  // the barrier below
  xyz group, local;
  bool after_barrier;
  void operator()(ki::span<i64> out) const {
    if (after_barrier) ki::barrier();
    const auto g = ki::get_group_id(), l = ki::get_local_id();
    out[ki::get_global_id().x] = 1;
    if (g == group && l == local) throw std::runtime_error("boom from the kernel");
  }
};

/// Group 0 passes a barrier and a sub-group reduction (in the order `reduce_last` says), the other
/// groups neither; work-item 1 of group `bad_group` then throws.
struct sync_then_throw {
  static constexpr unsigned barrier_line = __LINE__ + 7;  // the barrier below
  static constexpr unsigned reduce_line = __LINE__ + 7;   // the sub_group_reduce below
  bool reduce_last;
  i64 bad_group;
  void operator()(ki::span<i64> out) const {
    const i64 g = ki::get_group_id().x, l = ki::get_local_id().x;
    if (g == 0) {
      const auto bar = [] { ki::barrier(); };
      const auto red = [&] { out[l] = ki::sub_group_reduce(std::plus<>{}, l); };
      if (reduce_last) bar(), red();
      else red(), bar();
    }
    if (g == bad_group && l == 1) throw std::runtime_error("boom after the sync points");
  }
};

struct throw_int {
  void operator()() const {
    if (ki::get_local_id().x == 2) throw 42;
  }
};

/// a[global id + offset]: out of bounds for the last `offset` work-items.
struct shifted_write {
  void operator()(ki::span<i64> a, i64 offset) const { a[ki::get_global_id().x + offset] = 7; }
};

/// One work-item reads (x, y + 1) of a 2-D span.
struct oob_2d {
  void operator()(ki::span<i64> a) const {
    const auto l = ki::get_local_id();
    if (l.x == 2 && l.y == 2) a(l.x, l.y + 1) = 1;
  }
};

/// Work-item 5 indexes local memory one past its end.
struct oob_local {
  void operator()() const {
    auto buf = ki::localmemory<int, 16>([] {});
    const i64 l = ki::get_local_id().x;
    buf[l == 5 ? 16 : l] = 1;
  }
};

/// Out-of-bounds accesses whose lines the error must name (`which` picks one): through a
/// ki::span, a ki::const_span, 1-D and 2-D local memory, a 2-D span; the accesses are on the
/// five consecutive lines that end the operator, each `..._line` counted from __LINE__.
struct oob_lines {
  static constexpr unsigned local_site = __LINE__ + 8;   // the localmemory<float, 64> call
  static constexpr unsigned local2_site = __LINE__ + 8;  // the localmemory<int, 4, 8> call
  static constexpr unsigned span_line = __LINE__ + 12;
  static constexpr unsigned const_line = __LINE__ + 12;
  static constexpr unsigned local_line = __LINE__ + 12;
  static constexpr unsigned local2_line = __LINE__ + 12;
  static constexpr unsigned span2_line = __LINE__ + 12;
  void operator()(ki::span<float> a, ki::const_span<double> c, int which) const {
    auto buf = ki::localmemory<float, 64>([] {});
    auto buf2 = ki::localmemory<int, 4, 8>([] {});
    const i64 l = ki::get_local_id().x;
    const i64 bad = l == 3 ? 1 : 0;  // work-item 3 is one past the end
    buf[l] = 0;
    buf2(l % 4, 0) = 0;
    if (which == 0) a[a.size() - 4 + l + bad] = 1;
    else if (which == 1) a[l] = static_cast<float>(c[c.size() - 4 + l + bad]);
    else if (which == 2) a[l] = buf[60 + l + bad];
    else if (which == 3) a[l] = static_cast<float>(buf2(l, 7 + bad));
    else a(l, 1 + bad, 0) = 2;
  }
};

/// Deep recursion that the compiler cannot turn into a loop (each frame's buffer escapes).
[[gnu::noinline]] int recurse(int n, volatile char* prev) {
  volatile char buf[512];
  buf[0] = static_cast<char>(prev != nullptr ? prev[0] + 1 : 0);
  if (n == 0) return buf[0];
  return recurse(n - 1, buf) + buf[1];
}

/// Work-item `local` of group `group` recurses far beyond any fiber stack.
struct overflow_at {
  static constexpr unsigned line = __LINE__ + 4;  // the barrier below
  i64 group, local;
  bool after_barrier;
  void operator()(ki::span<int> out) const {
    if (after_barrier) ki::barrier();
    if (ki::get_group_id().x == group && ki::get_local_id().x == local) out[0] = recurse(10'000'000, nullptr);
  }
};

/// Work-item 5 reaches the second barrier (the same call site as the others) with `depth`
/// bytes more on its stack: swept in steps smaller than the switch's frame, the overflow falls on
/// every step into the switch.
struct deeper_at_barrier {
  void operator()(ki::span<int> out, i64 depth) const {
    ki::barrier();
    const i64 l = ki::get_local_id().x;
    const auto n = static_cast<std::size_t>(l == 5 ? depth : 16);
    volatile char* p = static_cast<volatile char*>(__builtin_alloca(n));
    p[n - 1] = 1;
    p[0] = 1;
    ki::barrier();
    out[l] = p[0];
  }
};

/// In group `group`, items 0-2 wait at a barrier while the others exit.
struct partial_barrier {
  static constexpr unsigned line = __LINE__ + 3;  // the barrier below
  i64 group;
  void operator()() const {
    if (ki::get_group_id().x == group && ki::get_local_id().x < 3) ki::barrier();
  }
};

/// Items 0-3 and 4-7 wait at different barriers.
struct two_barriers {
  static constexpr unsigned line_a = __LINE__ + 3, line_b = __LINE__ + 5;
  void operator()() const {
    if (ki::get_local_id().x < 4) {
      ki::barrier();
    } else {
      ki::barrier();
    }
  }
};

/// Items 0-1 at barrier A, 2-4 at barrier B, 5-7 exit.
struct three_ways {
  static constexpr unsigned line_a = __LINE__ + 4, line_b = __LINE__ + 6;
  void operator()() const {
    const i64 l = ki::get_local_id().x;
    if (l < 2) {
      ki::barrier();
    } else if (l < 5) {
      ki::barrier();
    }
  }
};

/// The same barrier in a loop whose trip count differs: item 0 comes back a second time.
struct uneven_loop {
  static constexpr unsigned line = __LINE__ + 4;  // the barrier below
  void operator()() const {
    const i64 trips = ki::get_local_id().x == 0 ? 2 : 1;
    for (i64 k = 0; k < trips; ++k) {
      ki::barrier();
    }
  }
};

/// In a 4 x 2 group, the row y = 1 waits at a barrier and the row y = 0 exits.
struct row_waits {
  static constexpr unsigned line = __LINE__ + 2;  // the barrier below
  void operator()() const {
    if (ki::get_local_id().y == 1) ki::barrier();
  }
};

/// Local memory of `Bytes` at one call site (plus `Second` bytes at another).
template <std::size_t Bytes, std::size_t Second = 0>
struct local_user {
  static constexpr unsigned line_first = __LINE__ + 2, line_second = __LINE__ + 4;
  void operator()(ki::span<int> out) const {
    auto a = ki::localmemory<unsigned char, Bytes>([] {});
    if constexpr (Second > 0) {
      auto b = ki::localmemory<unsigned char, Second>([] {});
      b[0] = 1;
    }
    a[0] = 1;
    out[ki::get_global_id().x] = 1;
  }
};

}  // namespace

TEST_CASE("an exception thrown in a kernel surfaces at synchronize with its coordinates", "[diagnostics]") {
  for (int threads : {0, 1}) {
    const ki::reference::backend b{.device = cuda, .threads = threads};
    INFO("threads = " << threads);
    auto out = ki::zeros<i64>(b, 6 * 12);
    ki::launch(b, {.numgroups = {3, 2}, .workgroupsize = {4, 3}}, throw_at{{2, 1, 0}, {3, 2, 0}, false}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::exception);
    CHECK(e->group() == xyz{2, 1, 0});
    CHECK(e->local() == xyz{3, 2, 0});
    CHECK(e->where().empty());
    const std::string what = e->what();
    CHECK_THAT(what, ContainsSubstring("boom from the kernel"));
    CHECK_THAT(what, ContainsSubstring("work-item (3, 2, 0)"));
    CHECK_THAT(what, ContainsSubstring("work-group (2, 1, 0)"));
    check_usable(b);
  }
}

TEST_CASE("weak memory refuses a kernel compiled without the checked-access hooks, before it runs", "[diagnostics]") {
  // This translation unit is not instrumented (KI_CHECKED_HOOKS=0): the oracle would not see
  // its stores, so memory_model::weak could not delay them.
  ki::reference::backend b{.device = cuda, .threads = 1};
  b.memory = ki::reference::memory_model::weak;
  auto out = ki::zeros<i64>(b, 4);
  try {
    ki::launch(b, {.numgroups = 1, .workgroupsize = 4}, throw_at{{9, 9, 9}, {9, 9, 9}, false}, out);
    FAIL("no error");
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("memory_model::weak"));
    CHECK_THAT(what, ContainsSubstring("ki::reference_checked"));
    CHECK_THAT(what, ContainsSubstring("KI_CHECKED_HOOKS=0"));
  }
  ki::synchronize(b);  // nothing was queued
  CHECK(ki::to_host(b, out) == std::vector<i64>(4, 0));
  b.memory = ki::reference::memory_model::sequential;
  check_usable(b);
}

TEST_CASE("an exception after a barrier names the barrier it passed", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  auto out = ki::zeros<i64>(b, 4 * 8);
  ki::launch(b, {.numgroups = 4, .workgroupsize = 8}, throw_at{{1, 0, 0}, {6, 0, 0}, true}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::exception);
  CHECK(e->group() == xyz{1, 0, 0});
  CHECK(e->local() == xyz{6, 0, 0});
  CHECK(this_file.at_line(e->where(), throw_at::line));
  CHECK(this_file.names(e->what(), "after barrier ", throw_at::line));
  check_usable(b);
}

TEST_CASE("an error names the last sync point its work-item passed in its own work-group", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda, .threads = 1};  // the groups run one after another on one thread
  for (const bool reduce_last : {true, false}) {
    INFO("group 0 passes " << (reduce_last ? "the barrier, then the reduction" : "the reduction, then the barrier"));
    auto out = ki::zeros<i64>(b, 2 * 8);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, sync_then_throw{reduce_last, 0}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->local() == xyz{1, 0, 0});
    const unsigned last = reduce_last ? sync_then_throw::reduce_line : sync_then_throw::barrier_line;
    CHECK(this_file.at_line(e->where(), last));
    CHECK(this_file.names(e->what(), reduce_last ? "(after sub_group_reduce " : "(after barrier ", last));
  }
  // Group 1 passes no sync point, after group 0 passed both on the same thread: nothing is named.
  auto out = ki::zeros<i64>(b, 2 * 8);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, sync_then_throw{false, 1}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->group() == xyz{1, 0, 0});
  CHECK(e->where().empty());
  CHECK_THAT(std::string(e->what()), !ContainsSubstring("(after"));
}

TEST_CASE("an exception that is not a std::exception is reported too", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  ki::launch(b, {.numgroups = 2, .workgroupsize = 4}, throw_int{});
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::exception);
  CHECK(e->local() == xyz{2, 0, 0});
  CHECK_THAT(std::string(e->what()), ContainsSubstring("not a std::exception"));
  check_usable(b);
}

TEST_CASE("ki::span out of bounds reports the index, the size and the work-item", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  SECTION("linear index") {
    // 1000 work-items in groups of 250 write a[gid + 1]: only gid 999 (group 3, item 249) is out.
    auto a = ki::zeros<i64>(b, 1000);
    ki::launch(b, {.ndrange = 1000, .workgroupsize = 250}, shifted_write{}, a, i64{1});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::exception);
    CHECK(e->group() == xyz{3, 0, 0});
    CHECK(e->local() == xyz{249, 0, 0});
    const std::string what = e->what();
    CHECK_THAT(what, ContainsSubstring("index 1000 is out of bounds at ") &&
                         ContainsSubstring(" for a ki::span<long int> of 1000 elements"));
    CHECK_THAT(what, ContainsSubstring("work-item (249, 0, 0)"));
    CHECK_THAT(what, ContainsSubstring("work-group (3, 0, 0)"));
  }
  SECTION("cartesian index") {
    auto a = ki::zeros<i64>(b, {4, 3});
    ki::launch(b, {.numgroups = {1, 2}, .workgroupsize = {4, 3}}, oob_2d{}, a);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::exception);
    CHECK(e->local() == xyz{2, 2, 0});
    CHECK_THAT(std::string(e->what()), ContainsSubstring(" for a ki::span<long int> of extents (4, 3, 1)") &&
                                           ContainsSubstring("index (2, 3, 0) is out of bounds at "));
  }
  SECTION("local memory") {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, oob_local{});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::exception);
    CHECK(e->local() == xyz{5, 0, 0});
    CHECK_THAT(std::string(e->what()), ContainsSubstring("index 16 is out of bounds at ") &&
                                           ContainsSubstring(" for local memory allocated at ") &&
                                           ContainsSubstring(" (16 elements of int)"));
  }
  check_usable(b);
}

TEST_CASE("an out-of-bounds access names its own source line and the array", "[diagnostics]") {
  // Release build, no debug information: the line comes from the accessor's index parameter.
  const ki::reference::backend b{.device = cuda};
  auto a = ki::zeros<float>(b, {4, 2});  // 8 elements
  auto c = ki::zeros<double>(b, 10);
  const auto run = [&](int which) {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 4}, oob_lines{}, a, ki::Const(c), which);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::exception);
    CHECK(e->group() == xyz{0, 0, 0});
    CHECK(e->local() == xyz{3, 0, 0});
    return *e;
  };
  SECTION("ki::span") {
    const auto e = run(0);
    const std::string what = e.what();
    CHECK_THAT(what, ContainsSubstring("index 8 is out of bounds at " + this_file.loc(oob_lines::span_line) +
                                       " for a ki::span<float> of 8 elements"));
    CHECK(this_file.names(what, "at ", oob_lines::span_line));
    CHECK(e.where().rfind(this_file.loc(oob_lines::span_line), 0) == 0);
  }
  SECTION("ki::const_span") {
    const auto e = run(1);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index 10 is out of bounds at " + this_file.loc(oob_lines::const_line) +
                                 " for a ki::span<const double> of 10 elements"));
    CHECK(e.where().rfind(this_file.loc(oob_lines::const_line), 0) == 0);
  }
  SECTION("local memory") {
    const auto e = run(2);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index 64 is out of bounds at " + this_file.loc(oob_lines::local_line) +
                                 " for local memory allocated at " + this_file.loc(oob_lines::local_site) +
                                 " (64 elements of float)"));
    CHECK(e.where().rfind(this_file.loc(oob_lines::local_line), 0) == 0);
  }
  SECTION("2-D local memory") {
    const auto e = run(3);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index 8 in dimension 1 is out of bounds at " + this_file.loc(oob_lines::local2_line) +
                                 " for local memory allocated at " + this_file.loc(oob_lines::local2_site) +
                                 " (4 x 8 elements of int)"));
  }
  SECTION("2-D ki::span") {
    const auto e = run(4);
    CHECK_THAT(std::string(e.what()),
               ContainsSubstring("index (3, 2, 0) is out of bounds at " + this_file.loc(oob_lines::span2_line) +
                                 " for a ki::span<float> of extents (4, 2, 1)"));
  }
  check_usable(b);
}

TEST_CASE("device functions called outside a kernel are a std::logic_error naming the function and the line",
          "[diagnostics]") {
  // On the host, with no launch running: each call is refused before it has any effect.
  const auto refused = [](const auto& call, const std::string& name, unsigned line) {
    INFO(name);
    try {
      call();
      FAIL_CHECK("no error");
    } catch (const std::logic_error& e) {
      const std::string what = e.what();
      CHECK_THAT(what, ContainsSubstring("ki: " + name));
      CHECK_THAT(what, ContainsSubstring("called outside a kernel"));
      if (line != 0) CHECK(this_file.names(what, name + " at ", line));
    }
  };
  i64 x = 5;
  float f = 1.5f;
  refused([] { (void)ki::sub_group_reduce(std::plus<>{}, i64{1}); }, "sub_group_reduce", __LINE__);
  refused([] { (void)ki::sub_group_scan(std::plus<>{}, 1, 4); }, "sub_group_scan", __LINE__);
  refused([] { (void)ki::shfl(1, 0); }, "shfl", __LINE__);
  refused([] { (void)ki::shfl_xor(2.0, 1); }, "shfl_xor", __LINE__);
  refused([] { (void)ki::sub_group_ballot(true); }, "sub_group_ballot", __LINE__);
  refused([] { ki::sub_group_barrier(); }, "sub_group_barrier", __LINE__);
  refused([] { ki::barrier(); }, "barrier", __LINE__);
  refused([] { (void)ki::localmemory<int, 4>([] {}); }, "localmemory", __LINE__);
  refused([&] { (void)ki::atomic_fetch_add(&x, i64{1}); }, "atomic_fetch_add", __LINE__);
  refused([&] { ki::atomic_store(&f, 2.0f); }, "atomic_store", __LINE__);
  refused([&] { (void)ki::atomic_load(&x); }, "atomic_load", __LINE__);
  refused([] { ki::print("from the host"); }, "print", 0);  // (variadic: no line to name)
  CHECK(x == 5);                                            // the atomics had no effect
  CHECK(f == 1.5f);
}

TEST_CASE("a fiber stack overflow is reported with the work-item, and the backend stays usable", "[diagnostics]") {
#if defined(__SANITIZE_ADDRESS__)
  // The oracle recovers from the overflow with a siglongjmp out of its signal handler, which
  // AddressSanitizer cannot follow (its shadow of the thread's stack is left stale).
  SKIP("stack-overflow recovery is not supported in AddressSanitizer builds");
#endif
  for (int threads : {1, 0}) {
    for (bool after_barrier : {false, true}) {
      const ki::reference::backend b{.device = cuda, .threads = threads, .stack_size = 64 * 1024};
      INFO("threads = " << threads << ", after a barrier: " << after_barrier);
      auto out = ki::zeros<int>(b, 1);
      ki::launch(b, {.numgroups = 3, .workgroupsize = 16}, overflow_at{1, 5, after_barrier}, out);
      const auto e = sync_error(b);
      REQUIRE(e);
      CHECK(e->error_kind() == kind::stack_overflow);
      CHECK(e->group() == xyz{1, 0, 0});
      CHECK(e->local() == xyz{5, 0, 0});
      const std::string what = e->what();
      CHECK_THAT(what, ContainsSubstring("stack_size = 65536"));
      CHECK_THAT(what, ContainsSubstring("work-item (5, 0, 0)"));
      CHECK_THAT(what, ContainsSubstring("work-group (1, 0, 0)"));
      if (after_barrier) CHECK(this_file.at_line(e->where(), overflow_at::line));
      check_usable(b);
      check_usable(ki::reference::backend{.device = cuda});
    }
  }
}

TEST_CASE("a stack overflow on the way into a barrier is the arriving work-item's", "[diagnostics]") {
#if defined(__SANITIZE_ADDRESS__)
  SKIP("stack-overflow recovery is not supported in AddressSanitizer builds");
#endif
  // The executor marks the next work-item current before switching to it: an overflow while
  // the switch saves the arriving item's registers must still be blamed on the arriving one.
  const ki::reference::backend b{.device = cuda, .threads = 1, .stack_size = 64 * 1024};
  auto out = ki::zeros<int>(b, 8);
  int overflows = 0, fits = 0;
  for (i64 depth = 60 * 1024; depth <= 132 * 1024; depth += 32) {  // (stack colouring adds up to 64 KiB)
    ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, deeper_at_barrier{}, out, depth);
    const auto e = sync_error(b);
    if (!e) {
      ++fits;
      continue;
    }
    ++overflows;
    INFO("depth " << depth << ": " << e->what());
    REQUIRE(e->error_kind() == kind::stack_overflow);
    REQUIRE(e->local() == xyz{5, 0, 0});
  }
  CHECK(fits > 0);  // the sweep crossed the end of the stack
  CHECK(overflows > 0);
  check_usable(b);
}

TEST_CASE("items that exit while others wait at a barrier: cannot_finish", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda, .threads = 1};
  ki::launch(b, {.numgroups = 3, .workgroupsize = 8}, partial_barrier{2});
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::cannot_finish);
  CHECK(e->group() == xyz{2, 0, 0});
  CHECK(e->local() == xyz{0, 0, 0});  // the first waiting item
  CHECK(this_file.at_line(e->where(), partial_barrier::line));
  const std::string what = e->what();
  CHECK(this_file.names(what, "items 0-2 wait at barrier ", partial_barrier::line));
  CHECK_THAT(what, ContainsSubstring("items 3-7 exited"));
  CHECK_THAT(what, ContainsSubstring("work-group (2, 0, 0)"));
  check_usable(b);
}

TEST_CASE("a barrier reached a different number of times: cannot_finish", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, uneven_loop{});
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::cannot_finish);
  const std::string what = e->what();
  CHECK(this_file.names(what, "items 0 wait at barrier ", uneven_loop::line));
  CHECK_THAT(what, ContainsSubstring("items 1-7 exited"));
  check_usable(b);
}

TEST_CASE("item ranges are linear local ids, x fastest", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  ki::launch(b, {.numgroups = 1, .workgroupsize = {4, 2}}, row_waits{});
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::cannot_finish);
  CHECK(e->local() == xyz{0, 1, 0});
  const std::string what = e->what();
  CHECK(this_file.names(what, "items 4-7 wait at barrier ", row_waits::line));
  CHECK_THAT(what, ContainsSubstring("items 0-3 exited"));
  check_usable(b);
}

TEST_CASE("items at different barriers: barrier_mismatch names both lines", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  SECTION("two barriers") {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, two_barriers{});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::barrier_mismatch);
    CHECK(e->local() == xyz{0, 0, 0});
    const std::string what = e->what();
    CHECK(this_file.names(what, "items 0-3 wait at barrier ", two_barriers::line_a));
    CHECK(this_file.names(what, "items 4-7 wait at barrier ", two_barriers::line_b));
    CHECK_THAT(what, !ContainsSubstring("exited"));
  }
  SECTION("two barriers and exited items") {
    ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, three_ways{});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::barrier_mismatch);
    const std::string what = e->what();
    CHECK(this_file.names(what, "items 0-1 wait at barrier ", three_ways::line_a));
    CHECK(this_file.names(what, "items 2-4 wait at barrier ", three_ways::line_b));
    CHECK_THAT(what, ContainsSubstring("items 5-7 exited"));
  }
  check_usable(b);
}

TEST_CASE("local memory beyond the profile's max_local_memory is a resource error", "[diagnostics]") {
  ki::reference::backend b{.device = cuda};
  b.device.max_local_memory = 1024;
  auto out = ki::zeros<int>(b, 8);
  SECTION("one call site too large") {
    using k = local_user<2048>;
    ki::launch(b, {.numgroups = 2, .workgroupsize = 4}, k{}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::resource);
    CHECK(e->group() == xyz{0, 0, 0});
    const std::string what = e->what();
    CHECK(this_file.names(what, "localmemory at ", k::line_first));
    CHECK_THAT(what, ContainsSubstring("2048"));
    CHECK_THAT(what, ContainsSubstring("max_local_memory = 1024"));
  }
  SECTION("two call sites together too large") {
    using k = local_user<600, 600>;
    ki::launch(b, {.numgroups = 2, .workgroupsize = 4}, k{}, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK(e->error_kind() == kind::resource);
    const std::string what = e->what();
    CHECK(this_file.names(what, "localmemory at ", k::line_second));
    CHECK_THAT(what, ContainsSubstring("already uses 600"));
  }
  SECTION("exactly the limit is fine") {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 4}, local_user<512, 512>{}, out);
    ki::synchronize(b);
    CHECK(ki::to_host(b, out) == std::vector<int>(8, 1));
  }
  check_usable(ki::reference::backend{.device = cuda});
}

TEST_CASE("an error is reported once; with several failed launches, the first", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  auto out = ki::zeros<i64>(b, 64);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, throw_at{{0, 0, 0}, {1, 0, 0}, false}, out);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 8}, throw_at{{1, 0, 0}, {4, 0, 0}, false}, out);
  const auto e = sync_error(b);
  REQUIRE(e);
  CHECK(e->group() == xyz{0, 0, 0});
  CHECK(e->local() == xyz{1, 0, 0});
  CHECK_NOTHROW(ki::synchronize(b));
  CHECK_NOTHROW(ki::synchronize(b));
  check_usable(b);
}

TEST_CASE("the error reported is that of the first failing group in order", "[diagnostics]") {
  // With threads = 1 groups run in order and the first failure ends the launch; with more
  // threads the executor still reports the lowest failing group id, whatever the timing.
  struct fail_some {
    void operator()(ki::span<i64>) const {
      const auto g = ki::get_group_id();
      if ((g.y >= 2 || g.z >= 1) && ki::get_local_id().x == 1) throw std::runtime_error("failing group");
    }
  };
  for (int threads : {1, 0, 3}) {
    INFO("threads = " << threads);
    const ki::reference::backend b{.device = cuda, .threads = threads};
    auto out = ki::zeros<i64>(b, 4 * 5 * 3 * 2);
    // Groups (x, y, z) with y >= 2 or z >= 1 fail; in linear order (x fastest) the first is (0, 2, 0).
    for (int repeat = 0; repeat < 3; ++repeat) {
      ki::launch(b, {.numgroups = {4, 5, 3}, .workgroupsize = 2}, fail_some{}, out);
      const auto e = sync_error(b);
      REQUIRE(e);
      CHECK(e->group() == xyz{0, 2, 0});
      CHECK(e->local() == xyz{1, 0, 0});
    }
    check_usable(b);
  }
}

namespace diag_names {
/// A kernel given no name: errors name it by its type.
struct unnamed_thrower {
  void operator()() const {
    if (ki::get_local_id().x == 1) throw std::runtime_error("unnamed");
  }
};

/// Launches a lambda that throws from work-item 1: errors name the lambda by where it is.
inline void launch_lambda(const ki::reference::backend& b) {
  ki::launch(
      b, {.numgroups = 1, .workgroupsize = 4}, KI_LAMBDA() {
        if (ki::get_local_id().x == 1) throw std::runtime_error("unnamed lambda");
      });
}
}  // namespace diag_names

TEST_CASE("a kernel without a name is named by its type; a lambda by where it is", "[diagnostics]") {
  const ki::reference::backend b{.device = cuda};
  SECTION("a functor: its qualified type name") {
    ki::launch(b, {.numgroups = 1, .workgroupsize = 4}, diag_names::unnamed_thrower{});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK_THAT(std::string(e->what()), ContainsSubstring("kernel 'diag_names::unnamed_thrower'"));
  }
  SECTION("a lambda: the function it is in (GCC), or its file and line (Clang)") {
    diag_names::launch_lambda(b);
    const auto e = sync_error(b);
    REQUIRE(e);
    const std::string what = e->what();
    INFO(what);
#if defined(__clang__)
    CHECK_THAT(what, ContainsSubstring("kernel 'lambda at diagnostics.cpp:"));
#else
    CHECK_THAT(what, ContainsSubstring("kernel 'lambda in diag_names::launch_lambda'"));
#endif
  }
  SECTION("a name given in compile_options wins") {
    ki::launch(b, {.numgroups = 1, .workgroupsize = 4, .name = "mine"}, diag_names::unnamed_thrower{});
    const auto e = sync_error(b);
    REQUIRE(e);
    CHECK_THAT(std::string(e->what()), ContainsSubstring("kernel 'mine'"));
  }
  check_usable(b);
}
