// srad: speckle-reducing anisotropic diffusion (Yu and Acton), the image filter of the Rodinia
// benchmark suite's "srad", as three KA kernels per iteration.
//
// Each iteration of the filter:
//   1. statistics: the image's sum and sum of squares (a grid-stride loop and @groupreduce, one
//      partial pair per work-group; the host adds the partials), from which the host computes
//      q0^2 = variance / mean^2, the speckle scale of this iteration;
//   2. coefficients: per pixel, the differences to its four neighbours (the edge pixel itself
//      outside the image) and the diffusion coefficient c in [0, 1] from them and q0^2;
//   3. update: per pixel, J += lambda / 4 * (the divergence of c times the differences), with
//      c of the pixel itself for north and west and of the south and east neighbours.
// Shared by examples/ka_srad.cpp (checked against host_filter) and ki_bench_simd_cpu (timed against
// the same loops in OpenMP).
#pragma once
#include <cmath>
#include <cstdint>
#include <algorithm>
#include <functional>
#include <utility>
#include <vector>

#include <ki/ka.hpp>

namespace ki_srad {

using i64 = std::int64_t;
constexpr i64 tile = 16;  // 16 x 16 work-groups for the per-pixel kernels

/// The image and the four differences and coefficient the update reads, nx x ny each, x fastest.
struct neighbours {
  i64 nx, ny;
  i64 west(i64 x) const { return x > 0 ? x - 1 : 0; }
  i64 east(i64 x) const { return x < nx - 1 ? x + 1 : nx - 1; }
  i64 north(i64 y) const { return y > 0 ? y - 1 : 0; }
  i64 south(i64 y) const { return y < ny - 1 ? y + 1 : ny - 1; }
};

/// q0^2 from the statistics of n pixels (the host's step between kernels 1 and 2).
inline float q0sqr(double sum, double sum2, i64 n) {
  const double mean = sum / static_cast<double>(n);
  const double var = sum2 / static_cast<double>(n) - mean * mean;
  return static_cast<float>(var / (mean * mean));
}

/// One pixel's differences (north, south, west, east) and coefficient. Written once, for the
/// kernel and the host loops alike.
struct coeff_out {
  float dn, ds, dw, de, c;
};
inline coeff_out coefficient(float j, float jn, float js, float jw, float je, float q0sqr) {
  coeff_out o{jn - j, js - j, jw - j, je - j, 0.0f};
  const float g2 = (o.dn * o.dn + o.ds * o.ds + o.dw * o.dw + o.de * o.de) / (j * j);
  const float l = (o.dn + o.ds + o.dw + o.de) / j;
  const float num = 0.5f * g2 - (1.0f / 16.0f) * (l * l);
  float den = 1.0f + 0.25f * l;
  const float qsqr = num / (den * den);
  den = (qsqr - q0sqr) / (q0sqr * (1.0f + q0sqr));
  const float c = 1.0f / (1.0f + den);
  o.c = c < 0.0f ? 0.0f : c > 1.0f ? 1.0f : c;
  return o;
}
/// The pixel's new value from its differences, its own c, its south and east neighbours' c.
inline float update(float j, const coeff_out& d, float cs, float ce, float lambda) {
  const float div = d.c * d.dn + cs * d.ds + d.c * d.dw + ce * d.de;
  return j + 0.25f * lambda * div;
}

/// Kernel 1: partial[2 g] and partial[2 g + 1] = work-group g's sum and sum of squares of img.
struct statistics {
  template <class G>
  void operator()(G& g, ki::span<double> partial, ki::span<const float> img, i64 n) const {
    auto acc = g.template private_<double, 2>();
    g.items([&](auto i) { acc[i][0] = acc[i][1] = 0.0; });
    g.grid_stride(n, [&](auto i, i64 k) {
      const double v = img[k];
      acc[i][0] += v;
      acc[i][1] += v * v;
    });
    const double s = g.reduce(std::plus<>(), 0.0, [&](auto i) { return acc[i][0]; });
    const double s2 = g.reduce(std::plus<>(), 0.0, [&](auto i) { return acc[i][1]; });
    g.items(1, [&](auto) {
      partial[2 * g.group_linear()] = s;
      partial[2 * g.group_linear() + 1] = s2;
    });
  }
};
constexpr i64 stat_groups = 64, stat_items = 256;

/// Kernel 2: the differences and coefficient of every pixel (ndrange {nx, ny}).
struct coefficients {
  template <class G>
  void operator()(G& g, ki::span<float> dn, ki::span<float> ds, ki::span<float> dw, ki::span<float> de,
                  ki::span<float> c, ki::span<const float> img, i64 nx, i64 ny, float q0sqr) const {
    const neighbours nb{nx, ny};
    g.items([&](auto i) {
      const auto p = i.global();
      const i64 k = p.x + nx * p.y;
      const auto o = coefficient(img[k], img[p.x + nx * nb.north(p.y)], img[p.x + nx * nb.south(p.y)],
                                 img[nb.west(p.x) + nx * p.y], img[nb.east(p.x) + nx * p.y], q0sqr);
      dn[k] = o.dn;
      ds[k] = o.ds;
      dw[k] = o.dw;
      de[k] = o.de;
      c[k] = o.c;
    });
  }
};

/// Kernel 3: every pixel's new value (ndrange {nx, ny}).
struct diffuse {
  template <class G>
  void operator()(G& g, ki::span<float> img, ki::span<const float> dn, ki::span<const float> ds,
                  ki::span<const float> dw, ki::span<const float> de, ki::span<const float> c, i64 nx, i64 ny,
                  float lambda) const {
    const neighbours nb{nx, ny};
    g.items([&](auto i) {
      const auto p = i.global();
      const i64 k = p.x + nx * p.y;
      const coeff_out d{dn[k], ds[k], dw[k], de[k], c[k]};
      img[k] = update(img[k], d, c[p.x + nx * nb.south(p.y)], c[nb.east(p.x) + nx * p.y], lambda);
    });
  }
};

/// The device arrays of one filter run on backend B (the image img, nx x ny, x fastest).
template <ki::backend B>
struct filter {
  B backend;
  i64 nx, ny;
  ki::array<float, B> img, dn, ds, dw, de, c;
  ki::array<double, B> partial;

  filter(const B& b, i64 nx_, i64 ny_)
      : backend(b),
        nx(nx_),
        ny(ny_),
        img(ki::zeros<float>(b, nx * ny)),
        dn(ki::zeros<float>(b, nx * ny)),
        ds(ki::zeros<float>(b, nx * ny)),
        dw(ki::zeros<float>(b, nx * ny)),
        de(ki::zeros<float>(b, nx * ny)),
        c(ki::zeros<float>(b, nx * ny)),
        partial(ki::zeros<double>(b, 2 * stat_groups)) {}

  /// `iterations` iterations of the filter on img: asynchronous but for the statistics, which the
  /// host reads once per iteration (ki::to_host waits for them).
  void run(int iterations, float lambda) {
    const ki::ka::kernel stats(backend, statistics{}, ki::ka::groupsize<stat_items>, stat_groups * stat_items);
    const ki::ka::kernel coeffs(backend, coefficients{}, ki::ka::groupsize<tile, tile>, ki::ka::ndrange{nx, ny});
    const ki::ka::kernel step(backend, diffuse{}, ki::ka::groupsize<tile, tile>, ki::ka::ndrange{nx, ny});
    for (int it = 0; it < iterations; ++it) {
      stats(partial, std::as_const(img), nx * ny);
      const auto part = ki::to_host(backend, partial);
      double s = 0, s2 = 0;
      for (i64 g = 0; g < stat_groups; ++g) {
        s += part[2 * g];
        s2 += part[2 * g + 1];
      }
      coeffs(dn, ds, dw, de, c, std::as_const(img), nx, ny, q0sqr(s, s2, nx * ny));
      step(img, std::as_const(dn), std::as_const(ds), std::as_const(dw), std::as_const(de), std::as_const(c), nx, ny,
           lambda);
    }
  }
};

/// The same filter on the host, in the same arrays: each step over rows [y0, y1) (the OpenMP
/// baseline runs them per thread); statistics_rows adds rows [y0, y1) into sum and sum2.
inline void statistics_rows(const float* img, i64 nx, i64 y0, i64 y1, double& sum, double& sum2) {
  for (i64 k = nx * y0; k < nx * y1; ++k) {
    const double v = img[k];
    sum += v;
    sum2 += v * v;
  }
}
inline void coefficient_rows(float* dn, float* ds, float* dw, float* de, float* c, const float* img, i64 nx, i64 ny,
                             float q0sqr, i64 y0, i64 y1) {
  const neighbours nb{nx, ny};
  for (i64 y = y0; y < y1; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const i64 k = x + nx * y;
      const auto o = coefficient(img[k], img[x + nx * nb.north(y)], img[x + nx * nb.south(y)], img[nb.west(x) + nx * y],
                                 img[nb.east(x) + nx * y], q0sqr);
      dn[k] = o.dn;
      ds[k] = o.ds;
      dw[k] = o.dw;
      de[k] = o.de;
      c[k] = o.c;
    }
}
inline void update_rows(float* img, const float* dn, const float* ds, const float* dw, const float* de, const float* c,
                        i64 nx, i64 ny, float lambda, i64 y0, i64 y1) {
  const neighbours nb{nx, ny};
  for (i64 y = y0; y < y1; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const i64 k = x + nx * y;
      img[k] =
          update(img[k], {dn[k], ds[k], dw[k], de[k], c[k]}, c[x + nx * nb.south(y)], c[nb.east(x) + nx * y], lambda);
    }
}
/// The host's arrays of one filter run (the examples' reference and the OpenMP baseline).
struct host_filter {
  i64 nx, ny;
  std::vector<float> img, dn, ds, dw, de, c;
  host_filter(std::vector<float> image, i64 nx_, i64 ny_)
      : nx(nx_),
        ny(ny_),
        img(std::move(image)),
        dn(img.size()),
        ds(img.size()),
        dw(img.size()),
        de(img.size()),
        c(img.size()) {}
  /// One iteration's steps, each given as a function of (rows y0, y1) run over all rows.
  template <class Stats, class Rows>
  void run(int iterations, float lambda, Stats&& stats, Rows&& rows) {
    for (int it = 0; it < iterations; ++it) {
      const auto [s, s2] = stats(img.data(), nx, ny);
      const float q = q0sqr(s, s2, nx * ny);
      rows([&](i64 y0, i64 y1) {
        coefficient_rows(dn.data(), ds.data(), dw.data(), de.data(), c.data(), img.data(), nx, ny, q, y0, y1);
      });
      rows([&](i64 y0, i64 y1) {
        update_rows(img.data(), dn.data(), ds.data(), dw.data(), de.data(), c.data(), nx, ny, lambda, y0, y1);
      });
    }
  }
  /// The same on one thread.
  void run(int iterations, float lambda) {
    run(
        iterations, lambda,
        [](const float* im, i64 x, i64 y) {
          double s = 0, s2 = 0;
          statistics_rows(im, x, 0, y, s, s2);
          return std::pair{s, s2};
        },
        [&](auto&& f) { f(0, ny); });
  }
};

/// A speckled test image: smooth shapes (a bright disc, a ramp) times multiplicative noise, in
/// Rodinia's range (exp of an 8-bit image over 255: 1 to e).
inline std::vector<float> speckled(i64 nx, i64 ny) {
  std::vector<float> img(static_cast<std::size_t>(nx * ny));
  std::uint32_t state = 12345;
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      state = state * 1664525u + 1013904223u;  // a fixed LCG: the same image everywhere
      const float noise = 0.75f + 0.5f * static_cast<float>(state >> 8) / 16777216.0f;
      const float dx = static_cast<float>(x - nx / 2), dy = static_cast<float>(y - ny / 2);
      const bool disc = dx * dx + dy * dy < static_cast<float>(nx * ny) / 16.0f;
      const float v = (disc ? 200.0f : 60.0f + 100.0f * static_cast<float>(x) / static_cast<float>(nx)) * noise;
      img[static_cast<std::size_t>(x + nx * y)] = std::exp(std::min(v, 255.0f) / 255.0f);
    }
  return img;
}

}  // namespace ki_srad
