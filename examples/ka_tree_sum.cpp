// A tree reduction in the KA layer, written for speed on the CPU: each group sums its 256 values
// in @localmem, halving the number of adding work-items per step. Two things make it fast on
// simd_cpu (docs/ka-layer.md):
// - g.items(step, f) is the phase of the first `step` work-items: what a GPU runs as
//   `if (@index(Local, Linear) < step)` around f, a CPU runs as a loop over just those;
// - ki::ka::unchecked runs a phase as SIMD lanes on simd_cpu: no bounds checks in it, and its
//   work-items declared independent (the model's rule: within a phase, no two touch an element
//   where one writes), so that the compiler vectorises it. The reference backend, where this
//   example runs by default, keeps every check: a bad index there is still reported, with the
//   work-item and the line.
#include <cstdint>
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

struct tree_sum {
  template <class G>
  void operator()(G& g, ki::span<float> out, ki::span<const float> x) const {
    auto s = g.template localmem<float, G::static_size_linear>([] {});  // N = prod(@groupsize())
    g.items(ki::ka::unchecked, [&](auto i) { s[i.local_linear()] = x[i.global_linear()]; });
    for (std::int64_t step = g.groupsize_linear() / 2; step > 0; step /= 2) {
      g.synchronize();  // the previous step's sums are read by other work-items
      g.items(ki::ka::unchecked, step, [&](auto i) { s[i.local_linear()] += s[i.local_linear() + step]; });
    }
    g.synchronize();
    g.items(1, [&](auto i) { out[i.group_linear()] = s[0]; });  // work-item 0 writes the group's sum
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const std::int64_t groups = 64, n = groups * 256;  // whole groups: every element is read
  std::vector<float> h(n);
  for (std::int64_t i = 0; i < n; ++i) h[i] = static_cast<float>(i % 7);  // small integers: exact sums
  auto x = ki::to_device(backend, h);
  auto out = ki::zeros<float>(backend, groups);
  ki::ka::kernel(backend, tree_sum{}, ki::ka::groupsize<256>, n)(out, ki::ka::Const(x));
  const auto r = ki::to_host(backend, out);
  bool ok = true;
  for (std::int64_t g = 0; g < groups; ++g) {
    float want = 0;
    for (std::int64_t i = g * 256; i < (g + 1) * 256; ++i) want += h[i];
    ok = ok && r[g] == want;
  }
  return ki_example::report("ka_tree_sum", ok,
                            "sums of group 0 and 1 = " + std::to_string(r[0]) + ", " + std::to_string(r[1]));
}

KI_EXAMPLE_MAIN(run)
