// hotspot (Rodinia's chip-temperature stencil, examples/ka_hotspot.hpp): 20 time steps of a
// 100 x 75 grid (partial work-groups at two edges) as a KA kernel with a 16 x 16 local tile and
// its halo, ping-ponging two device arrays; checked against the same steps on the host.
#include <cmath>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "example_main.hpp"
#include "ka_hotspot.hpp"

template <ki::backend B>
bool run(const B& backend) {
  using ki_hotspot::i64;
  constexpr i64 nx = 100, ny = 75, steps = 20;
  const auto p = ki_hotspot::default_params();
  std::vector<float> temp, power;
  ki_hotspot::initial(temp, power, nx, ny);

  auto a = ki::to_device(backend, temp), b = ki::zeros<float>(backend, nx * ny);
  const auto pw = ki::to_device(backend, power);
  const ki::ka::kernel k(backend, ki_hotspot::step{}, ki::ka::groupsize<ki_hotspot::tile, ki_hotspot::tile>,
                         ki::ka::ndrange{nx, ny});
  for (i64 s = 0; s < steps; ++s) {
    k(b, std::as_const(a), pw, nx, ny, p);
    std::swap(a, b);
  }
  const auto got = ki::to_host(backend, a);

  std::vector<float> want = temp, next(temp.size());
  for (i64 s = 0; s < steps; ++s) {
    ki_hotspot::step_rows(next.data(), want.data(), power.data(), nx, ny, p, 0, ny);
    std::swap(want, next);
  }
  // The same arithmetic in the same order: equal to the last bit (a loose bound only for a
  // compiler that contracts it differently in the two places).
  float worst = 0, hottest = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    worst = std::max(worst, std::abs(got[k] - want[k]));
    hottest = std::max(hottest, got[k]);
  }
  return ki_example::report("ka_hotspot", worst <= 1e-3f,
                            std::to_string(steps) + " steps of " + std::to_string(nx) + " x " + std::to_string(ny) +
                                ", hottest cell " + std::to_string(hottest).substr(0, 6) + " K, largest difference " +
                                std::to_string(worst));
}

KI_EXAMPLE_MAIN(run)
