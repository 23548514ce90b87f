// Compiled by the compile/const_span_* tests (spec_tests/CMakeLists.txt): reading through a
// ki::const_span compiles (case 0); writing through it must not (Metal: Const "promises that it
// won't be modified during the kernel").
#include <cstdint>

#include <ki/const_span.hpp>

void f(ki::const_span<float> x, ki::span<float> y) {
#if KI_CASE_0
  y[0] = x[1] + x(0, 0);
  const ki::span<const float> s = x;
  y[1] = s[0];
#elif KI_CASE_write_index
  x[0] = 1.0f;
#elif KI_CASE_write_cartesian
  x(0, 0) = 1.0f;
#endif
  (void)x, (void)y;
}
