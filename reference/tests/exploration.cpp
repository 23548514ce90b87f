// Schedule exploration (DESIGN.md, "Schedule exploration"): a seed picks, legally, the order of
// work-items between sync points, the order of work-groups, the sub-group layout where the
// profile leaves it open and the poison bytes; the same seed replays the same execution; and
// ki::reference::explore finds a race by comparing outputs, without instrumentation.
#include <algorithm>
#include <cstdint>
#include <numeric>
#include <stdexcept>
#include <utility>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include "../../examples/bugs/missing_barrier.hpp"
#include "../../examples/bugs/tiled_loop.hpp"
#include "gallery_support.hpp"

namespace {

using namespace ki_test::gallery;

/// Phase 1: each item takes a ticket; barrier; phase 2: again. out[0..n) and out[n..2n) are
/// the items in ticket order.
struct ticket_order {
  void operator()(ki::span<i64> out, ki::span<i64> counter) const {
    const i64 n = ki::get_local_size().x, l = ki::get_local_id().x;
    out[ki::atomic_fetch_add(&counter[0], i64{1})] = l;
    ki::barrier();
    out[n + ki::atomic_fetch_add(&counter[1], i64{1})] = l;
  }
};

std::vector<i64> orders(const ki::reference::backend& b, i64 n) {
  auto out = ki::zeros<i64>(b, 2 * n);
  auto counter = ki::zeros<i64>(b, 2);
  ki::launch(b, {.numgroups = 1, .workgroupsize = n}, ticket_order{}, out, counter);
  ki::synchronize(b);
  return ki::to_host(b, out);
}

TEST_CASE("exploration: forward, reverse and random orders between sync points", "[oracle][explore]") {
  const i64 n = 16;
  std::vector<i64> forward(static_cast<std::size_t>(n)), reverse(static_cast<std::size_t>(n));
  std::iota(forward.begin(), forward.end(), 0);
  std::iota(reverse.rbegin(), reverse.rend(), 0);
  const auto f = orders(backend_for("cuda", 0), n);
  CHECK(std::vector<i64>(f.begin(), f.begin() + n) == forward);
  CHECK(std::vector<i64>(f.begin() + n, f.end()) == forward);
  const auto r = orders(backend_for("cuda", 1), n);
  CHECK(std::vector<i64>(r.begin(), r.begin() + n) == reverse);
  CHECK(std::vector<i64>(r.begin() + n, r.end()) == reverse);
  // Random: a permutation, different from forward and reverse for some seed, the same for
  // the same seed (replay).
  bool differs = false;
  for (std::uint64_t s = 2; s < 6; ++s) {
    const auto x = orders(backend_for("cuda", s), n);
    CHECK(x == orders(backend_for("cuda", s), n));
    auto first = std::vector<i64>(x.begin(), x.begin() + n), second = std::vector<i64>(x.begin() + n, x.end());
    std::sort(first.begin(), first.end());
    std::sort(second.begin(), second.end());
    CHECK(first == forward);
    CHECK(second == forward);
    if (std::vector<i64>(x.begin(), x.begin() + n) != forward &&
        std::vector<i64>(x.begin(), x.begin() + n) != reverse &&
        std::vector<i64>(x.begin() + n, x.end()) != std::vector<i64>(x.begin(), x.begin() + n))
      differs = true;
  }
  CHECK(differs);
}

/// out[g] = order in which group g ran (threads = 1).
struct group_ticket {
  void operator()(ki::span<i64> out, ki::span<i64> counter) const {
    if (ki::get_local_id().x == 0) out[ki::get_group_id().x] = ki::atomic_fetch_add(&counter[0], i64{1});
  }
};

TEST_CASE("exploration: work-group order with threads = 1", "[oracle][explore]") {
  auto go = [](const ki::reference::backend& b) {
    auto out = ki::zeros<i64>(b, 8);
    auto counter = ki::zeros<i64>(b, 1);
    ki::launch(b, {.numgroups = 8, .workgroupsize = 4}, group_ticket{}, out, counter);
    ki::synchronize(b);
    return ki::to_host(b, out);
  };
  CHECK(go(backend_for("cuda", 0)) == std::vector<i64>{0, 1, 2, 3, 4, 5, 6, 7});
  CHECK(go(backend_for("cuda", 1)) == std::vector<i64>{7, 6, 5, 4, 3, 2, 1, 0});
  CHECK(go(backend_for("cuda", 9)) == go(backend_for("cuda", 9)));
}

/// Groups 2 and 5 throw.
struct two_failing_groups {
  void operator()(ki::span<i64> out) const {
    const i64 g = ki::get_group_id().x;
    if (g == 2 || g == 5) throw std::runtime_error("group " + std::to_string(g));
    out[g] = g;
  }
};

TEST_CASE("exploration: whatever the group order, the lowest failing group is reported", "[oracle][explore]") {
  for (std::uint64_t s : {0, 1, 2, 3, 4}) {
    INFO("seed " << s);
    auto o = run(backend_for("cuda", s), two_failing_groups{}, 8, 1);
    REQUIRE(o.error);
    CHECK(o.error->group() == ki::xyz<i64>{2, 0, 0});
  }
}

/// out[item] = its sub-group id and lane.
struct layout_probe {
  void operator()(ki::span<i64> out) const {
    out[ki::get_local_id().x] = ki::get_sub_group_id() * 1000 + ki::get_sub_group_local_id();
  }
};

TEST_CASE("exploration: the seed varies the layout only where the profile leaves it open", "[oracle][explore]") {
  auto go = [](const ki::reference::backend& b) {
    auto out = ki::zeros<i64>(b, 48);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 48}, layout_probe{}, out);
    ki::synchronize(b);
    return ki::to_host(b, out);
  };
  // cuda promises the linear layout: every seed keeps it.
  CHECK(go(backend_for("cuda", 0)) == go(backend_for("cuda", 5)));
  // intel does not: the seeds choose different adversarial layouts (and replay them).
  bool varied = false;
  for (std::uint64_t s = 2; s < 6; ++s) {
    CHECK(go(backend_for("intel", s)) == go(backend_for("intel", s)));
    varied = varied || go(backend_for("intel", s)) != go(backend_for("intel", 0));
  }
  CHECK(varied);
}

/// Reads uninitialised local memory (the poison).
struct read_poison {
  void operator()(ki::span<std::uint32_t> out) const {
    auto buf = ki::localmemory<std::uint32_t, 4>([] {});
    out[ki::get_local_id().x] = buf[ki::get_local_id().x];
  }
};

TEST_CASE("exploration: poison bytes come from the seed", "[oracle][explore]") {
  auto go = [](const ki::reference::backend& b) {
    auto out = ki::zeros<std::uint32_t>(b, 4);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 4}, read_poison{}, out);
    ki::synchronize(b);
    return ki::to_host(b, out);
  };
  CHECK(go(backend_for("cuda", 0)) == std::vector<std::uint32_t>(4, 0xFFBADBADu));
  CHECK(go(backend_for("cuda", 3)) != std::vector<std::uint32_t>(4, 0xFFBADBADu));
  CHECK(go(backend_for("cuda", 3)) == go(backend_for("cuda", 3)));
}

TEST_CASE("explore: finds the missing barrier by comparing outputs, and names the replay seed", "[oracle][explore]") {
  auto b = backend_for("cuda");
  std::vector<i64> h(64);
  std::iota(h.begin(), h.end(), 1);
  auto r = ki::reference::explore(b, 4, [&](const ki::reference::backend& bs) {
    auto in = ki::allocate<i64>(bs, 64);
    ki::copyto(bs, in, h);
    auto out = ki::zeros<i64>(bs, 64);
    ki::launch(bs, {.numgroups = 1, .workgroupsize = 64}, ki_bugs::missing_barrier{}, out, std::as_const(in));
    ki::synchronize(bs);
    ki::reference::outputs o;
    o.add("out", ki::to_host(bs, out));
    return o;
  });
  CHECK(r.runs == 4);
  REQUIRE(r.found());
  const auto& d = r.differences.front();
  CHECK(d.seed == 1);
  CHECK(d.buffer == "out");
  // Forward: items 0..62 read their neighbour's element before it is written (poison), item 63
  // reads element 0 (written); reverse: the opposite. Every element differs.
  CHECK(d.count == 64);
  REQUIRE(!d.first.empty());
  CHECK(d.first[0].index == 0);
  CHECK(d.first[0].baseline == std::to_string(static_cast<std::int64_t>(0xFFBADBADFFBADBADull)));  // the poison
  CHECK(d.first[0].value == "2");
  CHECK(r.str().find("replay: KI_REFERENCE_SEED=1") != std::string::npos);
}

TEST_CASE("explore: a correct kernel gives identical outputs under every seed", "[oracle][explore]") {
  auto b = backend_for("strict");
  std::vector<i64> h(256);
  std::iota(h.begin(), h.end(), 1);
  auto r = ki::reference::explore(b, 6, [&](const ki::reference::backend& bs) {
    auto in = ki::allocate<i64>(bs, 256);
    ki::copyto(bs, in, h);
    auto out = ki::zeros<i64>(bs, 64);
    ki::launch(bs, {.numgroups = 1, .workgroupsize = 64}, ki_bugs::tiled_loop_correct{}, out, std::as_const(in),
               i64{4});
    ki::synchronize(bs);
    ki::reference::outputs o;
    o.add("out", ki::to_host(bs, out));
    return o;
  });
  CHECK(r.runs == 6);
  CHECK(!r.found());
  CHECK(r.str() == "ki::reference::explore: 6 executions, identical outputs\n");
}

/// Each work-item adds 1 to a counter in local memory `rounds` times, by one of three updates,
/// then work-item 0 writes the count; `retries` counts compare-exchange failures (a global
/// atomic: the local counter's contention, seen from outside).
struct local_count {
  int how = 0;  // 0: fetch_add; 1: a compare-exchange loop; 2: an atomic load, then an atomic store
  void operator()(ki::span<i64> out, ki::span<i64> retries) const {
    auto c = ki::localmemory<i64, 1>([] {});
    const i64 l = ki::get_local_id().x;
    if (l == 0) c[0] = 0;
    ki::barrier();
    for (int r = 0; r < 4; ++r) {
      if (how == 0) {
        ki::atomic_fetch_add(&c[0], i64{1});
      } else if (how == 1) {
        i64 seen = ki::atomic_load(&c[0]);
        while (!ki::atomic_compare_exchange(&c[0], seen, seen + 1)) ki::atomic_fetch_add(&retries[0], i64{1});
      } else {
        const i64 v = ki::atomic_load(&c[0]);  // (not one atomic update: another may come between)
        ki::atomic_store(&c[0], v + 1);
      }
    }
    ki::barrier();
    if (l == 0) out[0] = c[0];
  }
};

std::pair<i64, i64> count_locally(const ki::reference::backend& b, int how) {
  auto out = ki::zeros<i64>(b, 1);
  auto retries = ki::zeros<i64>(b, 1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, local_count{how}, out, retries);
  ki::synchronize(b);
  return {ki::to_host(b, out)[0], ki::to_host(b, retries)[0]};
}

TEST_CASE("exploration: interleaving at atomics makes local atomics contend", "[oracle][explore]") {
  for (const std::uint64_t seed : {0, 1, 5}) {
    INFO("seed " << seed);
    auto b = backend_for("cuda", seed);
    // Without interleaving a work-item runs from barrier to barrier alone: every update works,
    // the load-then-store one too, and compare-exchange never fails.
    CHECK(count_locally(b, 0) == std::pair<i64, i64>{32, 0});
    CHECK(count_locally(b, 1) == std::pair<i64, i64>{32, 0});
    CHECK(count_locally(b, 2) == std::pair<i64, i64>{32, 0});
    // Interleaved at each atomic: fetch_add and the compare-exchange loop still count 8 x 4, the
    // loop now retries; the load-then-store update loses increments (each round of 8 work-items
    // loads the same value).
    b.schedule.interleave_atomics = true;
    CHECK(count_locally(b, 0) == std::pair<i64, i64>{32, 0});
    const auto [cas, retried] = count_locally(b, 1);
    CHECK(cas == 32);
    CHECK(retried > 0);
    CHECK(count_locally(b, 2).first < 32);
  }
}

TEST_CASE("exploration: interleaving at atomics ends a spin-wait on another work-item; without it, no-progress",
          "[oracle][explore]") {
  // Work-item 1 polls a local flag that work-item 0 sets. Reverse order runs 1 first: alone, it
  // polls forever (reported); interleaved, 0 runs at 1's first poll and sets it.
  struct spin {
    void operator()(ki::span<i64> out, ki::span<i64>) const {
      auto flag = ki::localmemory<int, 1>([] {});
      const i64 l = ki::get_local_id().x;
      if (l == 1) {
        while (ki::atomic_load(&flag[0], ki::memory_order::acquire) != 1) {
        }
        out[0] = 7;
      }
      if (l == 0) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
    }
  };
  auto b = backend_for("cuda", 1);
  b.spin_limit = 1000;
  auto out = ki::zeros<i64>(b, 1);
  auto unused = ki::zeros<i64>(b, 1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 2}, spin{}, out, unused);
  CHECK_THROWS_AS(ki::synchronize(b), ki::kernel_error);
  b.schedule.interleave_atomics = true;
  ki::launch(b, {.numgroups = 1, .workgroupsize = 2}, spin{}, out, unused);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out)[0] == 7);
}

TEST_CASE("exploration: interleaved at atomics, work-items polling in turn do not keep the last one from starting",
          "[oracle][explore]") {
  // Work-items 1..7 poll a flag that work-item 0 sets. Reverse order starts 7 first, then 6, ...:
  // pollers handing the turn to each other must not starve 0, which starts last. (Before, an
  // interleaving work-item ran the next released one whenever there was one, so 7 and 6 took
  // turns for ever; spin_limit would not end it either, since each turn counts as a change.)
  struct many_pollers {
    void operator()(ki::span<i64> out, ki::span<i64>) const {
      auto flag = ki::localmemory<int, 1>([] {});
      const i64 l = ki::get_local_id().x;
      if (l == 0) ki::atomic_store(&flag[0], 1, ki::memory_order::release);
      else
        while (ki::atomic_load(&flag[0], ki::memory_order::acquire) != 1) {
        }
      out[l] = l + 1;
    }
  };
  for (const std::uint64_t seed : {1, 2, 3}) {
    INFO("seed " << seed);
    auto b = backend_for("cuda", seed);
    b.schedule.interleave_atomics = true;
    auto out = ki::zeros<i64>(b, 8);
    auto unused = ki::zeros<i64>(b, 1);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, many_pollers{}, out, unused);
    ki::synchronize(b);
    const auto o = ki::to_host(b, out);
    for (i64 l = 0; l < 8; ++l) CHECK(o[static_cast<std::size_t>(l)] == l + 1);
  }
}

TEST_CASE("exploration: interleaving at atomics with nobody else to run still reports a spin", "[oracle][explore]") {
  // Work-item 0 waits for a flag nobody sets while work-item 1 waits at a barrier: interleaving
  // finds no one to run, and the spin watch reports the wait.
  struct alone {
    void operator()(ki::span<i64> flag, ki::span<i64>) const {
      if (ki::get_local_id().x == 0)
        while (ki::atomic_load(&flag[0]) == 0) {
        }
      ki::barrier();
    }
  };
  auto b = backend_for("cuda", 0);
  b.spin_limit = 1000;
  b.schedule.interleave_atomics = true;
  auto flag = ki::zeros<i64>(b, 1);
  auto unused = ki::zeros<i64>(b, 1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 2}, alone{}, flag, unused);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::no_progress);
    CHECK(e.local() == ki::xyz<i64>{0, 0, 0});
  }
}

}  // namespace
