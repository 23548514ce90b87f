// Private: the integer type parameter of the index queries.
#pragma once
#include <ki/detail/private.hpp>
#include <concepts>
#include <cstdint>
#include <type_traits>

namespace ki::detail {

/// "T is a fixed-width integer type of at most 64 bits": excludes bool and character types.
template <class T>
concept query_integer = std::integral<T> && !std::same_as<std::remove_cv_t<T>, bool> && !std::same_as<T, char> &&
                        !std::same_as<T, wchar_t> && !std::same_as<T, char8_t> && !std::same_as<T, char16_t> &&
                        !std::same_as<T, char32_t> && sizeof(T) <= 8;

}  // namespace ki::detail
