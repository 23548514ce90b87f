// foreach_index (spec: "Loops without a kernel"): a loop over indices, launched as a KA kernel
// with one work-item per index; asynchronous like any launch, bounds checks kept.
//
//   ki::ka::foreach_index([=](std::int64_t i) { y[i] = 2 * x[i] + 1; }, y_array, x_array);
//   ki::ka::foreach_index(backend, ki::ka::ndrange{ki::range{1, n - 1}, ki::range{1, m - 1}},
//                         [=](ki::xyz<std::int64_t> c) { ... });
//
// With arrays, the body receives a linear index (a ki::array is contiguous: the spec's
// IndexLinear case), valid for every array passed: they must have the same number of elements
// and live on the same backend and device, else std::invalid_argument naming them. With an
// index space, the body receives its indices as they are: a std::int64_t for an extent or a
// ki::range, a ki::xyz (the shifted Cartesian index) for an ndrange of 2 or 3 dimensions.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <ki/ka/kernel.hpp>
#include <ki/ka/ndrange.hpp>
#include <ki/ka/sizes.hpp>
#include <ki/macros.hpp>
#include <ki/memory.hpp>

namespace ki::ka {

namespace detail {
/// The kernel of foreach_index: the body once per index of the space.
template <class F, bool Cartesian, bool Unchecked = false>
struct foreach_kernel {
  F f;
  template <class G>
  KI_DEVICE void operator()(G& g) const {
    const auto body = [&](auto i) {
      if constexpr (Cartesian) f(i.global());
      else f(i.global().x);
    };
    if constexpr (Unchecked) g.items(unchecked, body);
    else g.items(body);
  }
  /// Where the body converts with an argconvert of its own, so does the kernel (its device form
  /// runs the body's device form).
  template <class B>
  requires ki::detail::custom_argconvert<B, F&>
  auto argconvert(const B& b) & {
    return foreach_kernel<std::remove_cvref_t<decltype(ki::argconvert(b, f))>, Cartesian, Unchecked>{
        ki::argconvert(b, f)};
  }
};
}  // namespace detail

namespace detail {
/// An integer extent as a range 0 .. n-1: std::invalid_argument naming n where it is negative or
/// beyond INT64_MAX (v.size() - 1 of an empty vector), never an empty loop.
template <class I>
ki::range extent_range(I n) {
  if constexpr (std::is_unsigned_v<I>) {
    if (static_cast<std::uint64_t>(n) > static_cast<std::uint64_t>(INT64_MAX))
      bad("foreach_index: extent " + std::to_string(n) + " exceeds INT64_MAX (" + std::to_string(INT64_MAX) + ")" +
          (n == static_cast<I>(-1) ? " (an unsigned 0 - 1, as v.size() - 1 of an empty vector?)" : ""));
  } else if (n < 0) {
    bad("foreach_index: extent " + std::to_string(n) + " is negative (an extent must be at least 0)");
  }
  return ki::range{0, static_cast<std::int64_t>(n)};
}
template <bool Unchecked, class B, class F>
void foreach_range(const B& b, ki::range space, F f) {
  kernel(b, foreach_kernel<F, false, Unchecked>{std::move(f)}, groupsize<256>)({.ndrange = space});
}
template <bool Unchecked, class B, class F>
void foreach_space(const B& b, const ndrange& space, F f) {
  foreach_kernel<F, true, Unchecked> k{std::move(f)};
  if (space.rank() <= 1) kernel(b, std::move(k), groupsize<256>)({.ndrange = space});
  else if (space.rank() == 2) kernel(b, std::move(k), groupsize<16, 16>)({.ndrange = space});
  else kernel(b, std::move(k), groupsize<8, 8, 4>)({.ndrange = space});
}
}  // namespace detail

/// f(i) for every index i of a 1-D index space (an extent n: 0 .. n-1, or a ki::range).
template <class B, class F>
void foreach_index(const B& b, ki::range space, F f) {
  detail::foreach_range<false>(b, space, std::move(f));
}
template <class B, class F, class I>
requires std::is_integral_v<I>
void foreach_index(const B& b, I n, F f) { foreach_index(b, detail::extent_range(n), std::move(f)); }
/// f(c) for every index c (a ki::xyz, shifted) of an index space of 1 to 3 dimensions.
template <class B, class F>
void foreach_index(const B& b, const ndrange& space, F f) {
  detail::foreach_space<false>(b, space, std::move(f));
}

/// The same loops with no ki::span bounds check in f on simd_cpu (ki::ka::unchecked, an explicit
/// choice: the loop can then be vectorised; a bad index is not reported there, the access
/// happens). The reference backend keeps every check: run the kernel there to find one.
template <class B, class F>
void foreach_index(const B& b, ki::range space, F f, unchecked_t) {
  detail::foreach_range<true>(b, space, std::move(f));
}
template <class B, class F, class I>
requires std::is_integral_v<I>
void foreach_index(const B& b, I n, F f, unchecked_t) {
  detail::foreach_range<true>(b, detail::extent_range(n), std::move(f));
}
template <class B, class F>
void foreach_index(const B& b, const ndrange& space, F f, unchecked_t) {
  detail::foreach_space<true>(b, space, std::move(f));
}

/// f(i) for every linear index i of the arrays (all with as many elements, on one backend and
/// device).
template <class F, class T0, class B, class... T>
void foreach_index(F f, const array<T0, B>& first, const array<T, B>&... rest) {
  const auto check = [&](const auto& a, int k) {
    if (a.size() != first.size())
      throw std::invalid_argument("ki::ka::foreach_index: array " + std::to_string(k) + " has " +
                                  std::to_string(a.size()) + " elements, array 0 has " + std::to_string(first.size()) +
                                  " (the index must be valid for every array)");
    if (a.device() != first.device())
      throw std::invalid_argument("ki::ka::foreach_index: array " + std::to_string(k) + " is on device " +
                                  std::to_string(a.device()) + ", array 0 on device " + std::to_string(first.device()) +
                                  " (every array must be on the same device)");
  };
  int k = 1;
  (check(rest, k++), ...);
  foreach_index(first.get_backend(), ki::range{0, first.size()}, std::move(f));
}

/// (Arrays of different backends: refused at compile time.)
template <class F, class T0, class B0, class... T, class... Bs>
requires(sizeof...(Bs) > 0 && !(std::is_same_v<B0, Bs> && ...)) void foreach_index(F, const array<T0, B0>&,
                                                                                   const array<T, Bs>&...) {
  static_assert(sizeof(F) == 0, "ki::ka::foreach_index: every array must live on the same backend");
}

}  // namespace ki::ka
