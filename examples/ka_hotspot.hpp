// hotspot: the heat stencil of the Rodinia benchmark suite's "hotspot" (a chip's temperature
// under its power map), one time step per launch, as a KA kernel with a local tile and halo.
//
// Each work-group of 16 x 16 work-items loads its 16 x 16 cells of the temperature grid and the
// ring of cells around them (the halo) into local memory, synchronizes, and computes its cells'
// new temperatures from the tile: each cell from itself, its four neighbours, its power and the
// ambient temperature. Outside the grid a neighbour is the edge cell itself (Rodinia's boundary).
// Shared by examples/ka_hotspot.cpp (checked against hotspot_host) and ki_bench_simd_cpu (timed
// against the same loop in OpenMP).
#pragma once
#include <cstdint>
#include <vector>

#include <ki/ka.hpp>

namespace ki_hotspot {

using i64 = std::int64_t;
constexpr i64 tile = 16;

/// The step's constants (Rodinia's, for a 0.5 mm x 0.5 mm chip of 1024 x 1024 cells, folded).
struct params {
  float cx, cy, cz;  // step / capacitance / resistance in x, y, z
  float step_cap;    // step / capacitance
  float ambient;
};
inline params default_params() { return {0.1f, 0.1f, 0.0005f, 0.5f, 80.0f}; }

/// One cell's new temperature from its own (t), its neighbours' (west, east, north, south), and
/// its power. Written once, for the kernel and the host loops alike.
inline float cell(const params& p, float t, float w, float e, float n, float s, float power) {
  return t + p.step_cap * (power + (e + w - 2.0f * t) * p.cx + (s + n - 2.0f * t) * p.cy + (p.ambient - t) * p.cz);
}

/// The kernel: out = one step of temp (nx x ny, x fastest). A static 16 x 16 work-group (the
/// tile's size is its size). Unchecked: its phases written g.items(ki::ka::unchecked, f) (no
/// bounds checks on simd_cpu; the benchmark's second row).
template <bool Unchecked = false>
struct basic_step {
  template <class G, class F>
  static void phase(G& g, F&& f) {
    if constexpr (Unchecked) g.items(ki::ka::unchecked, f);
    else g.items(f);
  }
  template <class G>
  void operator()(G& g, ki::span<float> out, ki::span<const float> temp, ki::span<const float> power, i64 nx, i64 ny,
                  params p) const {
    auto t = g.template localmem<float, tile + 2, tile + 2>([] {});
    const auto at = [&](i64 x, i64 y) {  // the grid, its edge repeated outside
      x = x < 0 ? 0 : x >= nx ? nx - 1 : x;
      y = y < 0 ? 0 : y >= ny ? ny - 1 : y;
      return temp[x + nx * y];
    };
    const auto active = g.active();  // (a partial group at the grid's far edges)
    phase(g, [&](auto i) {
      const auto l = i.local();
      const auto c = i.global();
      t(l.x + 1, l.y + 1) = at(c.x, c.y);
      if (l.x == 0) t(0, l.y + 1) = at(c.x - 1, c.y);
      if (l.x == active.x - 1) t(l.x + 2, l.y + 1) = at(c.x + 1, c.y);
      if (l.y == 0) t(l.x + 1, 0) = at(c.x, c.y - 1);
      if (l.y == active.y - 1) t(l.x + 1, l.y + 2) = at(c.x, c.y + 1);
    });
    g.synchronize();
    phase(g, [&](auto i) {
      const auto l = i.local();
      const auto c = i.global();
      const i64 x = l.x + 1, y = l.y + 1;
      out[c.x + nx * c.y] = cell(p, t(x, y), t(x - 1, y), t(x + 1, y), t(x, y - 1), t(x, y + 1), power[c.x + nx * c.y]);
    });
  }
};
using step = basic_step<false>;

/// The same step on the host, rows [y0, y1) (the reference, and the OpenMP baseline's body).
inline void step_rows(float* out, const float* temp, const float* power, i64 nx, i64 ny, const params& p, i64 y0,
                      i64 y1) {
  for (i64 y = y0; y < y1; ++y) {
    const float* row = temp + nx * y;
    const float* north = temp + nx * (y > 0 ? y - 1 : 0);
    const float* south = temp + nx * (y < ny - 1 ? y + 1 : ny - 1);
    for (i64 x = 0; x < nx; ++x) {
      const float w = row[x > 0 ? x - 1 : 0], e = row[x < nx - 1 ? x + 1 : nx - 1];
      out[x + nx * y] = cell(p, row[x], w, e, north[x], south[x], power[x + nx * y]);
    }
  }
}

/// A chip's power map and starting temperatures (deterministic, smooth with a few hot spots).
inline void initial(std::vector<float>& temp, std::vector<float>& power, i64 nx, i64 ny) {
  temp.resize(static_cast<std::size_t>(nx * ny));
  power.resize(static_cast<std::size_t>(nx * ny));
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const auto k = static_cast<std::size_t>(x + nx * y);
      temp[k] = 320.0f + static_cast<float>((x * 7 + y * 3) % 17) * 0.5f;
      const bool hot = (x / 64 + y / 64) % 5 == 0;
      power[k] = hot ? 0.8f : 0.05f + static_cast<float>((x + 2 * y) % 11) * 0.01f;
    }
}

}  // namespace ki_hotspot
