// The fault suite: spin-waits. A work-item that waits in a loop for another work-item of its
// group, with no sync point in the loop, waits forever on the CPU backends when the other has
// not run yet (KI work-items switch only at sync points; a KA phase runs each work-item to its
// end). Both CPU backends, both layers: the spin is a kernel_error of kind no_progress naming
// the work-group, the work-item, the atomic's line and what the others do, never a hang, and
// the backend runs a correct launch afterwards. Polls that are not a spin (many work-items
// reading one value that does not change) are never reported, even with a tiny limit.
//
// These tests run under a ctest TIMEOUT (CMakeLists.txt): without the watch they hang.
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "fault_support.hpp"

using ki_test::faults::cpu_backends;

namespace {
using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;
using kind = ki::kernel_error::kind;

constexpr i64 groups = 4, size = 32;
constexpr i64 spin_group = 2, waiter = 5, setter = 6;  // in group 2, work-item 5 waits for work-item 6

template <class B>
B with_limit(std::uint64_t limit) {
  B b{};
  b.spin_limit = limit;
  return b;
}

/// Every work-item adds 1 to out[its global id]; in work-group `spin_group` (when `spin`),
/// work-item `waiter` first waits for a flag that work-item `setter` stores after it: the forward
/// order runs the waiter first, so it waits forever. Not spinning: the setter and the waiter
/// trade places (the wait ends at once).
struct ki_spin {
  static constexpr unsigned line_poll = __LINE__ + 7;
  void operator()(ki::span<int> out, ki::span<int> flag, int spin) const {
    const i64 g = ki::get_group_id().x, l = ki::get_local_id().x;
    const i64 w = spin != 0 ? waiter : setter, s = spin != 0 ? setter : waiter;
    if (g == spin_group) {
      if (l == s) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
      if (l == w)
        while (ki::atomic_load(&flag[0], ki::memory_order::acquire) == 0) {
        }
    }
    out[ki::get_global_id().x] += 1;
  }
};

/// The same as a KA kernel: one phase.
struct ka_spin {
  static constexpr unsigned line_phase = __LINE__ + 4;
  static constexpr unsigned line_poll = __LINE__ + 8;
  template <class G>
  void operator()(G& g, ki::span<int> out, ki::span<int> flag, int spin) const {
    g.items([&](auto i) {
      const i64 l = i.local_linear(), w = spin != 0 ? waiter : setter, s = spin != 0 ? setter : waiter;
      if (g.group_linear() == spin_group) {
        if (l == s) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
        if (l == w)
          while (ki::atomic_load(&flag[0], ki::memory_order::acquire) == 0) {
          }
      }
      out[i.global_linear()] += 1;
    });
  }
};

template <class B>
void check_spin_report(const B& b, unsigned poll_line, bool ka) {
  const bool oracle = std::is_same_v<B, ki::reference::backend>;
  const ki::kernel_error e = ki_test::faults::failure_of(b);
  const std::string msg = e.what();
  INFO(msg);
  CHECK(e.error_kind() == kind::no_progress);
  CHECK(e.group() == ki::xyz<i64>{spin_group, 0, 0});
  CHECK(e.local() == ki::xyz<i64>{waiter, 0, 0});
  CHECK_THAT(e.where(), ContainsSubstring("spin_faults.cpp:" + std::to_string(poll_line)));
  CHECK_THAT(msg, ContainsSubstring("polled ki::atomic_load at spin_faults.cpp:" + std::to_string(poll_line)));
  CHECK_THAT(msg, ContainsSubstring("(no-progress)"));
  if (!ka) {
    CHECK_THAT(msg, ContainsSubstring("items 0-4 exited; items 6-31 have not started"));
  } else if (oracle) {
    CHECK_THAT(msg,
               ContainsSubstring("items 0-4 have run the phase at spin_faults.cpp:" +
                                 std::to_string(ka_spin::line_phase) + " to its end; items 6-31 have not started it"));
  } else {
    CHECK_THAT(msg, ContainsSubstring("those before it in the phase at spin_faults.cpp:" +
                                      std::to_string(ka_spin::line_phase)));
  }
  CHECK_THAT(msg, ContainsSubstring("the limit is ki::"));
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("faults: a KI spin-wait on a work-item of its group is no-progress, not a hang", "[faults]",
                        cpu_backends) {
  for (const int threads : {1, 2}) {
    INFO("threads " << threads);
    TestType b = with_limit<TestType>(1 << 12);
    b.threads = threads;
    auto out = ki::zeros<int>(b, groups * size);
    auto flag = ki::zeros<int>(b, 1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_spin{}, out, flag, 1);
    check_spin_report(b, ki_spin::line_poll, false);
    // The same backend value runs a correct launch.
    auto out2 = ki::zeros<int>(b, groups * size);
    auto flag2 = ki::zeros<int>(b, 1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_spin{}, out2, flag2, 0);
    ki::synchronize(b);
    CHECK(ki::to_host(b, out2) == std::vector<int>(groups * size, 1));
  }
}

TEMPLATE_LIST_TEST_CASE("faults: a spin-wait inside a KA phase is no-progress, not a hang", "[faults]", cpu_backends) {
  for (const int threads : {1, 2}) {
    INFO("threads " << threads);
    TestType b = with_limit<TestType>(1 << 12);
    b.threads = threads;
    auto out = ki::zeros<int>(b, groups * size);
    auto flag = ki::zeros<int>(b, 1);
    ki::ka::kernel k(b, ka_spin{}, size);
    k({.ndrange = groups * size}, out, flag, 1);
    check_spin_report(b, ka_spin::line_poll, true);
    auto out2 = ki::zeros<int>(b, groups * size);
    auto flag2 = ki::zeros<int>(b, 1);
    k({.ndrange = groups * size}, out2, flag2, 0);
    ki::synchronize(b);
    CHECK(ki::to_host(b, out2) == std::vector<int>(groups * size, 1));
  }
}

namespace {
/// Polls that are no spin: every work-item reads a flag that never changes `reads` times (and
/// counts what it saw), with a limit far below all the reads of a group together.
constexpr int reads = 40;
struct ki_reads {
  void operator()(ki::span<int> out, ki::span<int> flag) const {
    int seen = 0;
    for (int r = 0; r < reads; ++r) seen += ki::atomic_load(&flag[0]);
    out[ki::get_global_id().x] = seen;
  }
};
struct ka_reads {
  template <class G>
  void operator()(G& g, ki::span<int> out, ki::span<int> flag) const {
    g.items([&](auto i) {
      int seen = 0;
      for (int r = 0; r < reads; ++r) seen += ki::atomic_load(&flag[0]);
      out[i.global_linear()] = seen;
    });
  }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE("faults: many work-items reading one unchanging atomic are no spin", "[faults]", cpu_backends) {
  constexpr i64 many = 64;                      // groups
  const TestType b = with_limit<TestType>(64);  // (each work-item repeats 39 times; a group 2,495)
  auto out = ki::zeros<int>(b, many * size);
  auto flag = ki::ones<int>(b, 1);
  ki::launch(b, {.numgroups = many, .workgroupsize = size}, ki_reads{}, out, flag);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<int>(many * size, reads));
  auto out2 = ki::zeros<int>(b, many * size);
  ki::ka::kernel k(b, ka_reads{}, size);
  k({.ndrange = many * size}, out2, flag);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out2) == std::vector<int>(many * size, reads));
}
