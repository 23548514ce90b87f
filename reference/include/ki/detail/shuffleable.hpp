// Private: which types the shuffles move (supports_shuffle): trivially copyable types as
// bytes, and std::pair / std::tuple of such types (nested ones too) element by element, as the
// spec allows "isbits structs and tuples of such types" (std::pair and std::tuple are not
// trivially copyable in C++).
#pragma once
#include <ki/detail/private.hpp>
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

namespace ki::detail {

/// std::pair / std::tuple whose elements are all shuffleable (no references).
template <class T>
struct tuple_of_shuffleable : std::false_type {};

/// Moved by the shuffles: as bytes (trivially copyable) or element by element (a tuple).
template <class T>
inline constexpr bool shuffleable_v =
    !std::is_reference_v<T> && (std::is_trivially_copyable_v<T> || tuple_of_shuffleable<std::remove_cv_t<T>>::value);

template <class... Ts>
struct tuple_of_shuffleable<std::tuple<Ts...>> : std::bool_constant<(shuffleable_v<Ts> && ...)> {};
template <class A, class B>
struct tuple_of_shuffleable<std::pair<A, B>> : std::bool_constant<shuffleable_v<A> && shuffleable_v<B>> {};

/// A tuple or pair the shuffles move element by element (trivially copyable ones go as bytes).
template <class T>
concept element_wise_value = !std::is_trivially_copyable_v<T> && tuple_of_shuffleable<T>::value;

}  // namespace ki::detail
