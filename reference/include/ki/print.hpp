// print(args...): print one line from a kernel (the spec's _print / @print).
//
// On CPU backends the arguments are formatted with operator<< into one string and written with
// a single locked write, so lines of different work-items never interleave.
#pragma once
#include <ki/macros.hpp>
#if !KI_GPU_PASS
#include <cstdio>
#include <mutex>
#include <sstream>
#include <string>
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
template <class... A>
inline constexpr bool always_false = false;
}  // namespace detail

template <class... Args>
KI_DEVICE void print(const Args&... args) {
#if KI_GPU_PASS
  static_assert(detail::always_false<Args...>,
                "ki::print is not available in GPU code yet: it arrives with the offload backend");
#else
  std::ostringstream os;
  (os << ... << args);
  os << '\n';
  detail::print_line(os.str());
#endif
}

}  // namespace ki
