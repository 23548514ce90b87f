// ki::span<T>: the device-side view of an array (what argconvert makes of a ki::array).
//
// Trivially copyable, so it can be a kernel argument on every backend. Elements are stored
// with x fastest: (i, j, k) is element i + nx * (j + ny * k). On CPU backends every access is
// bounds-checked and throws ki::out_of_bounds naming the index, the access's source line and
// the span's element type and size; the executor adds the work-item's coordinates (except in a
// KA phase that asks for no checks, g.items(ki::ka::unchecked, f), on simd_cpu). GPU passes do
// not check.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstdint>
#include <string>
#include <type_traits>

#include <ki/errors.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/xyz.hpp>
#if !KI_GPU_PASS
#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/type_name.hpp>
#endif

namespace ki {
namespace detail {
#if !KI_GPU_PASS
/// "k.cpp:12" (":column" where the compiler gives one): a location as errors name it.
inline std::string location_string(const source_location& w) {
  std::string r = std::string(base_name(w.file)) + ":" + std::to_string(w.line);
  return w.column != 0 ? r + ":" + std::to_string(w.column) : r;
}
/// "index 8 is out of bounds at k.cpp:17 for <array>" (`index`: "8" or "(3, 2, 0)").
/// `pc`: the access's code (the return address of the cold function that throws), or null.
[[noreturn]] inline void throw_out_of_bounds(const std::string& index, const source_location& at,
                                             const std::string& array, const void* pc = nullptr) {
  throw out_of_bounds(
      "index " + index + " is out of bounds" + (at.line != 0 ? " at " + location_string(at) : "") + " for " + array, at,
      pc, checked::caller_of(pc));
}
// Out of line and cold, taking values: an access inlined into a kernel's loop is then a
// compare and a never-taken branch, and the span itself can stay in registers. `type` is the
// element type's name (a constant: detail::type_name), file/line/column the access's location
// (the accessor's located_index), all read only here.
[[noreturn, gnu::noinline, gnu::cold]] inline void span_out_of_bounds(std::int64_t i, std::int64_t n, const char* type,
                                                                      const char* file, unsigned line,
                                                                      unsigned column) {
  throw_out_of_bounds(std::to_string(i), {file, line, column},
                      std::string("a ki::span<") + type + "> of " + std::to_string(n) + " elements",
                      __builtin_return_address(0));
}
[[noreturn, gnu::noinline, gnu::cold]] inline void span_out_of_bounds(xyz<std::int64_t> i, xyz<std::int64_t> n,
                                                                      const char* type, const char* file, unsigned line,
                                                                      unsigned column) {
  throw_out_of_bounds("(" + std::to_string(i.x) + ", " + std::to_string(i.y) + ", " + std::to_string(i.z) + ")",
                      {file, line, column},
                      std::string("a ki::span<") + type + "> of extents (" + std::to_string(n.x) + ", " +
                          std::to_string(n.y) + ", " + std::to_string(n.z) + ")",
                      __builtin_return_address(0));
}
#endif
/// Set on a thread while simd_cpu runs a phase written g.items(ki::ka::unchecked, f) or
/// g.items(ki::ka::unchecked, count, f) (what ki::ka::foreach_index(..., ki::ka::unchecked) runs):
/// a ki::span or local memory access then does not check its index. Read only where the index is out of bounds, so a checked access costs what it did; in
/// an unchecked phase the compiler knows it is set (the phase sets it just before its loop, and
/// the loop's float or int stores cannot change a bool), drops the checks and can vectorise the
/// loop. The oracle never sets it.
/// (Declared in GPU passes too: the CPU backends' KA groups, which set it, are compiled there.)
inline thread_local bool span_checks_off = false;
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

#if !KI_GPU_PASS
  // CPU backends: every access is bounds-checked, and the index parameter (located_index)
  // carries the access's source line for the error. Checked-access mode also records each
  // access with that line (ki/detail/cpu/checked.hpp).
  // Always inlined: were the compiler to inline only the check and outline the throwing path
  // (GCC does this in large translation units), that path would take the span's address and
  // keep the span in memory, a store per span and work-item in a CPU backend's item loop.
  /// Linear index (0-based).
  KI_DEVICE KI_ALWAYS_INLINE T& operator[](detail::checked::located_index i) const {
    const std::int64_t k = i.value;
    if (!detail::in_bounds(k, size()) && !detail::span_checks_off) [[unlikely]]
      detail::span_out_of_bounds(k, size(), detail::type_name<T>(), i.file, i.line, i.column);
#if KI_CHECKED_ACCESS
    detail::checked::note(data_, size(), sizeof(T), k, i.where());
#endif
    return data_[k];
  }

  /// Cartesian index, x fastest.
  template <class J, class K = int>
  KI_DEVICE KI_ALWAYS_INLINE T& operator()(detail::checked::located_index i, J j, K k = 0) const {
    const xyz<std::int64_t> c{i.value, detail::to_index(j), detail::to_index(k)};
    if ((!detail::in_bounds(c.x, ext_.x) || !detail::in_bounds(c.y, ext_.y) || !detail::in_bounds(c.z, ext_.z)) &&
        !detail::span_checks_off) [[unlikely]]
      detail::span_out_of_bounds(c, ext_, detail::type_name<T>(), i.file, i.line, i.column);
    const std::int64_t lin = c.x + ext_.x * (c.y + ext_.y * c.z);
#if KI_CHECKED_ACCESS
    detail::checked::note(data_, size(), sizeof(T), lin, i.where());
#endif
    return data_[lin];
  }
#else
  // GPU passes: no check.
  /// Linear index (0-based).
  template <class I>
  KI_DEVICE KI_ALWAYS_INLINE T& operator[](I i) const {
    return data_[detail::to_index(i)];
  }

  /// Cartesian index, x fastest.
  template <class I, class J, class K = int>
  KI_DEVICE KI_ALWAYS_INLINE T& operator()(I i, J j, K k = 0) const {
    const xyz<std::int64_t> c{detail::to_index(i), detail::to_index(j), detail::to_index(k)};
    return data_[c.x + ext_.x * (c.y + ext_.y * c.z)];
  }
#endif

 private:
  T* data_ = nullptr;
  xyz<std::int64_t> ext_{0, 1, 1};
};

}  // namespace ki

#include <ki/detail/public_end.hpp>
