// The index space of a KA launch (spec: ndrange, "Index ranges").
//
// Each dimension is an extent n (indices 0 .. n-1) or a range of indices, so that a kernel can
// iterate over a region that does not start at 0, e.g. two halo cells on each side of an n-point
// grid: ki::range{-2, n + 2}. Translated to C++ from the spec's 1-based, inclusive ranges:
// `first:last` becomes the half-open ki::range{first - 1, last} (0-based), so `-2:N+3` over a
// 1-based array of N elements is ki::range{-3, n + 3} over a 0-based one. A range whose last
// is not after its first is empty (as `5:2` is); a negative extent is an error at launch.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <type_traits>

#include <ki/xyz.hpp>

namespace ki {

/// The indices first, first + 1, ..., last - 1.
struct range {
  std::int64_t first = 0;
  std::int64_t last = 0;
  /// The number of indices, at most INT64_MAX (ki::range{INT64_MIN, INT64_MAX} has 2^64 - 1:
  /// a launch over it is refused, ndrange::too_large).
  constexpr std::int64_t size() const { return too_large() ? INT64_MAX : last > first ? last - first : 0; }
  /// Whether the range has more than INT64_MAX indices.
  constexpr bool too_large() const {
    return last > first &&
           static_cast<std::uint64_t>(last) - static_cast<std::uint64_t>(first) > static_cast<std::uint64_t>(INT64_MAX);
  }
  friend constexpr bool operator==(const range&, const range&) = default;
};

namespace ka {

/// 1 to 3 dimensions, each an extent or a ki::range; rank 0: not given.
class ndrange {
 public:
  constexpr ndrange() = default;
  /// Extents or ranges, x first: ndrange(n), ndrange(nx, ny), ndrange(ki::range{-2, n + 2}, m).
  template <class... D>
  requires(sizeof...(D) >= 1 && sizeof...(D) <= 3) constexpr ndrange(D... d) : rank_(static_cast<int>(sizeof...(D))) {
    int k = 0;
    ((set(k++, d)), ...);
  }
  /// The extents of an array (ki::xyz), as a 3-D index space (ki::array's dims()).
  static constexpr ndrange of(const xyz<std::int64_t>& e, int rank) {
    ndrange r;
    r.rank_ = rank;
    r.dims_ = {range{0, e.x}, range{0, e.y}, range{0, e.z}};
    r.negative_ = e.x < 0 || e.y < 0 || e.z < 0;
    return r;
  }

  constexpr int rank() const { return rank_; }
  constexpr bool given() const { return rank_ > 0; }
  constexpr const range& operator[](int d) const { return dims_[static_cast<std::size_t>(d)]; }
  /// Index counts per dimension (1 beyond the rank).
  constexpr xyz<std::int64_t> extents() const { return {dims_[0].size(), dims_[1].size(), dims_[2].size()}; }
  constexpr xyz<std::int64_t> firsts() const { return {dims_[0].first, dims_[1].first, dims_[2].first}; }
  constexpr std::int64_t count() const { return dims_[0].size() * dims_[1].size() * dims_[2].size(); }
  /// Whether an extent given was negative (an error at launch: it names the value).
  constexpr bool has_negative_extent() const { return negative_; }
  /// The first dimension (-1: none) whose extent or range has more than INT64_MAX indices (an
  /// unsigned extent beyond it, as v.size() - 1 of an empty vector; a range as
  /// ki::range{INT64_MIN, INT64_MAX}): an error at launch naming the value.
  constexpr int too_large_dimension() const {
    for (int d = 0; d < rank_; ++d)
      if (big_[static_cast<std::size_t>(d)] != 0 || dims_[static_cast<std::size_t>(d)].too_large()) return d;
    return -1;
  }
  friend constexpr bool operator==(const ndrange& a, const ndrange& b) {
    return a.rank_ == b.rank_ && a.dims_ == b.dims_ && a.big_ == b.big_;
  }
  std::string str() const {
    std::string s = "(";
    for (int d = 0; d < rank_; ++d) {
      const range& r = dims_[static_cast<std::size_t>(d)];
      const std::uint64_t big = big_[static_cast<std::size_t>(d)];
      s += d ? ", " : "";
      if (big != 0) s += std::to_string(big);
      else if (r.first == 0) s += std::to_string(r.last);
      else s += "ki::range{" + std::to_string(r.first) + ", " + std::to_string(r.last) + "}";
    }
    return s + ")";
  }

 private:
  template <class I>
  constexpr void set(int k, I v) {
    if constexpr (std::is_same_v<I, range>) {
      dims_[static_cast<std::size_t>(k)] = v;
    } else {
      static_assert(std::is_integral_v<I>, "ki::ka::ndrange: each dimension is an integer extent or a ki::range");
      if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t)) {
        if (v > static_cast<std::uint64_t>(INT64_MAX)) {  // (kept for the message; refused at launch)
          big_[static_cast<std::size_t>(k)] = v;
          dims_[static_cast<std::size_t>(k)] = range{0, INT64_MAX};
          return;
        }
      }
      const auto n = static_cast<std::int64_t>(v);
      if (n < 0) negative_ = true;
      dims_[static_cast<std::size_t>(k)] = range{0, n};
    }
  }
  std::array<range, 3> dims_{{{0, 1}, {0, 1}, {0, 1}}};
  std::array<std::uint64_t, 3> big_{};  // an unsigned extent beyond INT64_MAX, as given (0: none)
  int rank_ = 0;
  bool negative_ = false;
};

}  // namespace ka
}  // namespace ki
