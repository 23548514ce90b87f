// The KA layer's spec tests (spec_tests/15_ka_*.cpp, one file per construct): what they share —
// the includes, KI_KA_TEST_CPU (the tests of what only a CPU backend reports: an exception or a
// bad index in a phase, a KernelInterface function in a KA kernel, the oracle's phase order; a GPU
// kernel cannot throw, and a trap would end the GPU context), and the kernels and helpers that
// tests in several files use.
#pragma once

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <ki/ka.hpp>

#include "backends.hpp"

#define KI_KA_TEST_CPU !(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP)

namespace ki_spec_ka {
using i64 = std::int64_t;

// saxpy!(a, @Const(X), Y): Y[I] = a * X[I] + Y[I] (a: the text's Float64, or a float where the
// test is not about it: a device without float64 refuses a double argument).
struct saxpy {
  template <class G, class A>
  KI_DEVICE void operator()(G& g, A a, ki::span<const double> x, ki::span<double> y) const {
    g.items([&](auto i) {
      const i64 k = i.global_linear();
      y[k] = a * x[k] + y[k];
    });
  }
};

// linear_example!(A): A[I] = g + l with I, g, l the Global, Group and Local linear indices.
struct linear_example {
  static constexpr unsigned line = __LINE__ + 3;  // the access
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a) const {
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(i.group_linear() + i.local_linear()); });
  }
};

template <class B>
ki::array<double, B> iota_double(const B& b, i64 n, double first = 1.0) {
  std::vector<double> h(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = first + static_cast<double>(k);
  return ki::to_device(b, h);
}

// Counts the item statements that run, and marks the groups whose group-level code ran (padding
// items run the latter but not the former; how many times group-level code runs per group is
// the backend's: once on a CPU, once per thread on a GPU).
struct count_statements {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> items, ki::span<i64> groups) const {
    groups[g.group_linear()] = 1;
    g.items([&](auto i) { items[i.global_linear()] += 1; });
  }
};

}  // namespace ki_spec_ka
