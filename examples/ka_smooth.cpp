// smooth! of kernelabstractions-writing-kernels.txt: foreach_index over the interior of a matrix
// (an index space of ranges, 0-based [1, n - 1) in each dimension), each point the mean of its
// four neighbours; and the same interior as an offset ndrange of a KA kernel.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

constexpr std::int64_t nx = 6, ny = 5;

struct smooth_point {
  ki::span<double> b;
  ki::span<const double> a;
  void operator()(ki::xyz<std::int64_t> c) const {
    const auto at = [&](std::int64_t x, std::int64_t y) { return a[x + nx * y]; };
    b[c.x + nx * c.y] = (at(c.x - 1, c.y) + at(c.x + 1, c.y) + at(c.x, c.y - 1) + at(c.x, c.y + 1)) / 4;
  }
};

template <ki::backend B>
bool run(const B& backend) {
  std::vector<double> h(nx * ny);
  for (std::int64_t y = 0; y < ny; ++y)
    for (std::int64_t x = 0; x < nx; ++x) h[x + nx * y] = double(x * x + y);  // mean of neighbours: x^2 + y + 1/2
  auto a = ki::to_device(backend, h);
  auto b = ki::zeros<double>(backend, nx * ny);
  const ki::ka::ndrange interior{ki::range{1, nx - 1}, ki::range{1, ny - 1}};
  ki::ka::foreach_index(backend, interior,
                        smooth_point{ki::argconvert(backend, b), ki::argconvert(backend, std::as_const(a))});
  const auto r = ki::to_host(backend, b);
  bool ok = true;
  std::string row;
  for (std::int64_t y = 0; y < ny; ++y)
    for (std::int64_t x = 0; x < nx; ++x) {
      const bool inside = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
      const double want = inside ? double(x * x + y) + 0.5 : 0.0;
      ok = ok && std::abs(r[x + nx * y] - want) < 1e-12;
      if (y == 2) row += (x ? " " : "") + std::to_string(r[x + nx * y]).substr(0, 5);
    }
  return ki_example::report("ka_smooth", ok, "row 2 = [" + row + "]");
}

KI_EXAMPLE_MAIN(run)
