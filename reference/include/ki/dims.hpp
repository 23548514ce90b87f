// ki::dims: the spec's "an Integer or a tuple of up to 3 Integers; missing dimensions are 1".
//
// `.ndrange = n`, `.ndrange = {nx, ny}`, `.workgroupsize = {16, 16, 4}`; a default-constructed
// dims means "not given". Values are kept exactly as given (an unsigned value beyond int64 is
// remembered) so that validation can name the bad value.
#pragma once
#include <array>
#include <concepts>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace ki {

class dims {
 public:
  constexpr dims() = default;
  template <class X>
  requires(std::integral<X> && !std::same_as<X, bool>) constexpr dims(X x) { push(x); }
  template <class X, class Y>
  requires(std::integral<X>&& std::integral<Y> && !std::same_as<X, bool> &&
           !std::same_as<Y, bool>) constexpr dims(X x, Y y) {
    push(x), push(y);
  }
  template <class X, class Y, class Z>
  requires(std::integral<X>&& std::integral<Y>&& std::integral<Z> && !std::same_as<X, bool> && !std::same_as<Y, bool> &&
           !std::same_as<Z, bool>) constexpr dims(X x, Y y, Z z) {
    push(x), push(y), push(z);
  }

  /// Number of values given (0: not given).
  constexpr int rank() const { return rank_; }
  constexpr bool given() const { return rank_ > 0; }
  /// Value of dimension d (1 for a missing one). Only meaningful when !too_large(d).
  constexpr std::int64_t operator[](int d) const { return v_[d]; }
  /// Whether the value given for d does not fit std::int64_t.
  constexpr bool too_large(int d) const { return big_[d] != 0; }
  /// The value as given, for messages: "(100, 2)" or "100".
  std::string str() const {
    std::string s = rank_ == 1 ? "" : "(";
    for (int d = 0; d < rank_; ++d) {
      if (d) s += ", ";
      s += value_str(d);
    }
    return rank_ == 1 ? s : s + ")";
  }
  std::string value_str(int d) const { return big_[d] ? std::to_string(big_[d]) : std::to_string(v_[d]); }

 private:
  template <class X>
  constexpr void push(X x) {
    if constexpr (std::is_unsigned_v<X> && sizeof(X) >= sizeof(std::int64_t)) {
      if (x > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        big_[rank_] = x;
        v_[rank_++] = std::numeric_limits<std::int64_t>::max();
        return;
      }
    }
    v_[rank_++] = static_cast<std::int64_t>(x);
  }
  std::array<std::int64_t, 3> v_{1, 1, 1};
  std::array<std::uint64_t, 3> big_{0, 0, 0};
  int rank_ = 0;
};

}  // namespace ki
