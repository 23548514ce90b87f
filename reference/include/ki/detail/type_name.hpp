// Private: a type's name without RTTI (typeid(_Float16) does not link with GCC 12, and
// kernels are often compiled without RTTI), and the name diagnostics give an unnamed kernel.
#pragma once
#include <ki/detail/private.hpp>
#include <array>
#include <cstddef>
#include <string>
#include <string_view>

namespace ki::detail {

/// The compiler's spelling of T, cut from the signature of a function template on it. GCC:
/// "constexpr auto ki::detail::spelled_type_name() [with T = int]"; Clang:
/// "auto ki::detail::spelled_type_name() [T = int]"; MSVC: "auto __cdecl
/// ki::detail::spelled_type_name<int>(void)". Empty on another compiler.
template <class T>
constexpr auto spelled_type_name() {
#if defined(__GNUC__) || defined(__clang__)
  constexpr std::string_view f = __PRETTY_FUNCTION__;
  constexpr std::string_view key = "T = ";
  constexpr std::size_t b = f.find(key) + key.size();
  constexpr std::size_t e = f.rfind(']');  // the type itself can contain ']' (int [3])
  return f.substr(b, e - b);
#elif defined(_MSC_VER)
  constexpr std::string_view f = __FUNCSIG__;
  constexpr std::string_view key = "spelled_type_name<";
  constexpr std::size_t b = f.find(key) + key.size();
  constexpr std::size_t e = f.rfind(">(void)");
  return f.substr(b, e - b);
#else
  return std::string_view{};
#endif
}

/// T's name as a null-terminated string with static storage (one address per type).
template <class T>
struct type_name_storage {
  static constexpr std::string_view view = spelled_type_name<T>();
  static constexpr std::array<char, view.size() + 1> chars = [] {
    std::array<char, view.size() + 1> a{};
    for (std::size_t i = 0; i < view.size(); ++i) a[i] = view[i];
    return a;
  }();
};

/// T's name as the compiler spells it ("int", "_Float16", "ns::vadd"), no RTTI needed.
template <class T>
constexpr const char* type_name() {
  return type_name_storage<T>::chars.data();
}

/// A readable form of a spelled type name: without "{anonymous}::" (or Clang's and MSVC's
/// spelling of it); a lambda as
/// "lambda in <enclosing function>" (GCC: "ns::f(int)::<lambda(ki::span<int>)>", Clang:
/// "(lambda at file.cpp:12:3)" -> "lambda at file.cpp:12:3").
inline std::string readable_type_name(std::string_view spelled) {
  std::string s(spelled);
  for (const std::string_view anon : {std::string_view("{anonymous}::"), std::string_view("(anonymous namespace)::"),
                                      std::string_view("`anonymous namespace'::")})
    for (auto p = s.find(anon); p != std::string::npos; p = s.find(anon)) s.erase(p, anon.size());
  if (s.size() > 2 && s.front() == '(' && s.back() == ')' && s.rfind("(lambda ", 0) == 0) {
    // Clang: "(lambda at /path/file.cpp:12:3)": the file's name is enough.
    std::string in = s.substr(1, s.size() - 2);
    const auto at = in.find(" at ");
    const auto slash = in.find_last_of("/\\");
    if (at != std::string::npos && slash != std::string::npos && slash > at) in.erase(at + 4, slash - at - 3);
    return in;
  }
  const auto lam = s.rfind("::<lambda(");  // GCC
  if (lam != std::string::npos) {
    std::string fn = s.substr(0, lam);
    // The enclosing function's parameter list: from its last top-level '('.
    int depth = 0;
    for (std::size_t i = fn.size(); i-- > 0;) {
      if (fn[i] == ')') ++depth;
      if (fn[i] == '(' && --depth == 0) {
        fn.erase(i);
        break;
      }
    }
    return "lambda in " + fn;
  }
  return s;
}

/// The name diagnostics give a kernel of type F: `name` if given, else F's readable name.
template <class F>
std::string kernel_display_name(const std::string& name) {
  if (!name.empty()) return name;
  const std::string n = readable_type_name(spelled_type_name<F>());
  return n.empty() ? std::string("kernel") : n;
}

}  // namespace ki::detail
