// argconvert(backend, arg): the device-side representation of a kernel argument, and of the
// kernel callable itself (the spec: "Called for every kernel argument, and for the kernel
// function itself").
//
// A customisation point object. For each argument it uses, in this order:
//   1. an `argconvert(backend, arg)` function found by argument-dependent lookup (write one in
//      the namespace of your type to convert a struct holding arrays into a device struct);
//   2. a member `arg.argconvert(backend)` (ki::array uses this: it becomes a ki::span);
//   3. a member `backend.argconvert(arg)` of the backend value: what the backend itself converts
//      (the CPU backends: a host array, e.g. a std::vector, becomes a ki::span over it);
//   4. the argument itself, if it is trivially copyable (numbers, spans, plain structs).
// It is pure: it may be called more than once for the same launch.
//
// ki::device_capture(x) is the conversion a kernel lambda applies to what it captures
// (KI_LAMBDA_CAPTURE, ki/macros.hpp): an array of a backend becomes its device form on its own
// backend (ki::argconvert(get_backend(x), x), a ki::span), anything trivially copyable stays as
// it is.
#pragma once
#include <type_traits>
#include <utility>

namespace ki {
namespace detail {
void argconvert() = delete;   // blocks ordinary lookup: only ADL finds user overloads
void get_backend() = delete;  // (the same, for device_capture's get_backend(x))

/// Whether argconvert(b, arg) takes route 1, 2 or 3 above: arg has a conversion, rather than
/// being passed on as it is.
template <class B, class T>
concept adl_argconvert = requires(const B& b, T&& arg) {
  argconvert(b, std::forward<T>(arg));
};
template <class B, class T>
concept member_argconvert = requires(const B& b, T&& arg) {
  std::forward<T>(arg).argconvert(b);
};
template <class B, class T>
concept backend_argconvert = requires(const B& b, T&& arg) {
  b.argconvert(std::forward<T>(arg));
};
template <class B, class T>
concept custom_argconvert = adl_argconvert<B, T> || member_argconvert<B, T> || backend_argconvert<B, T>;

struct argconvert_fn {
  template <class B, class T>
  constexpr decltype(auto) operator()(const B& b, T&& arg) const {
    if constexpr (adl_argconvert<B, T>) {
      return argconvert(b, std::forward<T>(arg));
    } else if constexpr (member_argconvert<B, T>) {
      return std::forward<T>(arg).argconvert(b);
    } else if constexpr (backend_argconvert<B, T>) {
      return b.argconvert(std::forward<T>(arg));
    } else {
      using V = std::remove_cvref_t<T>;
      static_assert(std::is_trivially_copyable_v<V>,
                    "ki::argconvert: kernel arguments must be trivially copyable, or convert to a trivially "
                    "copyable device type (write argconvert(backend, arg) in the argument's namespace)");
      return V(arg);
    }
  }
};

struct device_capture_fn {
  template <class T>
  constexpr auto operator()(T& x) const {
    if constexpr (requires { get_backend(x); }) {
      return argconvert_fn{}(get_backend(x), x);
    } else {
      static_assert(std::is_trivially_copyable_v<std::remove_cv_t<T>>,
                    "ki::device_capture: a kernel lambda captures arrays of a backend (get_backend(x)), which "
                    "become spans, and trivially copyable values; this capture is neither");
      return std::remove_cv_t<T>(x);
    }
  }
};
}  // namespace detail

inline constexpr detail::argconvert_fn argconvert{};

/// What a kernel lambda captures in place of x (KI_LAMBDA_CAPTURE): for an array, its device
/// form on its own backend (a ki::array<T, B> becomes a ki::span<T>, a const one a
/// ki::span<const T>; checked as when it is passed to a launch: it must be on the active device
/// of its backend, unless unified, and not freed); otherwise x itself, which must be trivially
/// copyable. The span does not keep the array alive: the array must outlive the kernel's launches.
inline constexpr detail::device_capture_fn device_capture{};

}  // namespace ki
