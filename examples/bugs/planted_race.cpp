// A program with a planted race (the missing barrier of missing_barrier.hpp), for ki-check:
// it prints its output buffer as "out: v0 v1 ...", the format ki-check compares element-wise.
// Under the default execution it runs without any error; only exploration shows that its
// output depends on the order the work-items run in:
//
//   tools/ki-check/ki-check --seeds 8 -- ./ki_bug_planted_race
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "missing_barrier.hpp"

int main() {
  const ki::reference::backend b;
  const std::int64_t n = 64;
  std::vector<std::int64_t> h(n);
  std::iota(h.begin(), h.end(), 1);
  auto in = ki::allocate<std::int64_t>(b, n);
  ki::copyto(b, in, h);
  auto out = ki::zeros<std::int64_t>(b, n);
  const auto& cin = in;
  ki::launch(b, {.numgroups = 1, .workgroupsize = n}, ki_bugs::missing_barrier{}, out, cin);
  ki::synchronize(b);
  std::printf("out:");
  for (const auto v : ki::to_host(b, out)) std::printf(" %lld", static_cast<long long>(v));
  std::printf("\n");
}
