// Compiled by the compile/atomic_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>
// defined: each case but 0 must fail to compile, with ki/atomic.hpp's static_assert message.
#include <ki/atomic.hpp>
#include <ki/ka/local_array.hpp>

void f(int* i, float* x, double* y) {
  // The KA layer's local memory takes the same operations by index, with the same rules.
  const ki::ka::local_array<int, 4> li(i);
  const ki::ka::local_array<float, 4> lx(x);
#if KI_CASE_0
  (void)li.atomic_fetch_and(0, 1);
  (void)li.atomic_fetch_max(0, 1);
  (void)lx.atomic_fetch_add(0, 1.0f);
  (void)ki::atomic_fetch_and(i, 1);
  (void)ki::atomic_fetch_or(i, 1);
  (void)ki::atomic_fetch_xor(i, 1);
  (void)ki::atomic_fetch_min(i, 1);
  (void)ki::atomic_fetch_max(i, 1);
  (void)ki::atomic_update(x, [](float v) { return v < 1.0f ? v : 1.0f; });  // the way for float
#elif KI_CASE_fetch_and_float
  (void)ki::atomic_fetch_and(x, 1.0f);
#elif KI_CASE_fetch_or_double
  (void)ki::atomic_fetch_or(y, 1.0);
#elif KI_CASE_fetch_xor_float
  (void)ki::atomic_fetch_xor(x, 1.0f);
#elif KI_CASE_fetch_min_float
  (void)ki::atomic_fetch_min(x, 1.0f);
#elif KI_CASE_fetch_max_double
  (void)ki::atomic_fetch_max(y, 1.0);
#elif KI_CASE_ka_fetch_or_float
  (void)lx.atomic_fetch_or(0, 1.0f);
#elif KI_CASE_ka_fetch_min_float
  (void)lx.atomic_fetch_min(0, 1.0f);
#endif
  (void)i, (void)x, (void)y, (void)li, (void)lx;
}
