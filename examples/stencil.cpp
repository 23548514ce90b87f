// A 3-point stencil y[i] = x[i-1] + x[i] + x[i+1] that takes the neighbours from the
// neighbouring lanes with shfl_up / shfl_down instead of loading them again; only the lanes at
// the edges of a sub-group load their outer neighbour from memory. Lanes are neighbours in
// memory only in the linear layout, so the example asks supports_linear_subgroups first.
#include <string>
#include <vector>

#include "example_main.hpp"

struct stencil3 {
  KI_DEVICE void operator()(ki::span<int> y, ki::span<const int> x) const {
    const auto i = ki::get_global_id().x, n = x.size();
    const auto lane = ki::get_sub_group_local_id(), last = ki::get_sub_group_size() - 1;
    const int mine = i < n ? x[i] : 0;
    int left = ki::shfl_up(mine, 1);     // lane 0 gets its own value back: load instead
    int right = ki::shfl_down(mine, 1);  // so does the last lane of a full sub-group
    if (lane == 0) left = (i > 0 && i - 1 < n) ? x[i - 1] : 0;
    if (lane == last) right = i + 1 < n ? x[i + 1] : 0;
    if (i < n) y[i] = left + mine + right;
  }
};

template <ki::backend B>
bool run(const B& backend) {
  if (!ki::supports_linear_subgroups(backend))
    return ki_example::skipped("stencil", "the device does not promise the linear sub-group layout");
  const int n = 1'000;
  std::vector<int> hx(n);
  for (int i = 0; i < n; ++i) hx[i] = (i * i) % 17;
  auto x = ki::to_device(backend, hx);
  auto y = ki::allocate<int>(backend, n);
  ki::launch(backend, {.ndrange = n, .workgroupsize = 128}, stencil3{}, y, x);
  const auto hy = ki::to_host(backend, y);

  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && hy[i] == (i > 0 ? hx[i - 1] : 0) + hx[i] + (i + 1 < n ? hx[i + 1] : 0);
  return ki_example::report("stencil", ok,
                            "y = x[i-1] + x[i] + x[i+1] over " + std::to_string(n) +
                                " values with shuffles, y[500] = " + std::to_string(hy[500]));
}

KI_EXAMPLE_MAIN(run)
