// LU decomposition in one work-group, the inner step of Rodinia's "lud": a 16 x 16 matrix in
// local memory, one work-item per row. At pivot k the rows below it are eliminated: the masked
// phase `if (t > k)` of a GPU kernel, written as a phase over just those work-items,
// g.items(ki::ka::local_ids{.first = k + 1}, f) (docs/ka-layer.md). Four matrices, one per
// work-group, each checked on the host: L U = A.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"

#include <ki/ka.hpp>

namespace {
constexpr std::int64_t n = 16;

/// a: matrices of n x n, row-major, one per work-group; replaced by L (below the diagonal, its
/// unit diagonal implied) and U (on and above it), without pivoting.
struct lu {
  template <class G>
  void operator()(G& g, ki::span<float> a) const {
    auto m = g.template localmem<float, n, n>([] {});
    const std::int64_t base = g.group_linear() * n * n;
    g.items([&](auto i) {  // work-item t loads row t
      const std::int64_t t = i.local_linear();
      for (std::int64_t j = 0; j < n; ++j) m(t, j) = a[base + t * n + j];
    });
    for (std::int64_t k = 0; k + 1 < n; ++k) {
      g.synchronize();
      g.items(ki::ka::local_ids{.first = k + 1}, [&](auto i) {  // the rows below the pivot
        const std::int64_t t = i.local_linear();
        const float l = m(t, k) / m(k, k);
        m(t, k) = l;
        for (std::int64_t j = k + 1; j < n; ++j) m(t, j) -= l * m(k, j);
      });
    }
    g.synchronize();
    g.items([&](auto i) {
      const std::int64_t t = i.local_linear();
      for (std::int64_t j = 0; j < n; ++j) a[base + t * n + j] = m(t, j);
    });
  }
};
}  // namespace

template <ki::backend B>
bool run(const B& backend) {
  constexpr std::int64_t matrices = 4;
  std::vector<float> a(static_cast<std::size_t>(matrices * n * n));
  for (std::int64_t q = 0; q < matrices; ++q)  // diagonally dominant: no pivoting needed
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < n; ++c)
        a[static_cast<std::size_t>(q * n * n + r * n + c)] =
            r == c ? 4.0f * n : static_cast<float>((r * 7 + c * 3 + q) % 11) - 5.0f;

  auto d = ki::to_device(backend, a);
  ki::ka::kernel(backend, lu{}, ki::ka::groupsize<n>, matrices * n)(d);
  const auto f = ki::to_host(backend, d);

  // L U, multiplied out on the host, against A.
  float worst = 0;
  for (std::int64_t q = 0; q < matrices; ++q)
    for (std::int64_t r = 0; r < n; ++r)
      for (std::int64_t c = 0; c < n; ++c) {
        float s = 0;
        for (std::int64_t k = 0; k <= std::min(r, c); ++k) {
          const float l = k == r ? 1.0f : f[static_cast<std::size_t>(q * n * n + r * n + k)];
          s += l * f[static_cast<std::size_t>(q * n * n + k * n + c)];
        }
        const auto at = static_cast<std::size_t>(q * n * n + r * n + c);
        worst = std::max(worst, std::abs(s - a[at]) / (std::abs(a[at]) + 1.0f));
      }
  return ki_example::report("ka_lu", worst <= 1e-5f,
                            std::to_string(matrices) + " matrices of " + std::to_string(n) + " x " + std::to_string(n) +
                                ", phases over the rows below each pivot: largest relative error of L U " +
                                std::to_string(worst));
}

KI_EXAMPLE_MAIN(run)
