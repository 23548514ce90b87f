// The barrier ring (simd_cpu/src/group_runner.hpp, ki/detail/cpu/barrier.hpp): from the first
// barrier every work-item reached, a barrier's steady state is an inline switch in the kernel
// that saves only sp, pc and rbp and declares every other register clobbered. These tests
// check what that must keep: every kind of private value a work-item holds across barriers
// (integers and pointers in callee-saved registers, SSE, x87, over-aligned and alloca'd stack
// data), barriers at alternating sites, sub-group functions between ring rounds, several groups
// in a row, and the errors (divergence, exits, exceptions, faults) of a group in the ring, from
// its first round on, with the work-item and the barrier they name.
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>
#include <ki/simd_cpu.hpp>

#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using i64 = std::int64_t;
using B = ki::simd_cpu::backend;
using Catch::Matchers::ContainsSubstring;

constexpr int values_per_item = 16;

/// Each work-item keeps 16 values of different kinds live across `rounds` barriers, changing
/// them between barriers, then writes them out.
struct private_values {
  KI_DEVICE void operator()(ki::span<double> out, int rounds) const {
    const i64 l = ki::get_local_id().x;
    i64 a = 3 * l + 1, b = l ^ 0x55, c = l * l, d = -l, e = l << 20, f = l + 1000;
    unsigned u = static_cast<unsigned>(l) * 2654435761u;
    const double* self = &out[0] + l;  // a pointer
    double x = 0.5 * static_cast<double>(l), y = 1.0 / static_cast<double>(l + 1);
    float s = static_cast<float>(l) * 0.25f;
    long double z = static_cast<long double>(l) * 0.125L;  // x87 on x86-64
    alignas(64) double aligned[4] = {x, y, x + y, x - y};  // the frame is realigned
    const auto n = static_cast<std::size_t>(8 + l % 5 * 8);
    auto* dyn = static_cast<volatile i64*>(__builtin_alloca(n * sizeof(i64)));  // a frame pointer
    for (std::size_t k = 0; k < n; ++k) dyn[k] = l + static_cast<i64>(k);
    for (int r = 0; r < rounds; ++r) {
      ki::barrier();
      a += r, b ^= r, c -= 2 * r, d += l, e >>= (r & 1), f *= (r % 3 == 0 ? -1 : 1);
      u = u * 1664525u + 1013904223u;
      x += 1.0, y *= 2.0, s += 0.5f, z += 0.25L;
      aligned[r % 4] += 1.0;
      dyn[static_cast<std::size_t>(r) % n] = dyn[static_cast<std::size_t>(r) % n] + 1;
    }
    i64 dsum = 0;
    for (std::size_t k = 0; k < n; ++k) dsum += dyn[k];
    const double v[values_per_item] = {static_cast<double>(a),
                                       static_cast<double>(b),
                                       static_cast<double>(c),
                                       static_cast<double>(d),
                                       static_cast<double>(e),
                                       static_cast<double>(f),
                                       static_cast<double>(u),
                                       static_cast<double>(self - &out[0]),
                                       x,
                                       y,
                                       static_cast<double>(s),
                                       static_cast<double>(z),
                                       aligned[0] + aligned[1],
                                       aligned[2] - aligned[3],
                                       static_cast<double>(dsum),
                                       static_cast<double>(n)};
    for (int k = 0; k < values_per_item; ++k) out[values_per_item * ki::get_global_id().x + k] = v[k];
  }
};

/// What private_values must write for work-item l (the same arithmetic, without barriers).
std::vector<double> private_values_expected(i64 l, int rounds) {
  i64 a = 3 * l + 1, b = l ^ 0x55, c = l * l, d = -l, e = l << 20, f = l + 1000;
  unsigned u = static_cast<unsigned>(l) * 2654435761u;
  double x = 0.5 * static_cast<double>(l), y = 1.0 / static_cast<double>(l + 1);
  float s = static_cast<float>(l) * 0.25f;
  long double z = static_cast<long double>(l) * 0.125L;
  double aligned[4] = {x, y, x + y, x - y};
  const auto n = static_cast<std::size_t>(8 + l % 5 * 8);
  std::vector<i64> dyn(n);
  for (std::size_t k = 0; k < n; ++k) dyn[k] = l + static_cast<i64>(k);
  for (int r = 0; r < rounds; ++r) {
    a += r, b ^= r, c -= 2 * r, d += l, e >>= (r & 1), f *= (r % 3 == 0 ? -1 : 1);
    u = u * 1664525u + 1013904223u;
    x += 1.0, y *= 2.0, s += 0.5f, z += 0.25L;
    aligned[r % 4] += 1.0;
    dyn[static_cast<std::size_t>(r) % n] += 1;
  }
  i64 dsum = 0;
  for (i64 v : dyn) dsum += v;
  return {static_cast<double>(a),
          static_cast<double>(b),
          static_cast<double>(c),
          static_cast<double>(d),
          static_cast<double>(e),
          static_cast<double>(f),
          static_cast<double>(u),
          static_cast<double>(l),
          x,
          y,
          static_cast<double>(s),
          static_cast<double>(z),
          aligned[0] + aligned[1],
          aligned[2] - aligned[3],
          static_cast<double>(dsum),
          static_cast<double>(n)};
}

/// Two barriers per round at two call sites; between them every work-item reads what its
/// neighbour wrote before the first, so a barrier released too early shows.
struct alternating_sites {
  KI_DEVICE void operator()(ki::span<i64> out, int rounds) const {
    auto buf = ki::localmemory<i64, 256>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x;
    i64 v = l;
    for (int r = 0; r < rounds; ++r) {
      buf[l] = v;
      ki::barrier();
      v = buf[(l + 1) % n] + 1;
      ki::barrier();
    }
    out[ki::get_global_id().x] = v;
  }
};

/// A sub-group reduction between ring rounds (it leaves the ring; the next release enters it
/// again).
struct reduce_between_barriers {
  KI_DEVICE void operator()(ki::span<i64> out, int rounds) const {
    const i64 l = ki::get_local_id().x;
    i64 acc = 0;
    for (int r = 0; r < rounds; ++r) {
      ki::barrier();
      if (r % 3 == 1) acc += ki::sub_group_reduce(std::plus<>{}, l + r);
      else acc += 1;
    }
    out[ki::get_global_id().x] = acc;
  }
};

// Deliberate undefined behaviour, the fault under test: not instrumented by UBSan
// (tools/test --sanitize), so that a sanitizer build meets the fault itself (the signal the
// runtime reports), as a program built without sanitizers does.
[[gnu::noinline, gnu::no_sanitize("undefined")]] void write_through_null() {
  volatile int* volatile p = nullptr;  // (read at run time: the compiler cannot drop the store as UB)
  *p = 1;
}

/// After `rounds` barriers work-item `odd` does `what`: 0 another barrier, 1 exits, 2 throws,
/// 3 an out-of-bounds index, 4 a null-pointer write.
struct misbehave_in_ring {
  KI_DEVICE void operator()(ki::span<int> out, int rounds, i64 odd, int what) const {
    const i64 l = ki::get_local_id().x;
    for (int r = 0; r < rounds; ++r) ki::barrier();
    if (l == odd) {
      if (what == 0) ki::barrier();
      if (what == 1) return;
      if (what == 2) throw std::runtime_error("boom");
      if (what == 3) out[out.size() + l] = 1;
      if (what == 4) write_through_null();
    }
    if (what != 0 || l != odd) ki::barrier();
    out[ki::get_global_id().x] = 1;
  }
};

}  // namespace

TEST_CASE("barrier ring: private values of every kind survive barriers", "[simd_cpu][barrier_ring]") {
  const int rounds = 40;
  for (int threads : {1, 2})
    for (i64 items : {2, 3, 33, 256}) {
      const i64 groups = 3;
      const B b{.threads = threads};
      auto out = ki::zeros<double>(b, values_per_item * groups * items);
      ki::launch(b, {.numgroups = groups, .workgroupsize = items}, private_values{}, out, rounds);
      const auto h = ki::to_host(b, out);
      i64 bad = 0;
      for (i64 i = 0; i < groups * items; ++i) {
        const auto want = private_values_expected(i % items, rounds);
        for (int k = 0; k < values_per_item; ++k) {
          const double got = h[static_cast<std::size_t>(values_per_item * i + k)];
          if (got != want[static_cast<std::size_t>(k)] && bad++ < 5)
            UNSCOPED_INFO("item " << i << " value " << k << ": " << got << ", want "
                                  << want[static_cast<std::size_t>(k)]);
        }
      }
      INFO(threads << " threads, " << items << " items per group");
      CHECK(bad == 0);
    }
}

TEST_CASE("barrier ring: barriers at alternating sites order local memory", "[simd_cpu][barrier_ring]") {
  const int rounds = 50;
  for (i64 n : {2, 5, 64, 256}) {
    const B b{.threads = 1};
    const i64 groups = 4;
    auto out = ki::zeros<i64>(b, groups * n);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, alternating_sites{}, out, rounds);
    const auto h = ki::to_host(b, out);
    i64 bad = 0;
    for (i64 i = 0; i < groups * n; ++i) bad += h[static_cast<std::size_t>(i)] != (i % n + rounds) % n + rounds;
    INFO(n << " items per group");
    CHECK(bad == 0);
  }
}

TEST_CASE("barrier ring: sub-group functions between ring rounds", "[simd_cpu][barrier_ring]") {
  const int rounds = 12;
  for (i64 w : {1, 8, 32})
    for (i64 n : {7, 64, 100}) {
      const B b{.threads = 1, .sub_group_width = w};
      auto out = ki::zeros<i64>(b, 2 * n);
      ki::launch(b, {.numgroups = 2, .workgroupsize = n}, reduce_between_barriers{}, out, rounds);
      const auto h = ki::to_host(b, out);
      i64 bad = 0;
      for (i64 i = 0; i < 2 * n; ++i) {
        const i64 l = i % n, first = l / w * w, size = std::min(w, n - first);
        i64 want = 0;
        for (int r = 0; r < rounds; ++r) {
          if (r % 3 != 1) {
            want += 1;
            continue;
          }
          for (i64 k = first; k < first + size; ++k) want += k + r;
        }
        bad += h[static_cast<std::size_t>(i)] != want;
      }
      INFO("W = " << w << ", " << n << " items");
      CHECK(bad == 0);
    }
}

TEST_CASE("barrier ring: errors of a group in the ring name the work-item and the barrier",
          "[simd_cpu][barrier_ring]") {
  const B b{.threads = 1};
  const i64 n = 16, odd = 3;
  const auto run = [&](int what, int rounds) -> ki::kernel_error {
    auto out = ki::zeros<int>(b, 2 * n);
    ki::launch(b, {.numgroups = 2, .workgroupsize = n}, misbehave_in_ring{}, out, rounds, odd, what);
    try {
      ki::synchronize(b);
    } catch (const ki::kernel_error& e) {
      return e;
    }
    FAIL("no error");
    throw std::logic_error("unreachable");
  };
  // 0: in the group's first round, which the ring runs from work-item 0's arrival on (the
  // others start from prepared fibers; work-items 0 .. odd - 1 wait at the barrier).
  for (int rounds : {0, 1, 2, 7}) {
    INFO(rounds << " barriers before");
    {
      const auto e = run(0, rounds);  // a barrier elsewhere
      CHECK(e.error_kind() == ki::kernel_error::kind::barrier_mismatch);
      CHECK(e.group().x == 0);
      const std::string m = e.what();
      // "items <ranges> wait at barrier barrier_ring.cpp:LINE" per barrier: the site of a range.
      const auto site_of = [&](const std::string& items) {
        const std::string key = "items " + items + " wait at barrier ";
        const auto p = m.find(key);
        return p == std::string::npos
                   ? std::string("?")
                   : m.substr(p + key.size(), m.find_first_of("; ", p + key.size()) - p - key.size());
      };
      const std::string others =
          "0-" + std::to_string(odd - 1) + ", " + std::to_string(odd + 1) + "-" + std::to_string(n - 1);
      const auto site_of_odd = site_of(std::to_string(odd)), site_of_0 = site_of(others);
      CHECK_THAT(site_of_odd, ContainsSubstring("barrier_ring.cpp:"));
      CHECK_THAT(site_of_0, ContainsSubstring("barrier_ring.cpp:"));
      CHECK(site_of_odd != site_of_0);
    }
    {
      const auto e = run(1, rounds);  // exits while the others wait
      CHECK(e.error_kind() == ki::kernel_error::kind::cannot_finish);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("; items " + std::to_string(odd) + " exited"));
    }
    {
      const auto e = run(2, rounds);  // throws
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.local().x == odd);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("boom"));
      if (rounds > 0) CHECK_THAT(std::string(e.what()), ContainsSubstring("(after barrier barrier_ring.cpp:"));
      else CHECK_THAT(std::string(e.what()), !ContainsSubstring("after barrier"));
    }
    {
      const auto e = run(3, rounds);  // out of bounds
      CHECK(e.local().x == odd);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("out of bounds"));
    }
#if !defined(__SANITIZE_ADDRESS__)
    {
      const auto e = run(4, rounds);  // an invalid access (AddressSanitizer reports it itself)
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.local().x == odd);
      CHECK_THAT(std::string(e.what()), ContainsSubstring("invalid memory access"));
    }
#endif
  }
  // Still usable, and the ring still right.
  auto out = ki::zeros<i64>(b, 2 * 64);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 64}, alternating_sites{}, out, 9);
  const auto h = ki::to_host(b, out);
  for (i64 i = 0; i < 2 * 64; ++i) CHECK(h[static_cast<std::size_t>(i)] == (i % 64 + 9) % 64 + 9);
}

TEST_CASE("barrier ring: simd_cpu and the reference agree on private values", "[simd_cpu][barrier_ring]") {
  const int rounds = 25;
  const i64 items = 100;
  const B b{};
  const ki::reference::backend r{};
  auto out_s = ki::zeros<double>(b, values_per_item * items);
  auto out_r = ki::zeros<double>(r, values_per_item * items);
  ki::launch(b, {.numgroups = 1, .workgroupsize = items}, private_values{}, out_s, rounds);
  ki::launch(r, {.numgroups = 1, .workgroupsize = items}, private_values{}, out_r, rounds);
  CHECK(ki::to_host(b, out_s) == ki::to_host(r, out_r));
}
