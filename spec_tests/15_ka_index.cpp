// Spec (kernelabstractions-writing-kernels.txt, kernelabstractions-api.txt): the KA layer's
// @index forms (Global / Local / Group; Linear, Cartesian, NTuple) and @ndrange — ndranges of
// extents, of offset ranges, of an array's Cartesian indices, in 1 to 3 dimensions, and the
// padding work-items of a partial group. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
// Records every work-item's indices: global linear slot <- (global x, y, local linear, group linear).
struct record_indices {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    g.items([&](auto i) {
      const auto c = i.global();
      const i64 k = 4 * i.global_linear();
      out[k] = c.x;
      out[k + 1] = c.y;
      out[k + 2] = i.local_linear();
      out[k + 3] = i.group_linear();
    });
  }
};

// Per work-item of a 3-D launch: its NTuple indices (Global, Local, Group) and @ndrange().
struct record_tuples {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    const auto e = g.ndrange_extents();  // @ndrange(), group-level
    g.items([&](auto i) {
      const auto gl = i.global_tuple();
      const auto lo = i.local_tuple();
      const auto gr = i.group_tuple();
      const i64 k = 12 * i.global_linear();
      out[k] = gl[0], out[k + 1] = gl[1], out[k + 2] = gl[2];
      out[k + 3] = lo[0], out[k + 4] = lo[1], out[k + 5] = lo[2];
      out[k + 6] = gr[0], out[k + 7] = gr[1], out[k + 8] = gr[2];
      out[k + 9] = e.x, out[k + 10] = e.y, out[k + 11] = e.z;
    });
  }
};

// A[I] = 100 I[1] + I[2] over the Cartesian indices of A.
struct fill_cartesian {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> a) const {
    g.items([&](auto i) {
      const auto c = i.global();
      a(c.x, c.y) = 100 * c.x + c.y;
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: an ndrange of offset ranges: Cartesian indices shifted, Linear counted from 0", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  // The interior plus two halo cells on each side of a 5 x 3 grid: x in [-2, 7), y in [-1, 4).
  const ki::ka::ndrange r{ki::range{-2, 7}, ki::range{-1, 4}};
  const i64 nx = 9, ny = 5;
  auto out = ki::zeros<i64>(b, 4 * nx * ny);
  ki::ka::kernel k(b, record_indices{}, {4, 2});
  k({.ndrange = r}, out);
  ki::synchronize(b);
  const auto h = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const std::size_t k4 = static_cast<std::size_t>(4 * (x + nx * y));
      const i64 group = x / 4 + 3 * (y / 2);  // 3 x 3 groups of 4 x 2
      bad += h[k4] != x - 2 || h[k4 + 1] != y - 1 || h[k4 + 2] != x % 4 + 4 * (y % 2) || h[k4 + 3] != group;
    }
  CHECK(bad == 0);
  // The same space given statically.
  auto out2 = ki::zeros<i64>(b, 4 * nx * ny);
  ki::ka::kernel(b, record_indices{}, {4, 2}, r)(out2);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out2) == h);
}

TEMPLATE_LIST_TEST_CASE("ka: padding work-items of a partial group run the group-level code but no item statement",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  for (const i64 n : {i64{1}, i64{7}, i64{10}, i64{64}, i64{65}}) {
    KI_INFO("ndrange " << n << ", work-groups of 8");
    auto items = ki::zeros<i64>(b, n);
    auto groups = ki::zeros<i64>(b, (n + 7) / 8);
    ki::ka::kernel(b, count_statements{}, 8)({.ndrange = n}, items, groups);
    ki::synchronize(b);
    CHECK(ki_test::read(b, items) == std::vector<i64>(static_cast<std::size_t>(n), 1));
    CHECK(ki_test::read(b, groups) == std::vector<i64>(static_cast<std::size_t>((n + 7) / 8), 1));
  }
  // An empty ndrange runs nothing.
  auto none = ki::zeros<i64>(b, 1);
  ki::ka::kernel(b, count_statements{}, 8)({.ndrange = ki::range{5, 2}}, none, none);
  ki::synchronize(b);
  CHECK(ki_test::read(b, none) == std::vector<i64>{0});
}

TEMPLATE_LIST_TEST_CASE("ka: a 3-D ndrange: @index NTuple forms, @ndrange(), and the default work-group size (8, 8, 4)",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const auto check = [&](const ki::ka::ndrange& r, ki::xyz<i64> s, const std::vector<i64>& h) {
    const auto e = r.extents(), f = r.firsts();
    i64 bad = 0;
    for (i64 z = 0; z < e.z; ++z)
      for (i64 y = 0; y < e.y; ++y)
        for (i64 x = 0; x < e.x; ++x) {
          const std::size_t k = static_cast<std::size_t>(12 * (x + e.x * (y + e.y * z)));
          const i64 want[12] = {f.x + x, f.y + y, f.z + z, x % s.x, y % s.y, z % s.z,
                                x / s.x, y / s.y, z / s.z, e.x,     e.y,     e.z};
          for (std::size_t d = 0; d < 12; ++d) bad += h[k + d] != want[d];
        }
    return bad;
  };
  // Offset ranges in x and z, partial groups in x and y: 6 x 3 x 2 indices in 2 x 2 x 1 groups.
  const ki::ka::ndrange r{ki::range{-1, 5}, 3, ki::range{2, 4}};
  auto out = ki_test::filled<i64>(b, 12 * 36, -7);
  ki::ka::kernel(b, record_tuples{}, {4, 2, 2})({.ndrange = r}, out);
  ki::synchronize(b);
  CHECK(check(r, {4, 2, 2}, ki_test::read(b, out)) == 0);
  // A dynamic kernel launched without a work-group size: (8, 8, 4) for three dimensions.
  const ki::ka::ndrange big{10, 9, 5};
  auto out2 = ki_test::filled<i64>(b, 12 * 450, -7);
  ki::ka::kernel(b, record_tuples{})({.ndrange = big}, out2);
  ki::synchronize(b);
  CHECK(check(big, {8, 8, 4}, ki_test::read(b, out2)) == 0);
}

TEMPLATE_LIST_TEST_CASE("ka: an ndrange of an array's Cartesian indices (ndrange = CartesianIndices(A))", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::zeros<i64>(b, {5, 3});
  const auto r = ki::ka::ndrange::of(a.extents(), 2);  // CartesianIndices(A) of a 5 x 3 array
  CHECK(r == ki::ka::ndrange{5, 3});
  ki::ka::kernel(b, fill_cartesian{}, {4, 2})({.ndrange = r}, a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 k) { return 100 * (k % 5) + k / 5; }, "A");
}
