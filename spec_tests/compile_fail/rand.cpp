// Compiled by the compile/rand_* tests (spec_tests/CMakeLists.txt): ki::rand of a supported type
// compiles (case 0); of another type it must not, with a message naming the supported ones
// (Metal: "The supported types are Int32, UInt32, Int64, UInt64, Float16 and Float32").
#include <cstdint>

#include <ki/rand.hpp>
#include <ki/span.hpp>

void f(ki::span<double> y) {
#if KI_CASE_0
  y[0] = ki::rand<double>() + ki::rand<float>() + ki::rand<std::int64_t>() + ki::rand<std::uint32_t>();
  ki::seed(1);
  y[1] = ki::rand_value<double>(1, 2, 3);
#elif KI_CASE_int16
  y[0] = ki::rand<std::int16_t>();
#elif KI_CASE_bool
  y[0] = ki::rand<bool>();
#endif
  (void)y;
}
