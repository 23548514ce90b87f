// Spec (kernelabstractions-writing-kernels.txt, kernelabstractions-api.txt): the KA layer's
// kernels — every example of the texts with the output printed there (0-based where they print
// indices), and a test per construct and per error. Tag [ka].
//
// Compiled for the CPU backends (reference, simd_cpu); the GPU pass of the KA layer is not built
// yet (docs/ka-layer.md, "What is not there yet"), so the CUDA and HIP suites leave this file out
// (spec_tests/CMakeLists.txt).
#include <cstdint>
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "backends.hpp"

namespace ki_spec_ka {
using i64 = std::int64_t;

// saxpy!(a, @Const(X), Y): Y[I] = a * X[I] + Y[I].
struct saxpy {
  template <class G>
  void operator()(G& g, double a, ki::span<const double> x, ki::span<double> y) const {
    g.items([&](auto i) {
      const i64 k = i.global_linear();
      y[k] = a * x[k] + y[k];
    });
  }
};

// fill_diagonal!(A, val): A[I] = val where I[1] == I[2] (@index(Global, Cartesian)).
struct fill_diagonal {
  template <class G>
  void operator()(G& g, ki::span<double> a, double val) const {
    g.items([&](auto i) {
      const auto c = i.global();
      if (c.x == c.y) a(c.x, c.y) = val;
    });
  }
};

// linear_example!(A): A[I] = g + l with I, g, l the Global, Group and Local linear indices.
struct linear_example {
  template <class G>
  void operator()(G& g, ki::span<double> a) const {
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(i.group_linear() + i.local_linear()); });
  }
};

// scale!(A, factor): N = @uniform prod(@groupsize()); lmem = @localmem Float32 (N,) (the static
// size 8 of the launch below); lmem[i] = factor; @synchronize(); A[I] *= lmem[i].
struct scale {
  template <class G>
  void operator()(G& g, ki::span<double> a, float factor) const {
    const i64 n = g.groupsize_linear();  // @uniform
    auto lmem = g.template localmem<float, 8>([] {});
    g.items([&](auto i) { lmem[i.local_linear() % n] = factor; });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = a[i.global_linear()] * lmem[i.local_linear()]; });
  }
};

// reverse_block!(A): buf[i] = i; @synchronize(); A[I] = buf[N - 1 - i] (0-based).
struct reverse_block {
  template <class G>
  void operator()(G& g, ki::span<double> a) const {
    const i64 n = g.groupsize_linear();
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear(); });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(buf[n - 1 - i.local_linear()]); });
  }
};

template <class B>
ki::array<double, B> iota_double(const B& b, i64 n, double first = 1.0) {
  std::vector<double> h(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = first + static_cast<double>(k);
  return ki::to_device(b, h);
}

}  // namespace ki_spec_ka

using namespace ki_spec_ka;

TEMPLATE_LIST_TEST_CASE("ka: saxpy! with @Const, a static work-group size and ndrange (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto x = iota_double(b, 8);
  auto y = ki_test::filled<double>(b, 8, 1.0);
  ki::ka::kernel k(b, saxpy{}, 8, 8);
  k(2.0, x, y);
  ki::synchronize(b);
  CHECK(ki_test::read(b, y) == std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17});
}

TEMPLATE_LIST_TEST_CASE("ka: fill_diagonal! with @index(Global, Cartesian) (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::allocate<double>(b, {4, 4});
  std::vector<double> h(16);
  for (int k = 0; k < 16; ++k) h[static_cast<std::size_t>(k)] = 1.0 + k;  // A = reshape(1:16, 4, 4)
  ki::copyto(b, a, h);
  ki::ka::kernel(b, fill_diagonal{}, 4, {4, 4})(a, 42.0);
  ki::synchronize(b);
  CHECK(ki_test::read(b, a) == std::vector<double>{42, 2, 3, 4, 5, 42, 7, 8, 9, 10, 42, 12, 13, 14, 15, 42});
}

TEMPLATE_LIST_TEST_CASE("ka: linear_example! with the Global, Group and Local linear indices (0-based)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, linear_example{}, 4, 16)(a);
  ki::synchronize(b);
  // The text prints g + l for 1-based g and l (2, 3, 4, 5, 3, ...); 0-based it is 2 less.
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(i / 4 + i % 4); }, "A");
}

TEMPLATE_LIST_TEST_CASE("ka: scale! with @groupsize, @uniform, @localmem and @synchronize (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, scale{}, 8, 16)(a, 2.0f);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return 2.0 * static_cast<double>(i + 1); }, "A");
}

TEMPLATE_LIST_TEST_CASE("ka: reverse_block! reverses each work-group through local memory (0-based output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, reverse_block{}, 8, 16)(a);
  ki::synchronize(b);
  // The text prints 8, 7, ..., 1 twice (1-based local indices).
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(7 - i % 8); }, "A");
}
