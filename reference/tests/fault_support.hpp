// What the fault suite's files share (faults.cpp, geometry_fuzz.cpp): the CPU backends they run
// on, and the kernel error a launch must end with.
#pragma once
#include <cstdlib>
#include <tuple>

#include <catch2/catch_test_macros.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>
#if KI_FAULTS_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif

namespace ki_test::faults {
#if KI_FAULTS_SIMD_CPU
using cpu_backends = std::tuple<ki::reference::backend, ki::simd_cpu::backend>;
#else
using cpu_backends = std::tuple<ki::reference::backend>;
#endif

/// A correct launch in each layer: every work-item writes 1 to out[its global linear id].
struct ki_ones {
  void operator()(ki::span<int> out) const { out[ki::get_global_id().x] = 1; }
};
struct ka_ones {
  template <class G>
  void operator()(G& g, ki::span<int> out) const {
    g.items([&](auto i) { out[i.global_linear()] = 1; });
  }
};

/// The ki::kernel_error that synchronize(b) throws (the test fails if it throws none).
template <class B>
ki::kernel_error failure_of(const B& b) {
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    return e;
  }
  FAIL("no error");
  std::abort();  // (not reached: FAIL throws)
}
}  // namespace ki_test::faults
