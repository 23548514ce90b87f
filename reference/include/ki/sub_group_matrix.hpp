// Sub-group matrices (Metal's simdgroup matrices): an 8x8 matrix distributed over the work-items
// of a sub-group, loaded from and stored to global or local memory, multiplied together.
//
//   auto a = ki::sub_group_load(A, lda, {row, col});    // the 8x8 tile of A at (row, col)
//   auto c = ki::muladd(a, ki::sub_group_load(B, ldb), ki::sub_group_matrix<float>::zero());
//   ki::sub_group_store(c, C, ldc, {row, col});
//
// Contract:
// - Every operation except zero()/filled() is a collective, like the shuffles: all work-items of
//   the sub-group execute it together, with the same arguments. The sub-group must be full
//   (get_sub_group_size() == get_max_sub_group_size()); on the CPU backends a partial one is an
//   error naming the call's line, on GPUs it is undefined. The oracle checks the collective like
//   any other (divergence, mismatched calls), naming the call's line: products are built on
//   shfl and report as it; loads and stores vote (sub_group_all) on the CPU backends, for the
//   check alone.
// - Layout: the sub-group of width W (any power of two up to 64) holds the 64 elements, 64 / W
//   per lane. Element number g = lane * (64 / W) + k of the pair order below is lane's k-th;
//   pairs of row-adjacent elements j = g / 2 sit at row 4*b4 + 2*b2 + b1, columns 4*b3 + 2*b0
//   (+ g % 2), with b_i the bits of j: at W = 32 each lane holds one pair, as Metal's
//   simdgroup_float8x8 does (lane 0: (0,0),(0,1); lane 1: (0,2),(0,3); lane 2: (1,0),(1,1)).
//   element()/position() expose it, for code that works on the elements in place.
// - Memory: a tile of a larger matrix held in a ki::span, ki::const_span or local memory (any
//   view with operator[] and size()): element (r, c) of the tile is src[(origin.row + r) * ld +
//   origin.col + c] in row-major layout, src[(origin.col + c) * ld + origin.row + r] in
//   column-major layout. ld is the leading dimension (8: a dense 8x8 matrix). 0-based: Metal.jl's
//   origin (9, 1), 1-based and column-major, is {.row = 8, .col = 0}. Every element read or
//   written is bounds-checked as the view's own operator[] checks it.
// - Arithmetic: exact and identical on every backend: element (r, c) of a * b + c0 is the left
//   fold acc = fma(a(r, k), b(k, c), acc) over k = 0..7 from acc = c0(r, c) (0 for a * b), each
//   fma rounded once (std::fma on the CPU, fma on GPUs; no tensor cores). For _Float16 each step
//   is computed in float and rounded to _Float16.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>  // (and, in checked-access mode, detail::checked)
#include <ki/sub_group.hpp>
#include <ki/target.hpp>
#if !KI_GPU_PASS
#include <stdexcept>
#endif

namespace ki {

enum class matrix_layout : std::uint8_t { row_major, column_major };

/// The top-left element of a tile in a larger matrix, 0-based.
struct matrix_origin {
  std::int64_t row = 0, col = 0;
};

/// The row and column of an element of a sub-group matrix.
struct matrix_position {
  int row, col;
};

namespace detail {
template <class T>
inline constexpr bool matrix_element_type = std::is_same_v<T, float> || std::is_same_v<T, double>
#if defined(__FLT16_MAX__) && !KI_GPU_PASS
                                            || std::is_same_v<T, _Float16>
#endif
    ;

/// The position of element number g (0..63) in the distributed order (see the header comment).
KI_DEVICE constexpr matrix_position matrix_element_position(int g) {
  const int j = g >> 1;
  const int row = 4 * ((j >> 4) & 1) + 2 * ((j >> 2) & 1) + ((j >> 1) & 1);
  const int col = 4 * ((j >> 3) & 1) + 2 * (j & 1) + (g & 1);
  return {row, col};
}

template <class T>
KI_DEVICE inline T matrix_fma(T a, T b, T acc) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    return ::fma(a, b, acc);  // float and double overloads on CUDA and HIP
  }
#endif
#if !KI_GPU_PASS
  if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) return std::fma(a, b, acc);
  else return static_cast<T>(std::fma(static_cast<float>(a), static_cast<float>(b), static_cast<float>(acc)));
#endif
}

/// Element `k` of a view, at `where` (the call's line) for an out-of-bounds error and for
/// checked-access mode.
template <class View>
KI_DEVICE inline decltype(auto) matrix_at(const View& v, std::int64_t k, const source_location& where) {
#if !KI_GPU_PASS
  return v[checked::located_index(k, where)];
#else
  (void)where;
  return v[k];
#endif
}

KI_DEVICE inline std::int64_t matrix_offset(int r, int c, std::int64_t ld, matrix_origin o, matrix_layout layout) {
  return layout == matrix_layout::row_major ? (o.row + r) * ld + (o.col + c) : (o.col + c) * ld + (o.row + r);
}
}  // namespace detail

/// An 8x8 matrix of T (float, double, _Float16 on the CPU backends) distributed over a sub-group.
template <class T, int Rows = 8, int Cols = 8>
class sub_group_matrix {
  static_assert(Rows == 8 && Cols == 8, "ki::sub_group_matrix: only 8x8 matrices (Metal's size)");
  static_assert(detail::matrix_element_type<T>,
                "ki::sub_group_matrix: the element type must be float or double (or _Float16 on the CPU backends)");

 public:
  using value_type = T;
  static constexpr int rows = Rows, cols = Cols, size = Rows * Cols;
  /// The most elements one lane holds: 64 / W where the target fixes W, else 64 (W = 1).
  static constexpr int max_lane_elements = target.sub_group_width > 0 ? size / target.sub_group_width : size;

  /// The zero matrix (not a collective: each work-item sets its own elements).
  KI_DEVICE static sub_group_matrix zero() { return sub_group_matrix{}; }
  /// Every element v (not a collective).
  KI_DEVICE static sub_group_matrix filled(T v) {
    sub_group_matrix m;
    for (int k = 0; k < max_lane_elements; ++k) m.e_[k] = v;
    return m;
  }

  /// The number of elements the calling work-item holds (64 / sub-group width).
  KI_DEVICE static int lane_elements() { return size / width(); }
  /// The calling work-item's k-th element, 0 <= k < lane_elements().
  KI_DEVICE T& element(int k) { return e_[k]; }
  KI_DEVICE const T& element(int k) const { return e_[k]; }
  /// Where the calling work-item's k-th element sits in the matrix.
  KI_DEVICE static matrix_position position(int k) {
    return detail::matrix_element_position(static_cast<int>(get_sub_group_local_id<std::int64_t>()) * lane_elements() +
                                           k);
  }

  /// The sub-group width, fixed at compile time where the target fixes it.
  KI_DEVICE static int width() {
    if constexpr (target.sub_group_width > 0) return target.sub_group_width;
    else return static_cast<int>(get_max_sub_group_size<std::int64_t>());
  }

 private:
  T e_[max_lane_elements]{};
};

namespace detail {
/// A partial sub-group cannot hold a matrix (CPU backends: an error naming the call). On the CPU
/// backends this is also where a load or store becomes a collective for the oracle (a vote, which
/// loads and stores need for nothing else): one that part of the sub-group skips, or that meets
/// another operation, is reported as any collective is, with its line.
KI_DEVICE inline void matrix_needs_full_sub_group(const char* what, const source_location& where, bool vote = false) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    (void)what;
    (void)where;
    (void)vote;
    return;
  }
#endif
#if !KI_GPU_PASS
  if (vote) (void)sub_group_all(true, where);
  const std::int64_t n = get_sub_group_size(), w = get_max_sub_group_size();
  if (n != w) [[unlikely]] {
    throw std::logic_error(std::string("ki: ") + what + " at " + base_name(where.file) + ":" +
                           std::to_string(where.line) + " needs a full sub-group: this one has " + std::to_string(n) +
                           " work-items of width " + std::to_string(w) + " (a sub-group matrix is spread over all " +
                           std::to_string(w) + " lanes)");
  }
#endif
}

/// All 64 elements of m, in row-major order, in every work-item (a collective: shfl of each
/// lane's elements).
template <class T>
KI_DEVICE inline void matrix_gather(const sub_group_matrix<T>& m, T (&full)[64], const source_location& where) {
  using M = sub_group_matrix<T>;
  const int w = M::width(), per = M::lane_elements();
  for (int lane = 0; lane < w; ++lane)
    for (int k = 0; k < per; ++k) {
      const matrix_position p = matrix_element_position(lane * per + k);
      full[p.row * 8 + p.col] = shfl(m.element(k), lane, where);
    }
}

template <class T>
KI_DEVICE inline sub_group_matrix<T> matrix_product(const sub_group_matrix<T>& a, const sub_group_matrix<T>& b,
                                                    const sub_group_matrix<T>* c, const char* what,
                                                    const source_location& where) {
  matrix_needs_full_sub_group(what, where);
  T fa[64], fb[64];
  matrix_gather(a, fa, where);
  matrix_gather(b, fb, where);
  sub_group_matrix<T> out;
  const int per = out.lane_elements();
  for (int k = 0; k < per; ++k) {
    const matrix_position p = out.position(k);
    T acc = c != nullptr ? c->element(k) : T(0);
    for (int i = 0; i < 8; ++i) acc = matrix_fma(fa[p.row * 8 + i], fb[i * 8 + p.col], acc);
    out.element(k) = acc;
  }
  return out;
}
}  // namespace detail

/// Loads the 8x8 tile at `origin` of the matrix in `src` (leading dimension ld) into a
/// sub-group matrix (a collective).
template <class View, class T = std::remove_cvref_t<decltype(*std::declval<const View&>().data())>>
KI_DEVICE inline sub_group_matrix<T> sub_group_load(const View& src, std::int64_t ld = 8, matrix_origin origin = {},
                                                    matrix_layout layout = matrix_layout::row_major,
                                                    source_location where = source_location::current()) {
  detail::matrix_needs_full_sub_group("sub_group_load", where, true);
  sub_group_matrix<T> m;
  const int per = m.lane_elements();
  for (int k = 0; k < per; ++k) {
    const matrix_position p = m.position(k);
    m.element(k) = detail::matrix_at(src, detail::matrix_offset(p.row, p.col, ld, origin, layout), where);
  }
  return m;
}

/// Stores m into the 8x8 tile at `origin` of the matrix in `dst` (a collective); the other
/// elements of dst are left as they are.
template <class T, class View>
KI_DEVICE inline void sub_group_store(const sub_group_matrix<T>& m, const View& dst, std::int64_t ld = 8,
                                      matrix_origin origin = {}, matrix_layout layout = matrix_layout::row_major,
                                      source_location where = source_location::current()) {
  static_assert(!std::is_const_v<std::remove_reference_t<decltype(*dst.data())>>,
                "ki::sub_group_store: the destination is read-only");
  detail::matrix_needs_full_sub_group("sub_group_store", where, true);
  const int per = m.lane_elements();
  for (int k = 0; k < per; ++k) {
    const matrix_position p = m.position(k);
    detail::matrix_at(dst, detail::matrix_offset(p.row, p.col, ld, origin, layout), where) = m.element(k);
  }
}

/// a * b (a collective).
template <class T>
KI_DEVICE inline sub_group_matrix<T> multiply(const sub_group_matrix<T>& a, const sub_group_matrix<T>& b,
                                              source_location where = source_location::current()) {
  return detail::matrix_product<T>(a, b, nullptr, "sub_group_matrix multiply", where);
}
/// a * b + c (a collective), each element one fused fold (see the header comment).
template <class T>
KI_DEVICE inline sub_group_matrix<T> muladd(const sub_group_matrix<T>& a, const sub_group_matrix<T>& b,
                                            const sub_group_matrix<T>& c,
                                            source_location where = source_location::current()) {
  return detail::matrix_product<T>(a, b, &c, "sub_group_matrix muladd", where);
}
/// a * b (a collective). An operator cannot take the caller's line: reports name this header's;
/// ki::multiply names the caller's.
template <class T>
KI_DEVICE inline sub_group_matrix<T> operator*(const sub_group_matrix<T>& a, const sub_group_matrix<T>& b) {
  return multiply(a, b);
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
