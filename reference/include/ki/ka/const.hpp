// @Const (spec: "Constant arguments"): a read-only argument that aliases no other memory of the
// kernel — CUDA C's const restrict.
//
//   k(2.0, ki::ka::Const(x), y);   // the kernel's parameter for x is a ki::span<const T>
//
// Writes through it do not compile (the parameter is a span of const elements). A launch where
// a Const argument overlaps any writable span argument (the same array, a view of it) is
// std::invalid_argument naming both arguments, on the host before anything runs. (The KI
// layer's ki::Const, ki/const_span.hpp, makes the same promise for KI kernels.)
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

#include <ki/const_span.hpp>
#include <ki/span.hpp>

namespace ki::ka {

/// The argument `a` marked @Const (held by reference until the launch converts it).
template <class A>
struct const_arg {
  const A& a;
};

/// @Const(a).
template <class A>
const_arg<A> Const(const A& a) {
  return {a};
}

namespace detail {
template <class T>
struct is_const_arg : std::false_type {};
template <class A>
struct is_const_arg<const_arg<A>> : std::true_type {};

using ki::detail::arg_memory;
using ki::detail::memory_of;
using ki::detail::span_of;

/// std::invalid_argument if a Const argument overlaps a writable one.
inline void check_const(const arg_memory* m, std::size_t n) { ki::detail::check_no_alias(m, n, "ki::ka", "@Const"); }
}  // namespace detail
}  // namespace ki::ka
