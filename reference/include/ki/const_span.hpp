// Read-only arguments (Metal's Const: "promises that it won't be modified during the kernel.
// That lets the compiler cache and reorder loads from it"):
//
//   struct scale {
//     KI_DEVICE void operator()(ki::span<float> y, ki::const_span<float> x) const {
//       const auto i = ki::get_global_id().x;
//       if (i < y.size()) y[i] = 2 * x[i];
//     }
//   };
//   ki::launch(b, {.ndrange = n}, scale{}, y, ki::Const(x));
//
// - ki::const_span<T>: a view whose elements are read, never written: an access returns the
//   value (a write does not compile). On CUDA each load is a read-only cache load (__ldg, for
//   arithmetic types); on the CPU backends it is ki::span<const T>'s bounds-checked (and, in
//   checked-access mode, recorded) load. It converts to ki::span<const T>.
// - ki::Const(a) at the launch makes the argument a const_span and promises that it aliases no
//   other argument of the kernel: a launch where it overlaps a writable span argument (the same
//   array, a view of it) is std::invalid_argument naming both arguments, on the host before
//   anything runs, on every backend (GPUs rely on the promise, the CPU checks it).
// The KA layer's @Const is ki::ka::Const (ki/ka/const.hpp), the same promise for KA kernels.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <ki/argconvert.hpp>
#include <ki/macros.hpp>
#include <ki/span.hpp>

namespace ki {

namespace detail {
template <class T>
struct span_of : std::false_type {};
template <class T>
struct span_of<ki::span<T>> : std::true_type {
  using element = T;
};
}  // namespace detail

template <class T>
class const_span {
  static_assert(!std::is_const_v<T>, "ki::const_span<T>: T is the element type, without const");

 public:
  using element_type = const T;
  const_span() = default;
  KI_DEVICE explicit const_span(span<const T> s) : s_(s) {}
  KI_DEVICE explicit const_span(span<T> s) : s_(s) {}

  KI_DEVICE std::int64_t size() const { return s_.size(); }
  KI_DEVICE xyz<std::int64_t> extents() const { return s_.extents(); }
  KI_DEVICE const T* data() const { return s_.data(); }
  /// A read-only span of the same elements (without the read-only cache loads).
  KI_DEVICE operator span<const T>() const { return s_; }

#if !KI_GPU_PASS
  // The span's accessors, with the caller's line (an out-of-bounds error names it).
  KI_DEVICE KI_ALWAYS_INLINE T operator[](detail::checked::located_index i) const { return s_[i]; }
  template <class J, class K = int>
  KI_DEVICE KI_ALWAYS_INLINE T operator()(detail::checked::located_index i, J j, K k = 0) const {
    return s_(i, j, k);
  }
#else
  template <class I>
  KI_DEVICE KI_ALWAYS_INLINE T operator[](I i) const {
    return load(s_.data() + detail::to_index(i));
  }
  template <class I, class J, class K = int>
  KI_DEVICE KI_ALWAYS_INLINE T operator()(I i, J j, K k = 0) const {
    const auto e = s_.extents();
    return load(s_.data() + (detail::to_index(i) + e.x * (detail::to_index(j) + e.y * detail::to_index(k))));
  }
#endif

 private:
#if KI_GPU_PASS
  KI_DEVICE static T load(const T* p) {
#if !defined(__HIPCC__)
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) return __ldg(p);  // the read-only cache
    else return *p;
#else
    return *p;
#endif
  }
#endif
  span<const T> s_;
};

/// The argument `a` marked Const for a launch (held by reference until the launch converts it).
template <class A>
struct const_arg {
  const A& a;
  /// To a const_span (argconvert's member form): a must convert to a ki::span.
  template <class B>
  auto argconvert(const B& b) const {
    auto s = ki::argconvert(b, a);
    using S = decltype(s);
    static_assert(detail::span_of<S>::value,
                  "ki::Const: the argument must be an array or a span (it becomes a ki::const_span)");
    return const_span<std::remove_const_t<typename detail::span_of<S>::element>>(s);
  }
};

/// Metal's Const(a): read-only, aliasing no other argument.
template <class A>
const_arg<A> Const(const A& a) {
  return {a};
}

namespace detail {
template <class T>
struct is_const_span : std::false_type {};
template <class T>
struct is_const_span<const_span<T>> : std::true_type {};

/// The bytes a converted argument covers, if it is a span: [begin, end); whether it is writable
/// and whether it was promised to alias nothing.
struct arg_memory {
  const unsigned char* begin = nullptr;
  const unsigned char* end = nullptr;
  bool writable = false;
  bool marked_const = false;
};
template <class V>
arg_memory memory_of(const V& v, bool marked_const) {
  arg_memory m;
  m.marked_const = marked_const || is_const_span<V>::value;
  if constexpr (span_of<V>::value || is_const_span<V>::value) {
    m.begin = reinterpret_cast<const unsigned char*>(v.data());
    m.end = m.begin + static_cast<std::size_t>(v.size()) * sizeof(*v.data());
    if constexpr (span_of<V>::value) m.writable = !std::is_const_v<typename span_of<V>::element>;
  }
  return m;
}

/// std::invalid_argument if an argument marked const overlaps a writable one (`who`: the
/// message's prefix, e.g. "ki::ka", `mark`: the marker's name, e.g. "@Const").
inline void check_no_alias(const arg_memory* m, std::size_t n, const char* who, const char* mark) {
  const std::less<const unsigned char*> lt;
  for (std::size_t i = 0; i < n; ++i) {
    if (!m[i].marked_const || m[i].begin == m[i].end) continue;
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i || !m[j].writable || m[j].begin == m[j].end) continue;
      if (lt(m[i].begin, m[j].end) && lt(m[j].begin, m[i].end))
        throw std::invalid_argument(std::string(who) + ": argument " + std::to_string(i) + " is " + mark +
                                    " (read-only, aliasing nothing) but overlaps the writable argument " +
                                    std::to_string(j) + " (" + std::to_string(m[j].end - m[j].begin) + " bytes from " +
                                    std::to_string(reinterpret_cast<std::uintptr_t>(m[j].begin)) + ")");
    }
  }
}

/// The KI launch's check: a ki::Const argument (a const_span) against the writable spans.
template <class... C>
void check_const_args(const C&... c) {
  if constexpr ((is_const_span<C>::value || ...)) {
    const arg_memory m[] = {memory_of(c, false)...};
    check_no_alias(m, sizeof...(C), "ki: launch", "ki::Const");
  }
}
}  // namespace detail

}  // namespace ki
