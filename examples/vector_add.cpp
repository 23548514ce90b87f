// Vector add: the "hello world" of kernels. One work-item per element; the launch pads the
// ndrange to whole work-groups, so the kernel checks its own bound.
#include <string>
#include <vector>

#include "example_main.hpp"

struct vadd {
  KI_DEVICE void operator()(ki::span<float> c, ki::span<const float> a, ki::span<const float> b) const {
    const auto i = ki::get_global_id().x;
    if (i < c.size()) c[i] = a[i] + b[i];
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const int n = 100'000;  // not a multiple of the work-group size: the last group is padded
  std::vector<float> ha(n), hb(n);
  for (int i = 0; i < n; ++i) ha[i] = float(i), hb[i] = float(2 * i);
  auto a = ki::to_device(backend, ha);
  auto b = ki::to_device(backend, hb);
  auto c = ki::allocate<float>(backend, n);

  ki::launch(backend, {.ndrange = n}, vadd{}, c, a, b);
  const auto hc = ki::to_host(backend, c);  // synchronizes

  bool ok = true;
  for (int i = 0; i < n; ++i) ok = ok && hc[i] == float(3 * i);
  return ki_example::report("vector_add", ok,
                            "c = a + b for " + std::to_string(n) + " floats, c[99999] = " + std::to_string(hc[n - 1]));
}

KI_EXAMPLE_MAIN(run)
