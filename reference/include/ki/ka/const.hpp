// @Const (spec: "Constant arguments"): a read-only argument that aliases no other memory of the
// kernel — CUDA C's const restrict.
//
//   k(2.0, ki::ka::Const(x), y);   // the kernel's parameter for x is a ki::span<const T>
//
// Writes through it do not compile (the parameter is a span of const elements). A launch where
// a Const argument overlaps any writable span argument (the same array, a view of it) is
// std::invalid_argument naming both arguments, on the host before anything runs.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>

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

template <class T>
struct span_of : std::false_type {};
template <class T>
struct span_of<ki::span<T>> : std::true_type {
  using element = T;
};

/// The bytes a converted argument covers, if it is a span: [begin, end); whether it is writable.
struct arg_memory {
  const unsigned char* begin = nullptr;
  const unsigned char* end = nullptr;
  bool writable = false;
  bool marked_const = false;
};
template <class V>
arg_memory memory_of(const V& v, bool marked_const) {
  arg_memory m;
  m.marked_const = marked_const;
  if constexpr (span_of<V>::value) {
    using T = typename span_of<V>::element;
    m.begin = reinterpret_cast<const unsigned char*>(v.data());
    m.end = m.begin + static_cast<std::size_t>(v.size()) * sizeof(T);
    m.writable = !std::is_const_v<T>;
  }
  return m;
}

/// std::invalid_argument if a Const argument overlaps a writable one (`what`: the kernel).
inline void check_const(const arg_memory* m, std::size_t n) {
  const std::less<const unsigned char*> lt;
  for (std::size_t i = 0; i < n; ++i) {
    if (!m[i].marked_const || m[i].begin == m[i].end) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || !m[j].writable || m[j].begin == m[j].end) continue;
      if (lt(m[i].begin, m[j].end) && lt(m[j].begin, m[i].end))
        throw std::invalid_argument("ki::ka: argument " + std::to_string(i) +
                                    " is @Const (read-only, aliasing nothing) but overlaps the writable argument " +
                                    std::to_string(j) + " (" + std::to_string(m[j].end - m[j].begin) + " bytes from " +
                                    std::to_string(reinterpret_cast<std::uintptr_t>(m[j].begin)) + ")");
    }
  }
}
}  // namespace detail
}  // namespace ki::ka
