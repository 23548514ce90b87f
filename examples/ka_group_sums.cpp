// group_sums! of kernelabstractions-writing-kernels.txt: @groupreduce adds one value per
// work-item over each work-group. 1000 values in groups of 256: the last group is partial, and
// its padding work-items contribute the neutral element 0 without reading x (which has exactly
// 1000 elements: reading past it would be an error).
#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

struct group_sums {
  template <class G>
  void operator()(G& g, ki::span<std::int64_t> out, ki::span<const std::int64_t> x) const {
    const auto s = g.reduce(std::plus<>{}, std::int64_t{0}, [&](auto i) { return x[i.global_linear()]; });
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = s;
    });
  }
};

template <ki::backend B>
bool run(const B& backend) {
  const std::int64_t n = 1000, groups = 4;
  std::vector<std::int64_t> h(n);
  for (std::int64_t i = 0; i < n; ++i) h[i] = i;
  auto x = ki::to_device(backend, h);
  auto out = ki::zeros<std::int64_t>(backend, groups);
  ki::ka::kernel(backend, group_sums{}, 256)({.ndrange = n}, out, ki::ka::Const(x));
  const auto r = ki::to_host(backend, out);
  std::string shown;
  bool ok = true;
  for (std::int64_t g = 0; g < groups; ++g) {
    std::int64_t want = 0;
    for (std::int64_t i = g * 256; i < std::min(n, (g + 1) * 256); ++i) want += i;
    shown += (g ? " " : "") + std::to_string(r[g]);
    ok = ok && r[g] == want;
  }
  return ki_example::report("ka_group_sums", ok, "sums = [" + shown + "]");
}

KI_EXAMPLE_MAIN(run)
