// A seeded fuzz test of launch geometry (issue "never crash, never hang"), on both CPU backends
// and both layers: 1 to 3 dimensions, ragged extents, KA offset ranges, static and dynamic KA
// work-group sizes, work-group sizes from 1 to beyond the device's limit, and huge and negative
// values. Every launch either runs correctly (each index of the launch's index space exactly
// once, with the indices the host computes) or is refused with std::invalid_argument naming the
// bad value: never anything else (no other exception, no crash, no empty run of a bad size).
//
// The test predicts which of the two from the spec's rules and the device's reported limits
// (ki::max_work_group_size, max_work_group_dims, max_num_groups), independently of the
// backends' own checks. Each case changes at most one value to a bad one, so that the message
// must name that value. KI_GEOMETRY_FUZZ_SEED reproduces a run (default: a fixed seed).
#include <climits>
#include <cstdint>
#include <cstdlib>
#include <random>
#include <stdexcept>
#include <string>
#include <tuple>
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

/// The most work-items a case that should run may have (a valid launch of a huge size would
/// take forever: the generator draws again).
constexpr i64 max_run = 20'000;
constexpr int cases = 400;

std::uint64_t seed() {
  const char* s = std::getenv("KI_GEOMETRY_FUZZ_SEED");
  return s != nullptr ? std::strtoull(s, nullptr, 10) : 20261206;
}

/// The values a bad draw uses (each refused, whatever the rest of the launch).
const i64 huge[] = {INT64_MAX, INT64_MAX - 1, i64{1} << 40, i64{1} << 62};
const i64 negative[] = {-1, -2, INT64_MIN, -(i64{1} << 33)};

/// KI: hits[linear global id] += 1, and a wrong global size or id marks the element with 1000.
struct ki_count {
  void operator()(ki::span<int> hits, i64 nx, i64 ny, i64 nz) const {
    const auto id = ki::get_global_id();
    if (id.x < 0 || id.x >= nx || id.y < 0 || id.y >= ny || id.z < 0 || id.z >= nz) {
      ki::atomic_fetch_add(&hits[0], 1000);
      return;
    }
    ki::atomic_fetch_add(&hits[id.x + nx * (id.y + ny * id.z)], 1);
  }
};

/// KA: hits[global_linear] += 1; a global index other than first + the Cartesian position marks
/// the element with 1000.
struct ka_count {
  template <class G>
  void operator()(G& g, ki::span<int> hits, ki::xyz<i64> first, ki::xyz<i64> ext) const {
    g.items([&](auto i) {
      const i64 k = i.global_linear();
      const auto c = i.global();
      const i64 x = c.x - first.x, y = c.y - first.y, z = c.z - first.z;
      const bool ok =
          x >= 0 && x < ext.x && y >= 0 && y < ext.y && z >= 0 && z < ext.z && k == x + ext.x * (y + ext.y * z);
      ki::atomic_fetch_add(&hits[ok ? k : 0], ok ? 1 : 1000);
    });
  }
};

/// What a case expects: a run over `count` indices, or a refusal naming `bad`.
struct expectation {
  bool valid = true;
  std::string bad;  // the bad value as the message must show it
};

template <class B>
void check_run(const B& b, const ki::array<int, B>& hits, i64 count, const std::string& what) {
  const auto h = ki::to_host(b, hits);
  i64 wrong = 0;
  for (i64 k = 0; k < count; ++k) wrong += h[static_cast<std::size_t>(k)] != 1;
  INFO(what);
  CHECK(wrong == 0);
}

/// Runs `launch` and checks it against `e`: a correct run, or std::invalid_argument naming the
/// value (any other exception fails the test through Catch).
template <class B, class L>
void check_case(const B& b, const expectation& e, i64 count, const std::string& what, L&& launch) {
  INFO(what);
  auto hits = ki::zeros<int>(b, count > 0 ? count : 1);
  if (e.valid) {
    launch(hits);
    ki::synchronize(b);
    check_run(b, hits, count, what);
    if (count == 0) CHECK(ki::to_host(b, hits)[0] == 0);  // (nothing ran)
  } else {
    try {
      launch(hits);
      ki::synchronize(b);
      FAIL("accepted, expected std::invalid_argument naming " << e.bad);
    } catch (const std::invalid_argument& x) {
      CHECK_THAT(x.what(), ContainsSubstring(e.bad));
    }
  }
}

/// KI: the work-groups of a dimension (numgroups, or the ndrange rounded up).
i64 groups_of(i64 extent, i64 wg, bool by_ndrange) { return by_ndrange ? (extent + wg - 1) / wg : extent; }

std::string dims_str(const i64* v, int rank) {
  std::string s = "(";
  for (int d = 0; d < rank; ++d) s += (d ? ", " : "") + std::to_string(v[d]);
  return s + ")";
}

ki::dims make_dims(const i64* v, int rank) {
  return rank == 1 ? ki::dims(v[0]) : rank == 2 ? ki::dims(v[0], v[1]) : ki::dims(v[0], v[1], v[2]);
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("geometry fuzz: a KI launch runs every index once or is refused naming the value",
                        "[faults][fuzz]", cpu_backends) {
  const TestType b{};
  const i64 maxwg = ki::max_work_group_size(b);
  const auto maxg = ki::max_num_groups(b);
  std::mt19937_64 rng(seed());
  const auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  int ran = 0, refused = 0;
  for (int c = 0; c < cases; ++c) {
    const int rank = static_cast<int>(pick(1, 3));
    const bool by_ndrange = pick(0, 1) == 1;
    i64 extent[3] = {1, 1, 1}, wg[3] = {1, 1, 1};
    // Sizes that run: a few work-groups (or a ragged ndrange) of a group that fits the device.
    for (int d = 0; d < rank; ++d) {
      wg[d] = pick(1, d == 0 ? 64 : 8);
      extent[d] = by_ndrange ? pick(0, 3 * wg[d] + 5) : pick(0, 4);
    }
    if (wg[0] * wg[1] * wg[2] > maxwg) wg[1] = wg[2] = 1;  // (a group that fits, before a bad value)
    expectation e;
    // One bad value, in a third of the cases.
    const int bad = static_cast<int>(pick(0, 8));
    const int d = static_cast<int>(pick(0, rank - 1));
    if (bad == 0) {  // a negative extent
      extent[d] = negative[pick(0, 3)];
      e = {false, std::to_string(extent[d])};
    } else if (bad == 1) {  // a work-group size of 0 or below
      wg[d] = pick(0, 1) == 0 ? 0 : negative[pick(0, 3)];
      e = {false, std::to_string(wg[d])};
    } else if (bad == 2) {  // more work-items per group than the device has
      wg[d] = pick(0, 1) == 0 ? maxwg + 1 : huge[pick(0, 3)];
      e = {false, std::to_string(wg[d])};
    } else if (bad == 3 && !by_ndrange) {  // more work-groups than the device has
      extent[d] = pick(0, 1) == 0 ? maxg[static_cast<std::size_t>(d)] + 1 : huge[pick(0, 3)];
      e = {false, std::to_string(extent[d])};
    }
    if (e.valid) {
      i64 total = 1, per_group = 1;
      for (int k = 0; k < rank; ++k) per_group *= wg[k];
      REQUIRE(per_group <= maxwg);
      for (int k = 0; k < rank; ++k) total *= groups_of(extent[k], wg[k], by_ndrange) * wg[k];
      if (total > max_run) continue;
    }
    // The spec: an ndrange is rounded up to whole work-groups and not masked (the global size is
    // the padded one); a zero anywhere launches nothing.
    i64 n[3] = {1, 1, 1};
    for (int k = 0; k < rank; ++k) n[k] = e.valid ? groups_of(extent[k], wg[k], by_ndrange) * wg[k] : 0;
    const i64 count = e.valid && extent[0] * extent[1] * extent[2] != 0 ? n[0] * n[1] * n[2] : 0;
    const std::string what = std::string(by_ndrange ? "ndrange = " : "numgroups = ") + dims_str(extent, rank) +
                             ", workgroupsize = " + dims_str(wg, rank);
    check_case(b, e, count, what, [&](auto& hits) {
      ki::launch_spec s;
      if (by_ndrange) s.ndrange = make_dims(extent, rank);
      else s.numgroups = make_dims(extent, rank);
      s.workgroupsize = make_dims(wg, rank);
      ki::launch(b, s, ki_count{}, hits, n[0], n[1], n[2]);
    });
    (e.valid ? ran : refused) += 1;
  }
  CHECK(ran > cases / 3);
  CHECK(refused > cases / 8);
}

namespace {
/// A KA launch of the fuzz: dynamic, or with one of a few static work-group sizes.
template <class B, class L>
void ka_launch(const B& b, int shape, const ki::ka::ndrange& r, const ki::dims& wg, L&& args) {
  switch (shape) {
    case 1:
      return args([&](auto&&... a) { ki::ka::kernel(b, ka_count{}, ki::ka::groupsize<16>)({.ndrange = r}, a...); });
    case 2:
      return args([&](auto&&... a) { ki::ka::kernel(b, ka_count{}, ki::ka::groupsize<4, 4>)({.ndrange = r}, a...); });
    case 3:
      return args(
          [&](auto&&... a) { ki::ka::kernel(b, ka_count{}, ki::ka::groupsize<2, 2, 2>)({.ndrange = r}, a...); });
    default:
      return args([&](auto&&... a) { ki::ka::kernel(b, ka_count{})({.ndrange = r, .workgroupsize = wg}, a...); });
  }
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("geometry fuzz: a KA launch runs every index once or is refused naming the value",
                        "[faults][fuzz]", cpu_backends) {
  const TestType b{};
  const i64 maxwg = ki::max_work_group_size(b);
  std::mt19937_64 rng(seed() + 1);
  const auto pick = [&](i64 lo, i64 hi) { return std::uniform_int_distribution<i64>(lo, hi)(rng); };
  int ran = 0, refused = 0;
  for (int c = 0; c < cases; ++c) {
    const int rank = static_cast<int>(pick(1, 3));
    // 0: dynamic; 1..3: the static sizes of their rank (a static size of more dimensions than
    // the ndrange is its own error, not drawn).
    int shape = static_cast<int>(pick(0, 3));
    if (shape > rank) shape = 0;
    i64 wg[3] = {1, 1, 1};
    const int wrank = shape == 0 ? static_cast<int>(pick(1, rank)) : shape;
    for (int d = 0; d < wrank; ++d)
      wg[d] = shape == 1 ? 16 : shape == 2 ? 4 : shape == 3 ? 2 : pick(1, d == 0 ? 64 : 8);
    if (wg[0] * wg[1] * wg[2] > maxwg) wg[1] = wg[2] = 1;
    ki::range dims[3] = {{0, 1}, {0, 1}, {0, 1}};
    bool as_extent[3] = {true, true, true};
    for (int d = 0; d < rank; ++d) {
      const i64 len = pick(-3, 3 * wg[d] + 5);  // a range with last < first is empty, as 5:2 is
      as_extent[d] = len >= 0 && pick(0, 1) == 0;
      const i64 first = as_extent[d] ? 0 : pick(-100, 100);
      dims[d] = {first, first + len};
    }
    expectation e;
    const int bad = static_cast<int>(pick(0, 8));
    const int d = static_cast<int>(pick(0, rank - 1));
    if (bad == 0) {  // a negative extent (an ndrange of extents only: a range is never negative)
      for (int k = 0; k < rank; ++k) as_extent[k] = true, dims[k] = {0, dims[k].size()};
      dims[d] = {0, negative[pick(0, 3)]};
      e = {false, std::to_string(dims[d].last)};
    } else if (bad == 1) {  // a range of more than INT64_MAX indices, or one beyond INT64_MAX
      as_extent[d] = false;
      const int k = static_cast<int>(pick(0, 2));
      dims[d] = k == 0   ? ki::range{INT64_MIN, INT64_MAX}
                : k == 1 ? ki::range{-2, INT64_MAX}
                         : ki::range{INT64_MAX - 3, INT64_MAX};
      // (the last: 3 indices, but its work-group of wg > 3 reaches beyond INT64_MAX)
      if (k == 2 && wg[d] <= 3) dims[d] = ki::range{INT64_MIN, 0};
      e = {false, std::to_string(dims[d].first)};
    } else if (bad == 2 && shape == 0) {  // a bad dynamic work-group size
      const int k = static_cast<int>(pick(0, 2));
      const int wd = static_cast<int>(pick(0, wrank - 1));
      wg[wd] = k == 0 ? 0 : k == 1 ? maxwg + 1 : huge[pick(0, 3)];
      e = {false, std::to_string(wg[wd])};
    } else if (bad == 3) {  // a huge extent (too many work-groups)
      as_extent[d] = true;
      dims[d] = {0, huge[pick(0, 3)]};
      e = {false, std::to_string(dims[d].last)};
    }
    i64 ext[3] = {1, 1, 1};
    for (int k = 0; k < 3; ++k) ext[k] = k < rank ? dims[k].size() : 1;
    if (e.valid) {
      i64 per_group = 1, total = 1;
      for (int k = 0; k < wrank; ++k) per_group *= wg[k];
      REQUIRE(per_group <= maxwg);
      for (int k = 0; k < rank; ++k) total *= ext[k];
      if (total > max_run) continue;
    }
    const auto dim = [&](int k) -> ki::range { return dims[k]; };
    ki::ka::ndrange r;
    const auto one = [&](int k) { return as_extent[k] ? ki::ka::ndrange(dims[k].last) : ki::ka::ndrange(dim(k)); };
    // (an ndrange of mixed extents and ranges: each dimension as drawn)
    if (rank == 1) r = one(0);
    else if (rank == 2)
      r = as_extent[0] && as_extent[1] ? ki::ka::ndrange(dims[0].last, dims[1].last) : ki::ka::ndrange(dim(0), dim(1));
    else
      r = as_extent[0] && as_extent[1] && as_extent[2] ? ki::ka::ndrange(dims[0].last, dims[1].last, dims[2].last)
                                                       : ki::ka::ndrange(dim(0), dim(1), dim(2));
    const i64 count = e.valid ? ext[0] * ext[1] * ext[2] : 0;
    const std::string what =
        "ndrange = " + r.str() + ", workgroupsize = " + dims_str(wg, wrank) + (shape ? " (static)" : " (dynamic)");
    const ki::xyz<i64> first{rank > 0 ? dims[0].first : 0, rank > 1 ? dims[1].first : 0, rank > 2 ? dims[2].first : 0};
    const ki::xyz<i64> extents{ext[0], ext[1], ext[2]};
    check_case(b, e, count, what, [&](auto& hits) {
      ka_launch(b, shape, r, make_dims(wg, wrank), [&](auto&& go) { go(hits, first, extents); });
    });
    (e.valid ? ran : refused) += 1;
  }
  CHECK(ran > cases / 3);
  CHECK(refused > cases / 8);
}

TEMPLATE_LIST_TEST_CASE("KA sizes that overflow are refused naming the value, never an empty run", "[faults][sizes]",
                        cpu_backends) {
  const TestType b{};
  auto out = ki::zeros<int>(b, 1);
  const auto body = [](i64) {};
  const std::vector<int> empty;
  // v.size() - 1 of an empty vector: 18446744073709551615
  CHECK_THROWS_WITH(ki::ka::foreach_index(b, empty.size() - 1, body),
                    ContainsSubstring("18446744073709551615") && ContainsSubstring("v.size() - 1"));
  CHECK_THROWS_AS(ki::ka::foreach_index(b, empty.size() - 1, body), std::invalid_argument);
  CHECK_THROWS_WITH(ki::ka::foreach_index(b, i64{-1}, body), ContainsSubstring("-1"));
  CHECK_THROWS_WITH(ki::ka::foreach_index(b, INT64_MAX, body), ContainsSubstring("9223372036854775807"));
  CHECK_THROWS_WITH(ki::ka::foreach_index(b, ki::range{INT64_MIN, INT64_MAX}, body),
                    ContainsSubstring("-9223372036854775808") && ContainsSubstring("more than INT64_MAX"));
  CHECK_THROWS_AS(ki::ka::foreach_index(b, ki::range{INT64_MIN, INT64_MAX}, body), std::invalid_argument);
  // 3 indices, but the work-group of 256 that holds them reaches beyond INT64_MAX.
  CHECK_THROWS_WITH(ki::ka::foreach_index(b, ki::range{INT64_MAX - 3, INT64_MAX}, body),
                    ContainsSubstring("beyond INT64_MAX"));
  // An unsigned extent beyond INT64_MAX in an ndrange, at launch and at kernel construction.
  CHECK_THROWS_WITH(
      ki::ka::foreach_index(b, ki::ka::ndrange(std::size_t{1} << 63, std::size_t{2}), [](ki::xyz<i64>) {}),
      ContainsSubstring("9223372036854775808"));
  CHECK_THROWS_AS(ki::ka::kernel(b, ka_count{}, ki::dims(16), ki::ka::ndrange(ki::range{INT64_MIN, 1})),
                  std::invalid_argument);
  // The backend is usable after: a loop over the empty vector's size runs nothing.
  ki::ka::foreach_index(b, empty.size(), [s = ki::argconvert(b, out)](i64) { s[0] = 1; });
  ki::synchronize(b);
  CHECK(ki::to_host(b, out)[0] == 0);
  // Indices near INT64_MAX where the work-group still fits: they run.
  ki::ka::foreach_index(b, ki::range{INT64_MAX - 1000, INT64_MAX - 998}, [s = ki::argconvert(b, out)](i64 i) {
    if (i == INT64_MAX - 999) s[0] = 2;
  });
  ki::synchronize(b);
  CHECK(ki::to_host(b, out)[0] == 2);
}
