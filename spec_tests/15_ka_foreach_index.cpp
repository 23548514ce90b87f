// Spec (kernelabstractions-api.txt): the KA layer's foreach_index — over the indices of arrays
// (all on one device), over an index space as it is, and unchecked; the checks of the phases
// after an unchecked one. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
// scale!(y, x) of the text: y[i] = 2 * x[i] + 1 for every index of eachindex(y, x).
struct scale_body {
  ki::span<double> y;
  ki::span<const double> x;
  KI_DEVICE void operator()(i64 i) const { y[i] = 2 * x[i] + 1; }
};
// smooth!(B, A) of the text, on the interior of an nx x ny matrix (x fastest).
struct smooth_body {
  ki::span<double> out;
  ki::span<const double> a;
  i64 nx;
  KI_DEVICE void operator()(ki::xyz<i64> c) const {
    const auto at = [&](i64 x, i64 y) { return a[x + nx * y]; };
    out[c.x + nx * c.y] = (at(c.x - 1, c.y) + at(c.x + 1, c.y) + at(c.x, c.y - 1) + at(c.x, c.y + 1)) / 4;
  }
};
struct count_body {
  ki::span<i64> hits;
  i64 first;
  KI_DEVICE void operator()(i64 i) const { hits[i - first] += 1; }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(f, arrays...) runs f once per index of the arrays (scale!)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto x = iota_double(b, 1000, 0.0);
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(scale_body{ki::argconvert(b, y), ki::argconvert(b, x)}, y, x);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, y), [](i64 i) { return 2.0 * static_cast<double>(i) + 1; }, "y");
  // The index must be valid for every array.
  auto short_x = iota_double(b, 999);
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] {
               ki::ka::foreach_index(scale_body{ki::argconvert(b, y), ki::argconvert(b, short_x)}, y, short_x);
             }),
             ki_test::ContainsSubstring("999") && ki_test::ContainsSubstring("1000"));
}

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(backend, space, f) gives the space's indices as they are (smooth!)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const i64 nx = 7, ny = 5;
  std::vector<double> h(static_cast<std::size_t>(nx * ny));
  for (i64 k = 0; k < nx * ny; ++k) h[static_cast<std::size_t>(k)] = static_cast<double>(k * k % 11);
  auto a = ki::to_device(b, h);
  auto out = ki::zeros<double>(b, nx * ny);
  // The interior: CartesianIndices((2:size(A,1)-1, 2:size(A,2)-1)), 0-based [1, n - 1).
  ki::ka::foreach_index(b, ki::ka::ndrange{ki::range{1, nx - 1}, ki::range{1, ny - 1}},
                        smooth_body{ki::argconvert(b, out), ki::argconvert(b, a), nx});
  ki::synchronize(b);
  const auto got = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const auto at = [&](i64 u, i64 v) { return h[static_cast<std::size_t>(u + nx * v)]; };
      const bool interior = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
      const double want = interior ? (at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1)) / 4 : 0.0;
      bad += got[static_cast<std::size_t>(x + nx * y)] != want;
    }
  CHECK(bad == 0);
  // A 1-D range: the indices as they are, from its first.
  auto hits = ki::zeros<i64>(b, 10);
  ki::ka::foreach_index(b, ki::range{-3, 7}, count_body{ki::argconvert(b, hits), -3});
  ki::synchronize(b);
  CHECK(ki_test::read(b, hits) == std::vector<i64>(10, 1));
}

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(b, space, f, ki::ka::unchecked) runs what the checked form runs", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  // 1000: three whole groups of 256 and a partial one.
  auto x = iota_double(b, 1000, 0.0);
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, scale_body{ki::argconvert(b, y), ki::argconvert(b, x)}, ki::ka::unchecked);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, y), [](i64 i) { return 2.0 * static_cast<double>(i) + 1; }, "y");
  auto hits = ki::zeros<i64>(b, 10);
  ki::ka::foreach_index(b, ki::range{-3, 7}, count_body{ki::argconvert(b, hits), -3}, ki::ka::unchecked);
  ki::synchronize(b);
  CHECK(ki_test::read(b, hits) == std::vector<i64>(10, 1));
  const i64 nx = 7, ny = 5;
  auto a = iota_double(b, nx * ny);
  auto out = ki::zeros<double>(b, nx * ny);
  ki::ka::foreach_index(b, ki::ka::ndrange{ki::range{1, nx - 1}, ki::range{1, ny - 1}},
                        smooth_body{ki::argconvert(b, out), ki::argconvert(b, a), nx}, ki::ka::unchecked);
  ki::synchronize(b);
  const auto got = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 j = 0; j < ny; ++j)
    for (i64 i = 0; i < nx; ++i) {
      const bool interior = i > 0 && i < nx - 1 && j > 0 && j < ny - 1;
      // iota from 1: the mean of the four neighbours of element k is k + 1.
      bad += got[static_cast<std::size_t>(i + nx * j)] != (interior ? static_cast<double>(i + nx * j + 1) : 0.0);
    }
  CHECK(bad == 0);
}

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
struct throws_at {
  ki::span<double> y;
  i64 bad;
  void operator()(i64 i) const {
    if (i == bad) throw std::runtime_error("boom");
    y[i] = 1;
  }
};
struct one_past {
  static constexpr unsigned line = __LINE__ + 2;
  ki::span<double> y;
  void operator()(i64 i) const { y[i + 1] = 1; }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: an unchecked phase that throws leaves the checks of later ones on", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, throws_at{ki::argconvert(b, y), 700}, ki::ka::unchecked);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("threw boom"));
  ki::ka::foreach_index(b, 1000, one_past{ki::argconvert(b, y)});
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("index 1000 is out of bounds at 15_ka_foreach_index.cpp:" +
                                        std::to_string(one_past::line)));
}
#endif

#if KI_TEST_BACKEND_REFERENCE
TEST_CASE("ka: the reference backend keeps the checks of an unchecked phase", "[ka]") {
  ki::reference::backend b{};
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, one_past{ki::argconvert(b, y)}, ki::ka::unchecked);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("index 1000 is out of bounds at 15_ka_foreach_index.cpp:" +
                                        std::to_string(one_past::line)) &&
                 ki_test::ContainsSubstring("work-item (231, 0, 0)"));
}
#endif

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(f, arrays...) refuses arrays on different devices, naming them", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make_multi_device<TestType>();
  const int saved = ki::device(b);
  ki::set_device(b, 0);
  auto y = ki::zeros<i64>(b, 8);
  ki::set_device(b, 1);
  auto x = ki::zeros<i64>(b, 8);
  ki::set_device(b, 0);
  const std::string m = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::ka::foreach_index(count_body{ki::argconvert(b, y), 0}, y, x);
  });
  ki::set_device(b, saved);
  CHECK_THAT(m, ki_test::ContainsSubstring("array 1 is on device 1, array 0 on device 0"));
  CHECK(ki_test::read(b, y) == std::vector<i64>(8, 0));  // nothing ran
}
