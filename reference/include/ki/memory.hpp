// Memory: ki::array (owning, on a backend), allocate / zeros / ones, copyto, pagelock,
// unsafe_free, get_backend, device(b, array).
//
// A ki::array<T, B> owns device memory of backend B on the device that was active when it was
// allocated (freed when it is destroyed, after the work queued before; move-only). Its extents
// are up to 3-D with x fastest. Passed to a kernel it becomes a ki::span<T> (argconvert). Host
// arrays are any contiguous range (std::vector, std::span, C arrays): copyto takes them; the CPU
// backends also take those that own their elements (std::vector) as kernel arguments, and
// ki::get_backend of a host array is the reference backend (ki/reference/backend.hpp).
#pragma once
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <ranges>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include <ki/backend.hpp>
#include <ki/dims.hpp>
#include <ki/span.hpp>
#include <ki/xyz.hpp>

namespace ki {

struct alloc_options {
  /// Unified memory: accessible from the host and the device without copies. Throws
  /// std::invalid_argument where supports_unified(backend) is false.
  bool unified = false;
};

template <class T, backend B>
class array {
  static_assert(std::is_trivially_copyable_v<T>, "ki::array<T>: T must be trivially copyable");

 public:
  array() = default;
  array(const B& b, xyz<std::int64_t> extents, bool unified)
      : backend_(b), ext_(extents), unified_(unified), device_(backend_traits<B>::device(b)) {
    const std::size_t bytes = static_cast<std::size_t>(size()) * sizeof(T);
    data_ = static_cast<T*>(backend_traits<B>::allocate(backend_, bytes, unified));
  }
  array(const array&) = delete;
  array& operator=(const array&) = delete;
  array(array&& o) noexcept
      : backend_(o.backend_),
        data_(std::exchange(o.data_, nullptr)),
        ext_(std::exchange(o.ext_, {0, 1, 1})),
        unified_(o.unified_),
        device_(o.device_),
        released_(std::exchange(o.released_, false)) {}
  array& operator=(array&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      data_ = std::exchange(o.data_, nullptr);
      ext_ = std::exchange(o.ext_, {0, 1, 1});
      unified_ = o.unified_;
      device_ = o.device_;
      released_ = std::exchange(o.released_, false);
    }
    return *this;
  }
  ~array() { reset(); }

  std::int64_t size() const { return ext_.x * ext_.y * ext_.z; }
  xyz<std::int64_t> extents() const { return ext_; }
  bool unified() const { return unified_; }
  /// The device that owns the memory (0-based), whichever device is active now.
  int device() const { return device_; }
  /// Device pointer (host-accessible only for unified memory, or on CPU backends); throws
  /// std::invalid_argument after ki::unsafe_free.
  T* data() const {
    check_alive("used");
    return data_;
  }
  const B& get_backend() const { return backend_; }
  /// Whether ki::unsafe_free released the memory.
  bool released() const { return released_; }

  /// The kernel argument. Throws std::invalid_argument after unsafe_free, and when the memory
  /// is on another device than the one active for b (unless it is unified memory).
  span<T> argconvert(const B& b) & {
    check_device(b);
    return span<T>(data_, ext_);
  }
  span<const T> argconvert(const B& b) const& {
    check_device(b);
    return span<const T>(data_, ext_);
  }

  /// What ki::unsafe_free calls.
  void unsafe_free() {
    check_alive("freed twice");
    reset();
    released_ = true;
  }

 private:
  void check_alive(const char* what) const {
    if (released_)
      throw std::invalid_argument(std::string("ki::array: ") + what + " after ki::unsafe_free released it (" +
                                  std::to_string(size()) + " elements on device " + std::to_string(device_) + ")");
  }
  void check_device(const B& b) const {
    check_alive("passed to a kernel");
    if (unified_) return;
    const int active = backend_traits<B>::device(b);
    if (active != device_)
      throw std::invalid_argument("ki::array: an array of device " + std::to_string(device_) +
                                  " passed to a launch on device " + std::to_string(active) +
                                  " (allocate it there, copy it with ki::copyto, or use unified memory)");
  }
  void reset() noexcept {
    if (data_ != nullptr) backend_traits<B>::free(backend_, device_, data_);
    data_ = nullptr;
  }
  B backend_{};
  T* data_ = nullptr;
  xyz<std::int64_t> ext_{0, 1, 1};
  bool unified_ = false;
  int device_ = 0;
  bool released_ = false;
};

/// The backend that owns A.
template <class T, backend B>
B get_backend(const array<T, B>& a) {
  return a.get_backend();
}

/// The device that owns the memory of a (0-based), independently of the active device.
template <backend B, class T>
int device(const B&, const array<T, B>& a) {
  return a.device();
}

/// Release the memory of a now (after the work queued before); a is unusable afterwards: using
/// it throws std::invalid_argument. The spec calls this a hint; here it always releases.
template <class T, backend B>
void unsafe_free(array<T, B>& a) {
  a.unsafe_free();
}

/// Pin host memory for b's devices, so that copies can be asynchronous. Returns an empty optional
/// where the backend does not implement it (the spec's missing).
template <backend B, std::ranges::contiguous_range R>
std::optional<std::monostate> pagelock(const B& b, R& host) {
  return backend_traits<B>::pagelock(b, std::ranges::data(host),
                                     std::ranges::size(host) * sizeof(std::ranges::range_value_t<R>));
}

namespace detail {
inline xyz<std::int64_t> checked_extents(const dims& d, std::size_t elem_size) {
  if (!d.given()) throw std::invalid_argument("ki::allocate: no dimensions given");
  std::int64_t e[3] = {1, 1, 1};
  std::int64_t total = 1;
  for (int i = 0; i < d.rank(); ++i) {
    if (d.too_large(i) || d[i] < 0)
      throw std::invalid_argument("ki::allocate: dimension " + std::to_string(i) + " = " + d.value_str(i) +
                                  " is invalid (must be between 0 and 2^63-1)");
    e[i] = d[i];
    if (e[i] != 0 && total > std::numeric_limits<std::int64_t>::max() / e[i])
      throw std::invalid_argument("ki::allocate: dims " + d.str() + " have more elements than fit std::int64_t");
    total *= e[i];
  }
  if (static_cast<std::uint64_t>(total) > std::numeric_limits<std::size_t>::max() / elem_size)
    throw std::invalid_argument("ki::allocate: dims " + d.str() + " need more bytes than fit std::size_t");
  return {e[0], e[1], e[2]};
}
}  // namespace detail

/// An uninitialised array on the active device of b (the reference backend poisons it).
template <class T, backend B>
array<T, B> allocate(const B& b, const dims& d, alloc_options o = {}) {
  const auto e = detail::checked_extents(d, sizeof(T));
  if (o.unified && !backend_traits<B>::supports_unified(b))
    throw std::invalid_argument(std::string("ki::allocate: unified = true, but backend ") + backend_traits<B>::name +
                                " does not support unified memory");
  return array<T, B>(b, e, o.unified);
}

namespace detail {
template <class T>
struct is_ki_array : std::false_type {};
template <class T, class B>
struct is_ki_array<array<T, B>> : std::true_type {};
/// A host range, or a ki::array of backend B (for copyto: an array of another backend is
/// memory B's queue cannot order or keep alive).
template <class A, class B>
struct of_backend : std::true_type {};
template <class T, class A, class B>
struct of_backend<array<T, A>, B> : std::is_same<A, B> {};

template <class A>
auto* elements(A& a) {
  if constexpr (is_ki_array<std::remove_const_t<A>>::value) return a.data();
  else return std::ranges::data(a);
}
template <class A>
std::int64_t length(const A& a) {
  if constexpr (is_ki_array<A>::value) return a.size();
  else return static_cast<std::int64_t>(std::ranges::size(a));
}
template <class A>
using element_t = std::remove_cv_t<std::remove_pointer_t<decltype(elements(std::declval<A&>()))>>;

/// A host array that a CPU backend converts for a kernel (the spec's Array): a contiguous range
/// of trivially copyable elements that owns them (std::vector; not std::array, a view such as
/// std::span, or anything else trivially copyable, which a kernel receives as it is).
template <class R>
concept host_array =
    std::ranges::contiguous_range<R> && std::ranges::sized_range<R> &&
    !std::is_trivially_copyable_v<std::remove_cv_t<R>> &&
    !is_ki_array<std::remove_cv_t<R>>::value && std::is_trivially_copyable_v<std::ranges::range_value_t<R>>;
/// A host array as a kernel receives it on a CPU backend: a 1-D ki::span over its elements
/// (span<const T> for a const one). It does not keep the array alive.
template <host_array R>
auto host_span(R& r) {
  using T = std::remove_reference_t<std::ranges::range_reference_t<R>>;
  return span<T>(std::ranges::data(r), static_cast<std::int64_t>(std::ranges::size(r)));
}
}  // namespace detail

/// Copies src to dest, ordered with the calling thread's other work on the active device.
/// Either side may be a ki::array of b or a contiguous host range; lengths must match.
template <backend B, class Dest, class Src>
Dest& copyto(const B& b, Dest& dest, const Src& src) {
  using TD = detail::element_t<Dest>;
  using TS = detail::element_t<const Src>;
  static_assert(std::is_same_v<TD, TS>, "ki::copyto: dest and src must have the same element type");
  static_assert(!std::is_const_v<std::remove_pointer_t<decltype(detail::elements(dest))>> &&
                    !(std::is_const_v<Dest> && detail::is_ki_array<std::remove_const_t<Dest>>::value),
                "ki::copyto: dest is read-only");
  static_assert(
      detail::of_backend<std::remove_const_t<Dest>, B>::value && detail::of_backend<std::remove_const_t<Src>, B>::value,
      "ki::copyto: a ki::array of another backend than b: its memory is that backend's, which b's queue "
      "cannot order nor keep alive; copy it to a host vector with its own backend first");
  const std::int64_t nd = detail::length(dest), ns = detail::length(src);
  if (nd != ns)
    throw std::invalid_argument("ki::copyto: dest has " + std::to_string(nd) + " elements but src has " +
                                std::to_string(ns));
  constexpr bool dd = detail::is_ki_array<std::remove_const_t<Dest>>::value;
  constexpr bool sd = detail::is_ki_array<std::remove_const_t<Src>>::value;
  constexpr copy_kind kind = dd ? (sd ? copy_kind::device_to_device : copy_kind::host_to_device)
                                : (sd ? copy_kind::device_to_host : copy_kind::host_to_host);
  if (nd > 0)
    backend_traits<B>::copy(b, detail::elements(dest), detail::elements(src), static_cast<std::size_t>(nd) * sizeof(TD),
                            kind);
  return dest;
}

template <class T, backend B>
array<T, B> zeros(const B& b, const dims& d, alloc_options o = {}) {
  auto a = allocate<T>(b, d, o);
  const std::vector<T> host(static_cast<std::size_t>(a.size()), T(0));
  copyto(b, a, host);  // copy() has read a host source when it returns (backend contract)
  return a;
}

template <class T, backend B>
array<T, B> ones(const B& b, const dims& d, alloc_options o = {}) {
  auto a = allocate<T>(b, d, o);
  const std::vector<T> host(static_cast<std::size_t>(a.size()), T(1));
  copyto(b, a, host);
  return a;
}

/// Convenience, not in the spec: copies a to a new host vector and synchronizes.
template <class T, backend B>
std::vector<T> to_host(const B& b, const array<T, B>& a) {
  std::vector<T> h(static_cast<std::size_t>(a.size()));
  copyto(b, h, a);
  backend_traits<B>::synchronize(b);
  return h;
}

/// Convenience, not in the spec: a new array of b holding a copy of the host range h.
template <backend B, std::ranges::contiguous_range R>
auto to_device(const B& b, const R& h) {
  using T = std::ranges::range_value_t<R>;
  auto a = allocate<T>(b, static_cast<std::int64_t>(std::ranges::size(h)));
  copyto(b, a, h);
  return a;
}

}  // namespace ki
