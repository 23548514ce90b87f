// Metal's SIMD-group matrices (ki/sub_group_matrix.hpp): "An MtlSimdgroupMatrix holds such a
// matrix, distributed over the threads of the SIMD-group. Load it from device or threadgroup
// memory with simdgroup_load, multiply with * or muladd, and store the result with
// simdgroup_store"; "All threads of the SIMD-group have to execute these operations together";
// "Pass an origin to work on a tile of a larger matrix"; "Larger products accumulate tiles with
// muladd(ma, mb, mc), starting from zero(...)".
//
// The host computes every product itself, as a plain loop with the documented rounding (one fma
// per step, in k order), so results must match bit for bit on every backend and sub-group width.
// Only full sub-groups take part (a layout may split a work-group into partial ones); every
// variant with the linear layout promised must have all of its sub-groups full.
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <ki/sub_group_matrix.hpp>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_matrix {

using i64 = std::int64_t;
namespace sg = ki_test::sg;

/// Per full sub-group, the results written to its block of `per_sub_group` elements.
constexpr i64 per_sub_group = 6 * 64;
constexpr i64 big_rows = 16, big_cols = 24, col_ld = 13;  // the tiles' larger matrices

template <class T>
struct products {
  // a, b: dense 8x8 row-major; big: 16x24 row-major; col: 8 columns of col_ld elements (column-major);
  // tile_out: a 16x24 row-major matrix per sub-group (tile (8, 16) written, the rest left alone).
  KI_DEVICE void operator()(ki::span<const T> a, ki::span<const T> b, ki::span<const T> big, ki::const_span<T> col,
                            ki::span<T> out, ki::span<T> tile_out, ki::span<i64> done, i64 sub_groups_per_group) const {
    if (ki::get_sub_group_size() != ki::get_max_sub_group_size()) return;  // a partial sub-group takes no part
    const i64 g = ki::get_group_id().x * sub_groups_per_group + ki::get_sub_group_id();
    if (ki::get_sub_group_local_id() == 0) done[g] = 1;
    const auto ma = ki::sub_group_load(a);
    const auto mb = ki::sub_group_load(b);
    const auto base = ki::span<T>(out.data() + g * per_sub_group, per_sub_group);
    ki::sub_group_store(ma * mb, base, 8, {0, 0});                                      // [0, 64): a * b
    ki::sub_group_store(ki::muladd(ma, mb, ma), base, 8, {8, 0});                       // [64, 128): a * b + a
    ki::sub_group_store(ki::sub_group_load(big, big_cols, {8, 16}), base, 8, {16, 0});  // a tile of big
    ki::sub_group_store(ki::sub_group_load(col, col_ld, {5, 0}, ki::matrix_layout::column_major), base, 8,
                        {24, 0});  // a column-major tile
    // [320, 384): a through local memory, stored column-major and loaded row-major: a transposed.
    auto lm = ki::localmemory<T, 4 * 64>([] {});
    const i64 sid = ki::get_sub_group_id();
    if (sid < 4) {
      const auto mine = ki::span<T>(lm.data() + sid * 64, 64);
      ki::sub_group_store(ma, mine, 8, {0, 0}, ki::matrix_layout::column_major);
      ki::sub_group_barrier();
      ki::sub_group_store(ki::sub_group_load(lm, 8, {8 * sid, 0}), base, 8, {40, 0});
    }
    ki::sub_group_store(ki::multiply(mb, ma), base, 8, {32, 0});  // [256, 320): b * a
    ki::sub_group_store(ma, ki::span<T>(tile_out.data() + g * big_rows * big_cols, big_rows * big_cols), big_cols,
                        {8, 16});
  }
};

/// C = A * B for 64x64 matrices, A row-major, B column-major, C row-major: work-group (i, j)
/// computes tile (i, j) by muladd over the 8 tiles of k, from zero.
template <class T>
struct matmul64 {
  KI_DEVICE void operator()(ki::span<const T> a, ki::span<const T> b, ki::span<T> c, ki::span<i64> done) const {
    if (ki::get_sub_group_size() != ki::get_max_sub_group_size() || ki::get_sub_group_id() != 0) return;
    const i64 ti = ki::get_group_id().x, tj = ki::get_group_id().y;
    auto acc = ki::sub_group_matrix<T>::zero();
    for (i64 k = 0; k < 8; ++k)
      acc = ki::muladd(ki::sub_group_load(a, 64, {8 * ti, 8 * k}),
                       ki::sub_group_load(b, 64, {8 * k, 8 * tj}, ki::matrix_layout::column_major), acc);
    ki::sub_group_store(acc, c, 64, {8 * ti, 8 * tj});
    if (ki::get_sub_group_local_id() == 0) done[ti + 8 * tj] = 1;
  }
};

/// Each work-item writes (row, col) of each element it holds, and its lane and element count.
struct positions {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 slot = sg::here().slot;
    using M = ki::sub_group_matrix<float>;
    out[slot * 130 + 0] = ki::get_sub_group_local_id();
    out[slot * 130 + 1] = M::lane_elements();
    for (int k = 0; k < M::lane_elements(); ++k) {
      const auto p = M::position(k);
      out[slot * 130 + 2 + 2 * k] = p.row;
      out[slot * 130 + 3 + 2 * k] = p.col;
    }
  }
};

/// A sub-group matrix load in a partial sub-group.
struct partial {
  static constexpr unsigned line = __LINE__ + 2;
  KI_DEVICE void operator()(ki::span<const float> a, ki::span<float> out) const {
    const auto m = ki::sub_group_load(a);
    ki::sub_group_store(m, out);
  }
};

template <class T>
std::vector<T> values(i64 n, i64 salt) {  // small integers and halves: exact products, and some rounding
  std::vector<T> v(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i)
    v[static_cast<std::size_t>(i)] = static_cast<T>(static_cast<double>((i * 37 + salt * 11) % 23 - 11) / 7.0);
  return v;
}

/// The documented product: acc = fma(a(r, k), b(k, c), acc), k = 0..7, from c0 (for _Float16
/// each step in float, rounded to _Float16).
template <class T, class A, class B, class C>
T expected(A a, B b, C c0, int r, int c) {
  T acc = c0(r, c);
  for (int k = 0; k < 8; ++k) {
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) acc = std::fma(a(r, k), b(k, c), acc);
    else
      acc = static_cast<T>(std::fma(static_cast<float>(a(r, k)), static_cast<float>(b(k, c)), static_cast<float>(acc)));
  }
  return acc;
}

}  // namespace ki_spec_sub_group_matrix

using namespace ki_spec_sub_group_matrix;

TEMPLATE_LIST_TEST_CASE("sub_group_matrix: load, store, tiles with an origin, * and muladd, at every sub-group width",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  const auto run = [&]<class T>(T) {
    i64 full = 0;
    for (const auto& b : cfg::sub_group_variants()) {
      const i64 W = ki::sub_group_size(b), n = 2 * W;
      if (!ki_test::fits(b, {2, 1, 1}, {n, 1, 1})) continue;
      // Without independent sub-groups every sub-group must execute the same collectives: the
      // kernel's partial sub-groups (an unpromised layout may make some) do not.
      if (!ki::supports_independent_subgroups(b) && !ki::supports_linear_subgroups(b)) continue;
      KI_INFO(cfg::describe(b) << "; " << sizeof(T) << "-byte elements");
      const i64 per_group = n;  // at most one sub-group per work-item
      const auto ha = values<T>(64, 1), hb = values<T>(64, 2), hbig = values<T>(big_rows * big_cols, 3),
                 hcol = values<T>(8 * col_ld, 4);
      auto a = ki::allocate<T>(b, 64), bb = ki::allocate<T>(b, 64), big = ki::allocate<T>(b, big_rows * big_cols),
           col = ki::allocate<T>(b, 8 * col_ld);
      ki::copyto(b, a, ha);
      ki::copyto(b, bb, hb);
      ki::copyto(b, big, hbig);
      ki::copyto(b, col, hcol);
      auto out = ki_test::filled<T>(b, 2 * per_group * per_sub_group, T(-99));
      auto tile = ki_test::filled<T>(b, 2 * per_group * big_rows * big_cols, T(-77));
      auto done = ki_test::filled<i64>(b, 2 * per_group, 0);
      ki::launch(b, {.numgroups = 2, .workgroupsize = n}, products<T>{}, a, bb, big, ki::Const(col), out, tile, done,
                 per_group);
      const auto got = ki_test::read(b, out), got_tile = ki_test::read(b, tile);
      const auto got_done = ki_test::read(b, done);
      const auto A = [&](int r, int c) { return ha[static_cast<std::size_t>(r * 8 + c)]; };
      const auto B = [&](int r, int c) { return hb[static_cast<std::size_t>(r * 8 + c)]; };
      const auto zero = [](int, int) { return T(0); };
      i64 here = 0;
      for (i64 g = 0; g < 2 * per_group; ++g) {
        if (got_done[static_cast<std::size_t>(g)] == 0) continue;
        ++here;
        const auto at = [&](i64 block, int r, int c) {
          return got[static_cast<std::size_t>(g * per_sub_group + block * 64 + r * 8 + c)];
        };
        for (int r = 0; r < 8; ++r)
          for (int c = 0; c < 8; ++c) {
            KI_INFO("sub-group block " << g << ", element (" << r << ", " << c << ")");
            CHECK(at(0, r, c) == expected<T>(A, B, zero, r, c));
            CHECK(at(1, r, c) == expected<T>(A, B, A, r, c));
            CHECK(at(2, r, c) == hbig[static_cast<std::size_t>((8 + r) * big_cols + 16 + c)]);
            CHECK(at(3, r, c) == hcol[static_cast<std::size_t>(c * col_ld + 5 + r)]);
            CHECK(at(4, r, c) == expected<T>(B, A, zero, r, c));
            if (g % per_group < 4) CHECK(at(5, r, c) == A(c, r));
          }
        for (i64 r = 0; r < big_rows; ++r)
          for (i64 c = 0; c < big_cols; ++c) {
            const bool in = r >= 8 && c >= 16;
            const T want = in ? A(static_cast<int>(r - 8), static_cast<int>(c - 16)) : T(-77);
            CHECK(got_tile[static_cast<std::size_t>(g * big_rows * big_cols + r * big_cols + c)] == want);
          }
      }
      if (ki::supports_linear_subgroups(b)) CHECK(here == 4);  // two full sub-groups per work-group
      full += here;
    }
    CHECK(full > 0);
  };
  run(float{});
  run(double{});
#if KI_SPEC_HAS_FLOAT16
  run(_Float16{});  // "The element type can be Float16, Float32 or BFloat16"
#endif
}

TEMPLATE_LIST_TEST_CASE("sub_group_matrix: a 64x64 product accumulated from zero with muladd, bit for bit",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  i64 checked = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    if (!ki::supports_linear_subgroups(b)) continue;  // one full sub-group per work-group below
    const i64 W = ki::sub_group_size(b);
    if (!ki_test::fits(b, {8, 8, 1}, {W, 1, 1})) continue;
    KI_INFO(cfg::describe(b));
    const auto ha = values<float>(64 * 64, 5), hb = values<float>(64 * 64, 6);
    auto a = ki::allocate<float>(b, 64 * 64), bb = ki::allocate<float>(b, 64 * 64);
    ki::copyto(b, a, ha);
    ki::copyto(b, bb, hb);
    auto c = ki_test::filled<float>(b, 64 * 64, -1.0f);
    auto done = ki_test::filled<i64>(b, 64, 0);
    ki::launch(b, {.numgroups = ki::dims(8, 8), .workgroupsize = W}, matmul64<float>{}, a, bb, c, done);
    const auto got = ki_test::read(b, c);
    for (i64 t : ki_test::read(b, done)) CHECK(t == 1);
    for (int r = 0; r < 64; ++r)
      for (int col = 0; col < 64; ++col) {
        float acc = 0;  // row-major A, column-major B
        for (int k = 0; k < 64; ++k)
          acc = std::fma(ha[static_cast<std::size_t>(r * 64 + k)], hb[static_cast<std::size_t>(col * 64 + k)], acc);
        KI_INFO("C(" << r << ", " << col << ")");
        CHECK(got[static_cast<std::size_t>(r * 64 + col)] == acc);
      }
    ++checked;
  }
  CHECK(checked > 0);
}

TEMPLATE_LIST_TEST_CASE("sub_group_matrix: each lane holds 64 / W elements, all 64 once; at W = 32 Metal's layout",
                        "[sub_group]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  i64 at32 = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b);
    if (!ki::supports_linear_subgroups(b) || !ki_test::fits(b, {1, 1, 1}, {W, 1, 1})) continue;
    KI_INFO(cfg::describe(b));
    auto out = ki_test::filled<i64>(b, W * 130, -1);
    ki::launch(b, {.numgroups = 1, .workgroupsize = W}, positions{}, out);
    const auto got = ki_test::read(b, out);
    std::vector<int> seen(64, 0);
    for (i64 item = 0; item < W; ++item) {
      const auto f = [&](i64 k) { return got[static_cast<std::size_t>(item * 130 + k)]; };
      REQUIRE(f(1) == 64 / W);
      for (i64 k = 0; k < f(1); ++k) {
        const i64 r = f(2 + 2 * k), c = f(3 + 2 * k);
        REQUIRE((r >= 0 && r < 8 && c >= 0 && c < 8));
        ++seen[static_cast<std::size_t>(r * 8 + c)];
      }
    }
    for (int s : seen) CHECK(s == 1);
    if (W == 32) {  // Metal's simdgroup_float8x8: lane -> its two elements (row, col), (row, col + 1)
      const i64 lanes[][3] = {{0, 0, 0}, {1, 0, 2}, {2, 1, 0}, {3, 1, 2},  {4, 2, 0},
                              {7, 3, 2}, {8, 0, 4}, {9, 0, 6}, {16, 4, 0}, {31, 7, 6}};
      for (const auto& l : lanes) {
        for (i64 item = 0; item < W; ++item) {
          const auto f = [&](i64 k) { return got[static_cast<std::size_t>(item * 130 + k)]; };
          if (f(0) != l[0]) continue;
          KI_INFO("lane " << l[0]);
          CHECK(f(2) == l[1]);
          CHECK(f(3) == l[2]);
          CHECK(f(4) == l[1]);
          CHECK(f(5) == l[2] + 1);
          ++at32;
        }
      }
    }
  }
  if (ki::sub_group_size(cfg::make()) == 32 || std::string(cfg::name) == "reference") CHECK(at32 > 0);
}

#if !(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP)
TEMPLATE_LIST_TEST_CASE("sub_group_matrix: a partial sub-group is an error naming the call's line", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  i64 tried = 0;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b);
    if (W < 2 || !ki::supports_linear_subgroups(b)) continue;
    KI_INFO(cfg::describe(b));
    auto a = ki_test::filled<float>(b, 64, 1.0f);
    auto out = ki_test::filled<float>(b, 64, 0.0f);
    ki::launch(b, {.numgroups = 1, .workgroupsize = W - 1}, partial{}, a, out);
    try {
      ki::synchronize(b);
      FAIL("no error for a sub-group matrix in a partial sub-group");
    } catch (const ki::kernel_error& e) {
      const std::string m = e.what();
      KI_INFO(m);
      CHECK(m.find("sub_group_load") != std::string::npos);
      CHECK(m.find("21_sub_group_matrix.cpp:" + std::to_string(partial::line)) != std::string::npos);
      CHECK(m.find("full sub-group") != std::string::npos);
    }
    ++tried;
  }
  CHECK(tried > 0);
}
#endif
