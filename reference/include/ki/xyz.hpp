// ki::xyz<T>: the spec's @NamedTuple{x::T, y::T, z::T}, the result of every index query.
#pragma once
#include <ki/macros.hpp>

namespace ki {

template <class T>
struct xyz {
  T x, y, z;
  friend constexpr bool operator==(const xyz&, const xyz&) = default;
};

}  // namespace ki
