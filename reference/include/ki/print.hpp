// print(args...): print one line from a kernel (the spec's _print / @print);
// print_inline(args...): the same without ending the line (KA's @print, ki::ka::print).
//
// On CPU backends the arguments are formatted with operator<< into one string and written with
// a single locked write, so lines of different work-items never interleave. On GPUs the line is
// one device printf whose format string is built at compile time from the argument types, with
// the conversions that print what operator<< prints: integers in decimal, bool as 0/1,
// characters as characters, float and double as %g (operator<<'s default, 6 significant
// digits), C strings as text, other pointers as %p. Other types do not compile in GPU code.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <ki/macros.hpp>
#if !KI_GPU_PASS
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>

#include <ki/detail/cpu/executor.hpp>
#endif
#if KI_GPU_CODE
#include <array>
#include <cstddef>
#include <type_traits>
#include <ki/detail/gpu/intrinsics.hpp>
#endif

namespace ki {
namespace detail {
#if !KI_GPU_PASS
inline void print_line(const std::string& line) {
  static std::mutex m;
  std::lock_guard lock(m);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fflush(stdout);
}
#endif
#if KI_GPU_CODE
template <class... A>
inline constexpr bool always_false = false;

template <class T>
inline constexpr bool is_char_v =
    std::is_same_v<T, char> || std::is_same_v<T, signed char> || std::is_same_v<T, unsigned char>;

/// The printf conversion of an argument of type T (as print passes it, see print_arg).
template <class A>
constexpr const char* print_spec() {
  using T = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<T, bool>) return "%d";
  else if constexpr (is_char_v<T>) return "%c";
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) return sizeof(T) <= 4 ? "%d" : "%lld";
  else if constexpr (std::is_integral_v<T>) return sizeof(T) <= 4 ? "%u" : "%llu";
  else if constexpr (std::is_floating_point_v<T>) return "%g";
  else if constexpr (std::is_array_v<T> || std::is_pointer_v<T>) {
    using E = std::remove_cv_t<std::remove_pointer_t<std::decay_t<T> > >;
    return is_char_v<E> ? "%s" : "%p";
  } else {
    static_assert(always_false<T>,
                  "ki::print in GPU code takes integers, floating-point numbers, characters, "
                  "C strings and pointers");
    return "";
  }
}
constexpr std::size_t spec_length(const char* s) {
  std::size_t n = 0;
  while (s[n] != '\0') ++n;
  return n;
}
/// "%d%s...\n" for the argument types (without the newline: "%d%s..."), null-terminated.
template <bool Newline, class... A>
constexpr auto print_format() {
  constexpr std::size_t n = (spec_length(print_spec<A>()) + ... + 0) + (Newline ? 2 : 1);
  std::array<char, n> f{};
  std::size_t k = 0;
  for (const char* s : {print_spec<A>()..., Newline ? "\n" : ""})
    for (std::size_t i = 0; s[i] != '\0'; ++i) f[k++] = s[i];
  f[k] = '\0';
  return f;
}
/// The argument as printf receives it for print_spec<A>.
template <class A>
__device__ auto print_arg(const A& a) {
  using T = std::remove_cvref_t<A>;
  if constexpr (std::is_same_v<T, bool> || is_char_v<T>) return static_cast<int>(a);
  else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    if constexpr (sizeof(T) <= 4) return static_cast<int>(a);
    else return static_cast<long long>(a);
  } else if constexpr (std::is_integral_v<T>) {
    if constexpr (sizeof(T) <= 4) return static_cast<unsigned>(a);
    else return static_cast<unsigned long long>(a);
  } else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(a);
  else {
    const auto p = +a;  // arrays decay
    using E = std::remove_cv_t<std::remove_pointer_t<std::decay_t<T> > >;
    if constexpr (is_char_v<E>) return reinterpret_cast<const char*>(p);
    else return static_cast<const void*>(p);
  }
}
#endif
/// One write of the arguments, with or without a newline after them; `name` is the function
/// called, for the error outside a kernel.
template <bool Newline, class... Args>
KI_DEVICE void print_out([[maybe_unused]] const char* name, const Args&... args) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    // One printf per call: device printf writes each call's output as one record.
    constexpr auto format = print_format<Newline, Args...>();
    KI_GPU_PRINTF(format.data(), print_arg(args)...);
    return;
  }
#endif
#if !KI_GPU_PASS
  // A device function: refused on the host outside any kernel (variadic, so no line to name).
  if (cpu::current == nullptr && !cpu::ka_running) [[unlikely]]
    cpu::outside_kernel(name);
  std::ostringstream os;
  (os << ... << args);
  if constexpr (Newline) os << '\n';
  print_line(os.str());
#endif
}
}  // namespace detail

/// Prints args followed by a newline, as one write (GPU: one printf).
template <class... Args>
KI_DEVICE void print(const Args&... args) {
  detail::print_out<true>("print", args...);
}

/// Prints args without ending the line, as one write (GPU: one printf); a "\n" among them ends
/// it. Several calls of one work-item build one line (ki::print_inline("x = ", x);
/// ki::print_inline(", y = ", y, "\n")), but another work-item's output may come between them:
/// a line printed in one call never interleaves with other output. (ki::ka::print is the same
/// function under KA's name.)
template <class... Args>
KI_DEVICE void print_inline(const Args&... args) {
  detail::print_out<false>("print_inline", args...);
}

namespace ka {
/// The KA layer's @print: args without an implied newline (a "\n" among them ends the line), as
/// one write (GPU: one printf). Lines of work-items that print a line in one call never
/// interleave; a line printed in several calls may.
template <class... Args>
KI_DEVICE void print(const Args&... args) {
  ki::detail::print_out<false>("ka::print", args...);
}
}  // namespace ka

}  // namespace ki

#include <ki/detail/public_end.hpp>
