// Metal's random numbers in kernels (spec/metal-advanced-kernel-programming.txt; ki/rand.hpp):
// a counter-based generator, Philox4x32-10 with Random123's conventions, whose stream per
// work-item depends on the seed and its global linear id only, so every backend draws the same
// numbers. Launches are seeded differently; ki::seed(s) makes one reproducible; KI_RAND_SEED and
// ki::set_rand_seed fix the launch seeds of a program.
//
// Expected values come from the test's own Philox (below, written from the published algorithm
// and checked against Random123's known-answer vectors), never from the library's.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "backends.hpp"

namespace ki_spec_rand {

using i64 = std::int64_t;
using u32 = std::uint32_t;
using u64 = std::uint64_t;

/// Philox4x32-10, for the expected values: 10 rounds of two 32x32->64 products; the key gets
/// the Weyl increments before each round but the first.
std::array<u32, 4> philox(std::array<u32, 4> c, std::array<u32, 2> k) {
  for (int r = 0; r < 10; ++r) {
    if (r != 0) {
      k[0] += 0x9E3779B9u;
      k[1] += 0xBB67AE85u;
    }
    const u64 a = u64{0xD2511F53u} * c[0];
    const u64 b = u64{0xCD9E8D57u} * c[2];
    const std::array<u32, 4> n{static_cast<u32>(b >> 32) ^ c[1] ^ k[0], static_cast<u32>(b),
                               static_cast<u32>(a >> 32) ^ c[3] ^ k[1], static_cast<u32>(a)};
    c = n;
  }
  return c;
}
/// The block of draw `n` of work-item `gid` under `seed` (the documented counter and key).
std::array<u32, 4> block(u64 seed, u64 gid, u32 n) {
  return philox({n, static_cast<u32>(gid), static_cast<u32>(gid >> 32), 0},
                {static_cast<u32>(seed), static_cast<u32>(seed >> 32)});
}

constexpr int draws = 4;

/// out[gid * draws + k] = the k-th uint32 of work-item gid (global linear id, x fastest), after
/// ki::seed(seed) unless seed is 0... (use_seed selects).
struct draw_u32 {
  KI_DEVICE void operator()(ki::span<u32> out, u64 seed, bool use_seed) const {
    if (use_seed) ki::seed(seed);
    const auto g = ki::get_global_id();
    const auto s = ki::get_global_size();
    const i64 gid = g.x + s.x * (g.y + s.y * g.z);
    for (int k = 0; k < draws; ++k) out[gid * draws + k] = ki::rand<u32>();
  }
};

/// One draw of each type, in this order, per work-item.
struct draw_types {
  KI_DEVICE void operator()(ki::span<u32> a, ki::span<std::int32_t> b, ki::span<u64> c, ki::span<i64> d,
                            ki::span<float> e, ki::span<double> f, u64 seed) const {
    ki::seed(seed);
    const i64 i = ki::get_global_id().x;
    a[i] = ki::rand<u32>();
    b[i] = ki::rand<std::int32_t>();
    c[i] = ki::rand<u64>();
    d[i] = ki::rand<i64>();
    e[i] = ki::rand<float>();
    f[i] = ki::rand<double>();
  }
};

/// 64 floats and 64 uint32 per work-item, for the chi-square tests.
struct draw_many {
  KI_DEVICE void operator()(ki::span<float> f, ki::span<u32> u, u64 seed) const {
    ki::seed(seed);
    const i64 i = ki::get_global_id().x;
    for (int k = 0; k < 64; ++k) f[i * 64 + k] = ki::rand<float>();
    for (int k = 0; k < 64; ++k) u[i * 64 + k] = ki::rand<u32>();
  }
};

#if defined(__FLT16_MAX__) && !defined(__CUDACC__) && !defined(__HIPCC__)
#define KI_SPEC_RAND_HALF 1
/// Draws _Float16 (the spec's Float16), where the compiler has the type.
struct draw_half {
  KI_DEVICE void operator()(ki::span<_Float16> out, u64 seed) const {
    ki::seed(seed);
    const i64 i = ki::get_global_id().x;
    out[2 * i] = ki::rand<_Float16>();
    out[2 * i + 1] = ki::rand<_Float16>();
  }
};
#else
#define KI_SPEC_RAND_HALF 0
#endif

template <class B>
std::vector<u32> run_draws(const B& b, ki::dims nd, ki::dims wg, i64 n, u64 seed, bool use_seed) {
  auto out = ki_test::filled<u32>(b, n * draws, 0u);
  ki::launch(b, {.ndrange = nd, .workgroupsize = wg}, draw_u32{}, out, seed, use_seed);
  return ki_test::read(b, out);
}

/// Pearson's statistic of `counts` against equal expected counts.
double chi_square(const std::vector<i64>& counts, double expected) {
  double x = 0;
  for (const i64 c : counts) x += (static_cast<double>(c) - expected) * (static_cast<double>(c) - expected) / expected;
  return x;
}

}  // namespace ki_spec_rand

using namespace ki_spec_rand;

TEST_CASE("rand: the test's Philox4x32-10 gives Random123's known answers", "[rand]") {
  // Random123 tests/kat_vectors, the three "philox4x32 10" lines: counter[4] key[2] -> result[4].
  CHECK(philox({0, 0, 0, 0}, {0, 0}) == std::array<u32, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(philox({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        std::array<u32, 4>{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(philox({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        std::array<u32, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  // The library's generator on the host gives the same.
  CHECK(ki::philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        std::array<u32, 4>{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
  CHECK(ki::philox4x32_10({0, 0, 0, 0}, {0, 0}) == std::array<u32, 4>{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
}

TEMPLATE_LIST_TEST_CASE("rand: a seeded work-item draws Philox(key = seed, counter = (draw, global id, 0))", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const u64 seed = 0x0123456789abcdefull;
  const i64 n = 300;  // not a multiple of the group size: the padding items draw too
  const auto h = run_draws(b, n, 64, 320, seed, true);
  for (i64 g = 0; g < 320; ++g)
    for (u32 k = 0; k < draws; ++k) {
      KI_INFO("global id " << g << ", draw " << k);
      CHECK(h[g * draws + k] == block(seed, static_cast<u64>(g), k)[0]);
    }
}

TEMPLATE_LIST_TEST_CASE("rand: every type is made from the block's words by integer operations", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const u64 seed = 987654321;
  const i64 n = 256;
  auto a = ki_test::filled<u32>(b, n, 0u);
  auto c = ki_test::filled<std::int32_t>(b, n, 0);
  auto d = ki_test::filled<u64>(b, n, 0u);
  auto e = ki_test::filled<i64>(b, n, 0);
  auto f = ki_test::filled<float>(b, n, -1.0f);
  auto g = ki_test::filled<double>(b, n, -1.0);
  ki::launch(b, {.ndrange = n, .workgroupsize = 32}, draw_types{}, a, c, d, e, f, g, seed);
  const auto ha = ki_test::read(b, a);
  const auto hc = ki_test::read(b, c);
  const auto hd = ki_test::read(b, d);
  const auto he = ki_test::read(b, e);
  const auto hf = ki_test::read(b, f);
  const auto hg = ki_test::read(b, g);
  for (i64 i = 0; i < n; ++i) {
    KI_INFO("work-item " << i);
    const u64 gid = static_cast<u64>(i);
    CHECK(ha[i] == block(seed, gid, 0)[0]);
    CHECK(hc[i] == static_cast<std::int32_t>(block(seed, gid, 1)[0]));
    const auto w2 = block(seed, gid, 2), w3 = block(seed, gid, 3), w5 = block(seed, gid, 5);
    CHECK(hd[i] == (u64{w2[0]} | u64{w2[1]} << 32));
    CHECK(he[i] == static_cast<i64>(u64{w3[0]} | u64{w3[1]} << 32));
    // float: the top 24 bits over 2^24; double: the top 53 bits of the 64 over 2^53.
    CHECK(hf[i] == static_cast<float>(block(seed, gid, 4)[0] >> 8) / 16777216.0f);
    CHECK(hg[i] == static_cast<double>((u64{w5[0]} | u64{w5[1]} << 32) >> 11) / 9007199254740992.0);
    CHECK(hf[i] >= 0.0f);
    CHECK(hf[i] < 1.0f);
    CHECK(hg[i] >= 0.0);
    CHECK(hg[i] < 1.0);
  }
}

#if KI_SPEC_RAND_HALF
TEMPLATE_LIST_TEST_CASE("rand: Float16 from the top 11 bits", "[rand]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const u64 seed = 31337;
  const i64 n = 512;
  auto out = ki_test::filled<_Float16>(b, 2 * n, _Float16(-1));
  ki::launch(b, {.ndrange = n, .workgroupsize = 64}, draw_half{}, out, seed);
  const auto h = ki_test::read(b, out);
  for (i64 i = 0; i < 2 * n; ++i) {
    KI_INFO("value " << i);
    const u32 w = block(seed, static_cast<u64>(i / 2), static_cast<u32>(i % 2))[0];
    CHECK(static_cast<float>(h[i]) == static_cast<float>(w >> 21) / 2048.0f);
    CHECK(static_cast<float>(h[i]) < 1.0f);
  }
}
#endif

TEMPLATE_LIST_TEST_CASE("rand: the stream depends on the global id, not on the work-group shape", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const u64 seed = 42;
  const i64 n = 64 * 16;
  const auto a = run_draws(b, ki::dims{64, 16}, ki::dims{8, 4}, n, seed, true);
  const auto c = run_draws(b, ki::dims{64, 16}, ki::dims{32, 1}, n, seed, true);
  const auto d = run_draws(b, ki::dims{64, 16}, ki::dims{64, 2}, n, seed, true);
  CHECK(a == c);
  CHECK(a == d);
  for (i64 g = 0; g < n; ++g) CHECK(a[g * draws + 1] == block(seed, static_cast<u64>(g), 1)[0]);
  // 1-D with other group sizes: the same numbers for the same global ids.
  const auto e = run_draws(b, n, 128, n, seed, true);
  const auto f = run_draws(b, n, 1, n, seed, true);
  CHECK(e == a);
  CHECK(f == a);
}

TEMPLATE_LIST_TEST_CASE("rand: launches differ without ki::seed, seeded launches repeat", "[rand]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const i64 n = 256;
  const auto a = run_draws(b, n, 64, n, 0, false);
  const auto c = run_draws(b, n, 64, n, 0, false);
  CHECK(a != c);
  // Work-items draw different numbers (a fixed key, different counters).
  i64 equal_neighbours = 0;
  for (i64 g = 1; g < n; ++g) equal_neighbours += a[g * draws] == a[(g - 1) * draws];
  CHECK(equal_neighbours == 0);
  const auto s1 = run_draws(b, n, 64, n, 7, true);
  const auto s2 = run_draws(b, n, 64, n, 7, true);
  const auto s3 = run_draws(b, n, 64, n, 8, true);
  CHECK(s1 == s2);
  CHECK(s1 != s3);
}

TEMPLATE_LIST_TEST_CASE("rand: KI_RAND_SEED and ki::set_rand_seed fix the launch seeds of a program", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const i64 n = 128;
  ki::set_rand_seed(b, 1234);
  const auto a1 = run_draws(b, n, 32, n, 0, false);
  const auto a2 = run_draws(b, n, 32, n, 0, false);
  ki::set_rand_seed(b, 1234);
  const auto r1 = run_draws(b, n, 32, n, 0, false);
  const auto r2 = run_draws(b, n, 32, n, 0, false);
  CHECK(a1 == r1);
  CHECK(a2 == r2);
  CHECK(a1 != a2);  // still a new seed per launch
  ki::set_rand_seed(b, 1235);
  CHECK(run_draws(b, n, 32, n, 0, false) != a1);

  // The global form (every backend), and the environment variable, which it reads again.
  ki::set_rand_seed(99);
  const auto g1 = run_draws(b, n, 32, n, 0, false);
  ::setenv("KI_RAND_SEED", "99", 1);
  ki::reset_rand_seed();
  const auto e1 = run_draws(b, n, 32, n, 0, false);
  CHECK(g1 == e1);
  ::setenv("KI_RAND_SEED", "not-a-number", 1);
  CHECK_THROWS_AS(ki::reset_rand_seed(), std::invalid_argument);
  ::unsetenv("KI_RAND_SEED");
  ki::reset_rand_seed();
  CHECK(run_draws(b, n, 32, n, 0, false) != e1);
}

TEMPLATE_LIST_TEST_CASE("rand: 2^20 floats and the low bits of 2^20 uint32 pass a chi-square test", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const i64 items = 1 << 14;  // x 64 draws each = 2^20
  auto f = ki_test::filled<float>(b, items * 64, -1.0f);
  auto u = ki_test::filled<u32>(b, items * 64, 0u);
  ki::launch(b, {.ndrange = items, .workgroupsize = 256}, draw_many{}, f, u, u64{20261202});
  const auto hf = ki_test::read(b, f);
  const auto hu = ki_test::read(b, u);
  std::vector<i64> fbins(64, 0), ubins(64, 0);
  for (const float x : hf) {
    REQUIRE(x >= 0.0f);
    REQUIRE(x < 1.0f);
    ++fbins[static_cast<std::size_t>(x * 64.0f)];
  }
  for (const u32 x : hu) ++ubins[x & 63u];
  // 63 degrees of freedom: the 0.999 quantile is 103.44. The seed is fixed, so the statistics
  // are the same every run (the test cannot flake), and they match the expected numbers'.
  const double expected = static_cast<double>(items * 64) / 64.0;
  const double xf = chi_square(fbins, expected), xu = chi_square(ubins, expected);
  KI_INFO("chi-square floats " << xf << ", low bits " << xu);
  CHECK(xf < 103.44);
  CHECK(xu < 103.44);
  CHECK(hf[12345] == static_cast<float>(block(20261202, 12345 / 64, 12345 % 64)[0] >> 8) / 16777216.0f);
}

#if !KI_TEST_BACKEND_REFERENCE
TEMPLATE_LIST_TEST_CASE("rand: the backend draws the oracle's numbers", "[rand]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const ki::reference::backend r{};
  const i64 n = 64 * 16;
  CHECK(run_draws(b, ki::dims{64, 16}, ki::dims{16, 4}, n, 5, true) ==
        run_draws(r, ki::dims{64, 16}, ki::dims{8, 8}, n, 5, true));
}
#endif

// --- KA kernels: ki::rand<T>(i), ki::seed(i, s) ---
namespace ki_spec_rand {
/// KA: out[i.global_linear() * draws + k] = the k-th uint32 of work-item i, drawn over two
/// phases (the stream goes on across synchronize).
struct ka_draw_u32 {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<u32> out, u64 seed, bool use_seed) const {
    g.items([&](auto i) {
      if (use_seed) ki::seed(i, seed);
      out[i.global_linear() * draws + 0] = ki::rand<u32>(i);
      out[i.global_linear() * draws + 1] = ki::rand<u32>(i);
    });
    g.synchronize();
    g.items([&](auto i) {
      for (int k = 2; k < draws; ++k) out[i.global_linear() * draws + k] = ki::rand<u32>(i);
    });
  }
};
template <class B>
std::vector<u32> run_ka_draws(const B& b, ki::ka::ndrange nd, ki::dims wg, i64 n, u64 seed, bool use_seed) {
  auto out = ki_test::filled<u32>(b, n * draws, 0u);
  ki::ka::kernel(b, ka_draw_u32{})({.ndrange = nd, .workgroupsize = wg}, out, seed, use_seed);
  return ki_test::read(b, out);
}
}  // namespace ki_spec_rand

TEMPLATE_LIST_TEST_CASE("rand: a KA work-item draws KI's numbers for its place in the grid and the seed", "[rand]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const u64 seed = 42;
  // Whole groups: the same numbers as KI's for the same global ids, and as the documented block.
  const i64 n = 64 * 16;
  CHECK(run_ka_draws(b, {64, 16}, ki::dims{8, 4}, n, seed, true) ==
        run_draws(b, ki::dims{64, 16}, ki::dims{8, 4}, n, seed, true));
  // A partial 2-D grid: 10 x 6 in groups of 4 x 4, a grid of 12 x 8 work-items; a KA work-item
  // at (x, y) draws what KI's work-item at (x, y) of that grid draws (global linear id x + 12 y).
  const auto ka = run_ka_draws(b, {10, 6}, ki::dims{4, 4}, 60, seed, true);
  const auto ki_grid = run_draws(b, ki::dims{10, 6}, ki::dims{4, 4}, 12 * 8, seed, true);
  i64 differ = 0;
  for (i64 y = 0; y < 6; ++y)
    for (i64 x = 0; x < 10; ++x)
      for (int k = 0; k < draws; ++k) {
        const u32 got = ka[static_cast<std::size_t>((x + 10 * y) * draws + k)];
        differ += got != block(seed, static_cast<u64>(x + 12 * y), static_cast<u32>(k))[0];
        differ += got != ki_grid[static_cast<std::size_t>((x + 12 * y) * draws + k)];
      }
  CHECK(differ == 0);
}

TEMPLATE_LIST_TEST_CASE("rand: KA launches differ without ki::seed, and ki::set_rand_seed replays them as KI's",
                        "[rand]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  const i64 n = 256;
  const auto a = run_ka_draws(b, n, 64, n, 0, false);
  const auto c = run_ka_draws(b, n, 64, n, 0, false);
  CHECK(a != c);
  // The n-th launch after set_rand_seed gets the same seed, KI or KA: the same numbers.
  ki::set_rand_seed(b, 2026);
  const auto ka1 = run_ka_draws(b, n, 64, n, 0, false);
  ki::set_rand_seed(b, 2026);
  const auto ka2 = run_ka_draws(b, n, 32, n, 0, false);
  ki::set_rand_seed(b, 2026);
  const auto ki1 = run_draws(b, n, 64, n, 0, false);
  ki::reset_rand_seed();
  CHECK(ka1 == ka2);
  CHECK(ka1 == ki1);
  CHECK(ka1 != a);
}

#if KI_TEST_BACKEND_REFERENCE
namespace ki_spec_rand {
/// KA misuse of ki::seed (which: 0 seeds after a draw, 1 seeds with different values).
struct ka_bad_seed {
  static constexpr unsigned seed_line = __LINE__ + 6;
  template <class G>
  void operator()(G& g, ki::span<u32> out, int which) const {
    g.items([&](auto i) {
      if (which == 0) out[i.global_linear()] = ki::rand<u32>(i);
      const u64 s = which == 1 ? static_cast<u64>(i.global_linear()) : 5;
      ki::seed(i, s);
      out[i.global_linear()] = ki::rand<u32>(i);
    });
  }
};
}  // namespace ki_spec_rand

TEMPLATE_LIST_TEST_CASE("rand: the oracle reports a KA work-item that seeds after drawing, or another seed", "[rand]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const std::string line = "16_rand.cpp:" + std::to_string(ka_bad_seed::seed_line);
  for (const auto& [which, why] : std::vector<std::pair<int, std::string>>{
           {0, "after it had drawn 1 number"}, {1, "(every work-item of a launch seeds with the same value)"}}) {
    KI_INFO(why);
    auto out = ki::zeros<u32>(b, 16);
    ki::ka::kernel(b, ka_bad_seed{})({.ndrange = 16, .workgroupsize = 8}, out, which);
    try {
      ki::synchronize(b);
      FAIL("no error");
    } catch (const ki::kernel_error& e) {
      CHECK(e.error_kind() == ki::kernel_error::kind::invalid_seed);
      CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring(why) && ki_test::ContainsSubstring(line));
    }
  }
}
#endif
