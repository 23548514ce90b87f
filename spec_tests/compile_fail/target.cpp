// Compiled by the compile/target_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>
// defined: "unsupported operations can be placed in branches that are compiled out ... without
// the check, compilation fails with static assertion failed". Cases 0 and default compile;
// the others must fail with ki/atomic.hpp's message naming the feature.
#include <cstdint>

#include <ki/atomic.hpp>
#include <ki/target.hpp>

/// The text's update_max!: a 64-bit atomic max where the target has 64-bit atomics, a fallback
/// (here: a 32-bit CAS on the low word, enough for the test's values) where it does not.
void update_max(std::uint64_t* a, std::uint64_t v, double* d) {
#if KI_CASE_0 || KI_CASE_default
  if constexpr (ki::target.atomics64) {
    (void)ki::atomic_fetch_max(a, v);
  } else {
    (void)ki::atomic_fetch_max(reinterpret_cast<std::uint32_t*>(a), static_cast<std::uint32_t>(v));
  }
  if constexpr (ki::target.float64) (void)ki::atomic_fetch_add(d, 1.0);
#if KI_CASE_default
  static_assert(ki::target.atomics64 && ki::target.float64, "the default CPU target has both");
#else
  static_assert(!ki::target.atomics64 && !ki::target.float64, "the macros turn them off");
#endif
#elif KI_CASE_atomic64
  (void)ki::atomic_fetch_max(a, v);
#elif KI_CASE_atomic64_signed
  (void)ki::atomic_fetch_add(reinterpret_cast<std::int64_t*>(a), std::int64_t{1});
#elif KI_CASE_float64
  (void)ki::atomic_fetch_add(d, 1.0);
#endif
  (void)a, (void)v, (void)d;
}
