// Compiled by the compile/ka_foreach_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>:
// case 0 must compile; the other passes foreach_index arrays of two backends, which must not
// ("all on one backend": the spec's foreach_index(f, y, x)).
#include <ki/ka.hpp>
#include <ki/reference.hpp>
#include <ki/simd_cpu.hpp>

void scale(ki::array<double, ki::simd_cpu::backend>& y, ki::array<double, ki::simd_cpu::backend>& x,
           ki::array<double, ki::reference::backend>& r) {
  const auto body = [](std::int64_t) {};
#if KI_CASE_0
  ki::ka::foreach_index(body, y, x);
  (void)r;
#elif KI_CASE_two_backends
  ki::ka::foreach_index(body, y, r);
  (void)x;
#endif
}
