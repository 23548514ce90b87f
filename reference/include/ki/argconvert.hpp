// argconvert(backend, arg): the device-side representation of a kernel argument.
//
// A customisation point object. For each argument it uses, in this order:
//   1. an `argconvert(backend, arg)` function found by argument-dependent lookup (write one in
//      the namespace of your type to convert a struct holding arrays into a device struct);
//   2. a member `arg.argconvert(backend)` (ki::array uses this: it becomes a ki::span);
//   3. the argument itself, if it is trivially copyable (numbers, spans, plain structs).
// It is pure: it may be called more than once for the same launch.
#pragma once
#include <type_traits>
#include <utility>

namespace ki {
namespace detail {
void argconvert() = delete;  // blocks ordinary lookup: only ADL finds user overloads

struct argconvert_fn {
  template <class B, class T>
  constexpr decltype(auto) operator()(const B& b, T&& arg) const {
    if constexpr (requires { argconvert(b, std::forward<T>(arg)); }) {
      return argconvert(b, std::forward<T>(arg));
    } else if constexpr (requires { std::forward<T>(arg).argconvert(b); }) {
      return std::forward<T>(arg).argconvert(b);
    } else {
      using V = std::remove_cvref_t<T>;
      static_assert(std::is_trivially_copyable_v<V>,
                    "ki::argconvert: kernel arguments must be trivially copyable, or convert to a trivially "
                    "copyable device type (write argconvert(backend, arg) in the argument's namespace)");
      return V(arg);
    }
  }
};
}  // namespace detail

inline constexpr detail::argconvert_fn argconvert{};

}  // namespace ki
