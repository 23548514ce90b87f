// ki::span<T>: the device-side view of an array (what argconvert makes of a ki::array).
//
// Trivially copyable, so it can be a kernel argument on every backend. Elements are stored
// with x fastest: (i, j, k) is element i + nx * (j + ny * k). On CPU backends every access is
// bounds-checked and throws ki::out_of_bounds naming the index and the size; the executor adds
// the work-item's coordinates. GPU passes do not check.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstdint>
#include <string>
#include <type_traits>

#include <ki/errors.hpp>
#include <ki/macros.hpp>
#include <ki/xyz.hpp>
#if !KI_GPU_PASS
#include <ki/detail/cpu/checked.hpp>
#endif

namespace ki {
namespace detail {
#if !KI_GPU_PASS
// Out of line and cold, taking values: an access inlined into a kernel's loop is then a
// compare and a never-taken branch, and the span itself can stay in registers.
[[noreturn, gnu::noinline, gnu::cold]] inline void span_out_of_bounds(std::int64_t i, std::int64_t n) {
  throw out_of_bounds("index " + std::to_string(i) + " is out of bounds for a ki::span of " + std::to_string(n) +
                      " elements");
}
[[noreturn, gnu::noinline, gnu::cold]] inline void span_out_of_bounds(xyz<std::int64_t> i, xyz<std::int64_t> n) {
  throw out_of_bounds("index (" + std::to_string(i.x) + ", " + std::to_string(i.y) + ", " + std::to_string(i.z) +
                      ") is out of bounds for a ki::span of extents (" + std::to_string(n.x) + ", " +
                      std::to_string(n.y) + ", " + std::to_string(n.z) + ")");
}
[[noreturn, gnu::noinline, gnu::cold]] inline void local_out_of_bounds(std::int64_t i, std::int64_t n) {
  throw out_of_bounds("index " + std::to_string(i) + " is out of bounds for local memory of " + std::to_string(n) +
                      " elements");
}
[[noreturn, gnu::noinline, gnu::cold]] inline void local_out_of_bounds(std::int64_t i, std::size_t d, std::int64_t n) {
  throw out_of_bounds("index " + std::to_string(i) + " in dimension " + std::to_string(d) +
                      " is out of bounds for local memory of extent " + std::to_string(n));
}
#endif
/// 0 <= i < n (n >= 0) in one unsigned comparison: a negative i becomes a huge one.
KI_DEVICE constexpr bool in_bounds(std::int64_t i, std::int64_t n) {
  return static_cast<std::uint64_t>(i) < static_cast<std::uint64_t>(n);
}
template <class I>
KI_DEVICE constexpr std::int64_t to_index(I i) {
  static_assert(std::is_integral_v<I>, "ki::span: indices must be integers");
  // An unsigned index beyond int64 becomes negative here and fails the bounds check.
  return static_cast<std::int64_t>(i);
}
}  // namespace detail

template <class T>
class span {
 public:
  using element_type = T;
  span() = default;
  KI_DEVICE span(T* data, std::int64_t size) : data_(data), ext_{size, 1, 1} {}
  KI_DEVICE span(T* data, xyz<std::int64_t> extents) : data_(data), ext_(extents) {}
  /// span<T> converts to span<const T>.
  template <class U>
  requires(std::is_same_v<const U, T> && !std::is_same_v<U, T>) KI_DEVICE span(span<U> other)
      : data_(other.data()), ext_(other.extents()) {}

  KI_DEVICE std::int64_t size() const { return ext_.x * ext_.y * ext_.z; }
  KI_DEVICE xyz<std::int64_t> extents() const { return ext_; }
  KI_DEVICE T* data() const { return data_; }

#if !KI_GPU_PASS && KI_CHECKED_ACCESS
  // Checked-access mode (CPU only): the same accesses, each recorded with its source line.
  KI_DEVICE T& operator[](detail::checked::located_index i) const {
    const std::int64_t k = i.value;
    if (!detail::in_bounds(k, size())) [[unlikely]]
      detail::span_out_of_bounds(k, size());
    detail::checked::note(data_, size(), sizeof(T), k, i.where);
    return data_[k];
  }
  template <class J, class K = int>
  KI_DEVICE T& operator()(detail::checked::located_index i, J j, K k = 0) const {
    const xyz<std::int64_t> c{i.value, detail::to_index(j), detail::to_index(k)};
    if (!detail::in_bounds(c.x, ext_.x) || !detail::in_bounds(c.y, ext_.y) || !detail::in_bounds(c.z, ext_.z))
        [[unlikely]]
      detail::span_out_of_bounds(c, ext_);
    const std::int64_t lin = c.x + ext_.x * (c.y + ext_.y * c.z);
    detail::checked::note(data_, size(), sizeof(T), lin, i.where);
    return data_[lin];
  }
#else
  // Always inlined: were the compiler to inline only the check and outline the throwing path
  // (GCC does this in large translation units), that path would take the span's address and
  // keep the span in memory, a store per span and work-item in a CPU backend's item loop.
  /// Linear index (0-based).
  template <class I>
  KI_DEVICE KI_ALWAYS_INLINE T& operator[](I i) const {
    const std::int64_t k = detail::to_index(i);
#if !KI_GPU_PASS
    if (!detail::in_bounds(k, size())) [[unlikely]]
      detail::span_out_of_bounds(k, size());
#endif
    return data_[k];
  }

  /// Cartesian index, x fastest.
  template <class I, class J, class K = int>
  KI_DEVICE KI_ALWAYS_INLINE T& operator()(I i, J j, K k = 0) const {
    const xyz<std::int64_t> c{detail::to_index(i), detail::to_index(j), detail::to_index(k)};
#if !KI_GPU_PASS
    if (!detail::in_bounds(c.x, ext_.x) || !detail::in_bounds(c.y, ext_.y) || !detail::in_bounds(c.z, ext_.z))
        [[unlikely]]
      detail::span_out_of_bounds(c, ext_);
#endif
    return data_[c.x + ext_.x * (c.y + ext_.y * c.z)];
  }

#endif

 private:
  T* data_ = nullptr;
  xyz<std::int64_t> ext_{0, 1, 1};
};

}  // namespace ki

#include <ki/detail/public_end.hpp>
