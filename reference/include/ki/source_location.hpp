// ki::source_location: where a sync point (barrier, collective) or localmemory call is.
//
// A trivially copyable struct filled by compiler builtins rather than std::source_location,
// because it must also be usable as a default argument of __host__ __device__ functions under
// nvcc/hipcc. Sync points carry it so that the oracle can say "items 0–31 wait at k.cpp:42".
#pragma once
#include <ki/macros.hpp>

namespace ki {

#if defined(__has_builtin)
#if __has_builtin(__builtin_COLUMN)
#define KI_DETAIL_COLUMN() __builtin_COLUMN()
#endif
#endif
#ifndef KI_DETAIL_COLUMN
#define KI_DETAIL_COLUMN() 0u  // GCC 12 has no __builtin_COLUMN: columns are 0 there
#endif

namespace detail {
/// The file name of a path, without its directories ("k.cpp" of "/src/k.cpp"): how errors name
/// a location's file.
KI_DEVICE constexpr const char* base_name(const char* path) noexcept {
  const char* f = path;
  for (const char* p = path; *p != '\0'; ++p)
    if (*p == '/') f = p + 1;
  return f;
}
}  // namespace detail

struct source_location {
  const char* file = "";
  unsigned line = 0;
  unsigned column = 0;

  KI_DEVICE static constexpr source_location current(const char* f = __builtin_FILE(), unsigned l = __builtin_LINE(),
                                                     unsigned c = KI_DETAIL_COLUMN()) noexcept {
    return {f, l, c};
  }
};

}  // namespace ki
