// k-means (Rodinia's kmeans, examples/ka_kmeans.hpp): 3 clusters of 1000 points with 4 features,
// 5 iterations of assign, reduce (local atomics per work-group) and new centres as KA kernels,
// checked against the same iterations on the host.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "example_main.hpp"
#include "ka_kmeans.hpp"

template <ki::backend B>
bool run(const B& backend) {
  constexpr int k = 3, nf = 4, iterations = 5;
  constexpr std::int64_t n = 1000;
  const auto [x, start] = ki_kmeans::points(n, k, nf);

  ki_kmeans::clustering<k, nf, B> c(backend, x, start);
  c.run(iterations);
  const auto centres = ki::to_host(backend, c.centres);
  const auto membership = ki::to_host(backend, c.membership);

  std::vector<std::int32_t> want_membership;
  std::vector<float> want_centres = start;
  ki_kmeans::kmeans_host(want_membership, want_centres, x, k, nf, iterations);
  // Memberships exactly (every point's nearest centre is clear); the centres to a rounding (the
  // device adds in float, per work-group, the host in double).
  const bool same_members = membership == want_membership;
  float worst = 0;
  for (std::size_t j = 0; j < centres.size(); ++j)
    worst = std::max(worst, std::abs(centres[j] - want_centres[j]) / std::abs(want_centres[j]));
  const auto sizes = [&] {
    std::string s;
    for (int cl = 0; cl < k; ++cl)
      s += (cl ? "/" : "") + std::to_string(std::count(membership.begin(), membership.end(), cl));
    return s;
  }();
  return ki_example::report("ka_kmeans", same_members && worst <= 1e-5f,
                            std::to_string(iterations) + " iterations, " + std::to_string(n) + " points in " +
                                std::to_string(k) + " clusters of " + sizes +
                                ", largest relative difference of a centre " + std::to_string(worst));
}

KI_EXAMPLE_MAIN(run)
