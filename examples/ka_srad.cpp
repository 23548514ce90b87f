// srad (Rodinia's speckle-reducing anisotropic diffusion, examples/ka_srad.hpp): 8 iterations
// on a 100 x 75 speckled image (partial work-groups at two edges) as three KA kernels per
// iteration (statistics with @groupreduce, coefficients, update), checked against the same
// filter on the host.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "ka_srad.hpp"

template <ki::backend B>
bool run(const B& backend) {
  using ki_srad::i64;
  constexpr i64 nx = 100, ny = 75;
  constexpr int iterations = 8;
  constexpr float lambda = 0.5f;
  const std::vector<float> image = ki_srad::speckled(nx, ny);

  ki_srad::filter<B> f(backend, nx, ny);
  ki::copyto(backend, f.img, image);
  f.run(iterations, lambda);
  const auto got = ki::to_host(backend, f.img);

  ki_srad::host_filter h(image, nx, ny);
  h.run(iterations, lambda);
  const std::vector<float>& want = h.img;
  // The per-pixel arithmetic is the same; the statistics are added in another order (work-group
  // partials), which moves q0^2 in its last bits: a relative bound well above that, well below
  // what one wrong neighbour or coefficient does (percent).
  float worst = 0, before = 0, after = 0;
  for (std::size_t k = 0; k < want.size(); ++k) {
    worst = std::max(worst, std::abs(got[k] - want[k]) / want[k]);
    before += std::abs(image[k] - image[k > 0 ? k - 1 : 0]);
    after += std::abs(got[k] - got[k > 0 ? k - 1 : 0]);
  }
  // The filter smooths: the image's total variation along x falls.
  const bool smoother = after < 0.7f * before;
  return ki_example::report("ka_srad", worst <= 1e-4f && smoother,
                            std::to_string(iterations) + " iterations on " + std::to_string(nx) + " x " +
                                std::to_string(ny) + ", variation along x " + std::to_string(before).substr(0, 6) +
                                " -> " + std::to_string(after).substr(0, 6) + ", largest relative difference " +
                                std::to_string(worst));
}

KI_EXAMPLE_MAIN(run)
