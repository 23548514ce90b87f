// The oracle never hangs on a spin-wait between work-items of one group. The model promises no
// forward progress between them (a work-item waiting in a loop for another of its group, with
// no barrier between, may wait forever on a GPU too), and the oracle runs a group's work-items
// one at a time, switching only at sync points: such a loop is reported as a kernel_error of
// kind no_progress, naming the polling work-item, the atomic's line and what the other
// work-items of the group are doing.
//
// These tests run under a ctest TIMEOUT (CMakeLists.txt): without the check they hang, and the
// timeout turns the hang into a failure.
#include <cstdint>
#include <optional>
#include <string>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "test_support.hpp"

namespace {

using i64 = std::int64_t;
using kind = ki::kernel_error::kind;
using ki_test::oracle::sync_error;
constexpr ki_test::oracle::source_file this_file{"progress.cpp"};

ki::reference::backend backend_for(std::uint64_t seed, std::uint64_t spin_limit = 0) {
  ki::reference::backend b{.device = ki::reference::profile::preset("cuda"), .threads = 1, .print_warnings = false};
  b.schedule = ki::reference::schedule::from_seed(seed);
  b.spin_limit = spin_limit;
  return b;
}

/// Work-item `setter` stores 1 to flag[0]; work-item `waiter` waits for it in a loop, then
/// writes out[0] = 1. No barrier between: forward progress of the setter is not promised.
struct spin_on_flag {
  static constexpr unsigned line_poll = __LINE__ + 6;
  i64 setter = 0, waiter = 1;
  void operator()(ki::span<int> flag, ki::span<int> out) const {
    const i64 l = ki::get_local_id().x;
    if (l == setter) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
    if (l == waiter) {
      while (ki::atomic_load(&flag[0], ki::memory_order::acquire) == 0) {
      }
      out[0] = 1;
    }
  }
};

/// The outcome of one launch of k over one group of n work-items (flag and out zeroed).
template <class K>
std::optional<ki::kernel_error> run(const ki::reference::backend& b, K k, i64 n, int* result = nullptr) {
  auto flag = ki::zeros<int>(b, 1);
  auto out = ki::zeros<int>(b, 1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = n}, k, flag, out);
  auto e = sync_error(b);
  if (result != nullptr) *result = ki::to_host(b, out)[0];
  return e;
}

/// The same over `groups` groups of n.
template <class K>
std::optional<ki::kernel_error> run_groups(const ki::reference::backend& b, K k, i64 groups, i64 n, int* result) {
  auto flag = ki::zeros<int>(b, 1);
  auto out = ki::zeros<int>(b, 1);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n}, k, flag, out);
  auto e = sync_error(b);
  *result = ki::to_host(b, out)[0];
  return e;
}

/// A healthy launch after a failure: the backend still works.
void check_usable(const ki::reference::backend& b) {
  int result = 0;
  const auto e = run(b, spin_on_flag{0, 1}, 2, &result);  // (forward: no wait; reverse: checked below)
  if (b.schedule.items == ki::reference::order::forward) {
    CHECK(!e);
    CHECK(result == 1);
  }
  auto x = ki::zeros<int>(b, 64);
  ki::launch(
      b, {.numgroups = 2, .workgroupsize = 32},
      KI_LAMBDA(ki::span<int> a) { a[ki::get_global_id().x] = static_cast<int>(ki::get_global_id().x) + 1; }, x);
  ki::synchronize(b);
  const auto h = ki::to_host(b, x);
  for (int i = 0; i < 64; ++i) CHECK(h[static_cast<std::size_t>(i)] == i + 1);
}

TEST_CASE("progress: a spin-wait that happens to succeed in the forward order is not reported", "[oracle][progress]") {
  // Seed 0: work-item 0 runs first, sets the flag and exits; work-item 1 then sees it at once.
  int result = 0;
  CHECK(!run(backend_for(0), spin_on_flag{0, 1}, 2, &result));
  CHECK(result == 1);
}

TEST_CASE("progress: a work-item spinning on an atomic of its group is reported, not a hang", "[oracle][progress]") {
  // Seed 1 (reverse): work-item 1 starts first and waits for work-item 0, which never runs.
  for (const std::uint64_t limit : {std::uint64_t{1000}, std::uint64_t{0}}) {  // (0: the default, 1 << 20)
    INFO("spin_limit " << limit);
    const auto b = backend_for(1, limit);
    int result = -1;
    const auto e = run(b, spin_on_flag{0, 1}, 2, &result);
    REQUIRE(e);
    const std::string what = e->what();
    INFO(what);
    CHECK(e->error_kind() == kind::no_progress);
    CHECK(ki::reference::to_string(e->error_kind()) == std::string("no-progress"));
    CHECK(e->local() == ki::xyz<i64>{1, 0, 0});
    CHECK(e->group() == ki::xyz<i64>{0, 0, 0});
    CHECK(this_file.at_line(e->where(), spin_on_flag::line_poll));
    CHECK(what.find("work-item (1, 0, 0)") != std::string::npos);
    CHECK(this_file.names(what, "ki::atomic_load at ", spin_on_flag::line_poll));
    CHECK(what.find(std::to_string(limit == 0 ? std::uint64_t{1} << 20 : limit) + " times") != std::string::npos);
    CHECK(what.find("item 0 has not started") != std::string::npos);
    CHECK(result == 0);  // the waiter never got past its loop
    check_usable(b);
  }
}

/// Work-items 0..n-2 reach a barrier; the last one waits for a flag that work-item 0 sets only
/// after the barrier, which the last one never reaches: a deadlock on every GPU as well.
struct spin_before_barrier {
  static constexpr unsigned line_barrier = __LINE__ + 3, line_poll = __LINE__ + 5;
  void operator()(ki::span<int> flag, ki::span<int>) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    if (l != n - 1) ki::barrier();
    else
      while (ki::atomic_load(&flag[0]) == 0) {
      }
    if (l == 0) ki::atomic_store(&flag[0], 1);
  }
};

TEST_CASE("progress: the report says where the other work-items of the group are", "[oracle][progress]") {
  // Forward: items 0-6 wait at the barrier when item 7 starts polling.
  const auto b = backend_for(0, 5000);
  const auto e = run(b, spin_before_barrier{}, 8);
  REQUIRE(e);
  const std::string what = e->what();
  INFO(what);
  CHECK(e->error_kind() == kind::no_progress);
  CHECK(e->local() == ki::xyz<i64>{7, 0, 0});
  CHECK(this_file.names(what, "ki::atomic_load at ", spin_before_barrier::line_poll));
  CHECK(this_file.names(what, "items 0-6 wait at barrier ", spin_before_barrier::line_barrier));
  check_usable(b);
  // Reverse: item 7 polls first, the others have not started.
  const auto r = run(backend_for(1, 5000), spin_before_barrier{}, 8);
  REQUIRE(r);
  CHECK(r->error_kind() == kind::no_progress);
  CHECK(std::string(r->what()).find("items 0-6 have not started") != std::string::npos);
}

/// One work-item adds to a counter many times: the value changes at every operation, which
/// is progress, not a spin.
struct long_atomic_loop {
  i64 count;
  void operator()(ki::span<int> flag, ki::span<int> out) const {
    if (ki::get_local_id().x != 0) return;
    for (i64 k = 0; k < count; ++k) ki::atomic_fetch_add(&flag[0], 1);
    out[0] = ki::atomic_load(&flag[0]);
  }
};

TEST_CASE("progress: atomics that change the value, or a sync point between polls, are not a spin",
          "[oracle][progress]") {
  for (const std::uint64_t seed : {0, 1}) {
    int result = 0;
    CHECK(!run(backend_for(seed, 100), long_atomic_loop{10000}, 4, &result));
    CHECK(result == 10000);
  }
  // The same value read many times, but with a barrier between the reads: not a spin (the other
  // work-items run at every barrier).
  const auto b = backend_for(0, 100);
  auto flag = ki::zeros<int>(b, 1);
  auto out = ki::zeros<int>(b, 1);
  ki::launch(
      b, {.numgroups = 1, .workgroupsize = 4},
      KI_LAMBDA(ki::span<int> f, ki::span<int> o) {
        int seen = 0;
        for (int k = 0; k < 1000; ++k) {
          seen += ki::atomic_load(&f[0]);
          ki::barrier();
        }
        if (ki::get_local_id().x == 0) o[0] = seen + 1;
      },
      flag, out);
  CHECK(!sync_error(b));
  CHECK(ki::to_host(b, out)[0] == 1);
}

/// Work-item 1 of each group waits for a flag of its group that work-item 0 sets, in global memory
/// (flag[g]) or local memory.
struct spin_per_group {
  static constexpr unsigned line_barrier = __LINE__ + 8, line_poll_global = __LINE__ + 11,
                            line_poll_local = __LINE__ + 13;
  bool local;
  void operator()(ki::span<int> flag, ki::span<int> out) const {
    auto loc = ki::localmemory<int, 1>([] {});
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x;
    int* f = local ? &loc[0] : &flag[g];
    if (local && l == 0) loc[0] = 0;
    ki::barrier();  // (before the spin: a sync point there does not end it)
    if (l == 0) ki::atomic_store(f, 1);
    if (l == 1 && !local)
      while (ki::atomic_load(f) == 0) {
      }
    if (l == 1 && local)
      while (ki::atomic_load(f) == 0) {
      }
    if (l == 1) ki::atomic_fetch_add(&out[0], 1);
  }
};

TEST_CASE("progress: with several threads and groups, a spin is reported once nothing else can end it",
          "[oracle][progress]") {
  auto b = backend_for(1, 1000);
  b.threads = 2;
  for (const bool local : {false, true}) {
    INFO((local ? "local" : "global") << " memory");
    auto flag = ki::zeros<int>(b, 8);
    auto out = ki::zeros<int>(b, 1);
    ki::launch(b, {.numgroups = 8, .workgroupsize = 2}, spin_per_group{local}, flag, out);
    const auto e = sync_error(b);
    REQUIRE(e);
    const std::string what = e->what();
    INFO(what);
    CHECK(e->error_kind() == kind::no_progress);
    CHECK(e->local() == ki::xyz<i64>{1, 0, 0});
    CHECK(this_file.names(what, "ki::atomic_load at ",
                          local ? spin_per_group::line_poll_local : spin_per_group::line_poll_global));
    // Global memory: other groups might have stored to it, until none ended for a while.
    CHECK(what.find(local ? "the atomic is in the group's local memory" : "no other work-group ended for 1000 ms") !=
          std::string::npos);
    CHECK(this_file.names(what, "item 0 is released from barrier ", spin_per_group::line_barrier));
  }
  // Forward: every group's work-item 0 stores first, nothing spins.
  b.schedule = ki::reference::schedule::from_seed(0);
  for (const bool local : {false, true}) {
    auto flag = ki::zeros<int>(b, 8);
    auto out = ki::zeros<int>(b, 1);
    ki::launch(b, {.numgroups = 8, .workgroupsize = 2}, spin_per_group{local}, flag, out);
    CHECK(!sync_error(b));
    CHECK(ki::to_host(b, out)[0] == 8);
  }
}

/// Work-item 0 of group `waiter` waits for flag[0], which work-item 0 of group `setter` stores
/// after `work` barriers (so that the wait outlasts the spin limit).
struct wait_for_group {
  static constexpr unsigned line_poll = __LINE__ + 9;
  i64 setter, waiter;
  int work;
  void operator()(ki::span<int> flag, ki::span<int> out) const {
    const i64 l = ki::get_local_id().x, g = ki::get_group_id().x;
    if (g == setter)
      for (int k = 0; k < work; ++k) ki::barrier();
    if (g == setter && l == 0) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
    if (g == waiter && l == 0) {
      while (ki::atomic_load(&flag[0], ki::memory_order::acquire) == 0) {
      }
      out[0] = 1;
    }
  }
};

TEST_CASE("progress: a wait for another work-group", "[oracle][progress]") {
  // Several threads: group 1 waits for group 0, which runs on another thread (or ran before it
  // on this one) and ends the wait: not reported, however long past the spin limit it polls.
  auto b = backend_for(0, 100);
  b.threads = 2;
  int result = 0;
  CHECK(!run_groups(b, wait_for_group{0, 1, 2000}, 2, 64, &result));
  CHECK(result == 1);
  // One thread: the groups run one after another, so a wait for a later group never ends.
  b.threads = 1;
  const auto e = run_groups(b, wait_for_group{1, 0, 0}, 2, 64, &result);
  REQUIRE(e);
  const std::string what = e->what();
  INFO(what);
  CHECK(e->error_kind() == kind::no_progress);
  CHECK(e->group() == ki::xyz<i64>{0, 0, 0});
  CHECK(this_file.names(what, "ki::atomic_load at ", wait_for_group::line_poll));
  CHECK(what.find("no other work-group runs meanwhile") != std::string::npos);
  CHECK(what.find("items 1-63 have not started") != std::string::npos);
  check_usable(b);
}

// KI_REFERENCE_SEED=1 and KI_REFERENCE_SPIN_LIMIT=3000 in the environment (a test of its own in
// CMakeLists.txt: both are read once per process), with a default backend.
TEST_CASE("progress: KI_REFERENCE_SEED=1 and KI_REFERENCE_SPIN_LIMIT", "[.progress_env]") {
  ki::reference::backend b{.threads = 1, .print_warnings = false};
  const auto e = run(b, spin_on_flag{0, 1}, 2);
  REQUIRE(e);
  CHECK(e->error_kind() == kind::no_progress);
  CHECK(std::string(e->what()).find("3000 times") != std::string::npos);
  CHECK(std::string(e->what()).find("KI_REFERENCE_SPIN_LIMIT") != std::string::npos);
}

}  // namespace
