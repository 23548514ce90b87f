// Instructions per work-item of a first sync point, counted rather than timed: on a noisy VM a
// 10% change in the executor's path disappears in the benchmark's noise, but callgrind counts
// instructions exactly. Each run launches `launches` times 64 work-groups of `items` work-items
// of one kernel (one barrier per work-item, or one sub_group_reduce) on simd_cpu, one thread;
// tools/bench/sync_instructions.sh runs it under callgrind with 20 and 40 launches and divides
// the difference by the work-items, which cancels start-up and the first launch.
//
//   ki_sync_instructions LAUNCHES [ITEMS=256] [barrier|reduce]
#include <ki/ki.hpp>
#include <ki/simd_cpu.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>

namespace {

struct one_barrier {
  KI_DEVICE void operator()(ki::span<int> out) const {
    ki::barrier();
    out[ki::get_global_id().x] = 1;
  }
};

struct one_reduce {
  KI_DEVICE void operator()(ki::span<int> out) const {
    out[ki::get_global_id().x] = ki::sub_group_reduce(std::plus<>{}, 1);
  }
};

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s LAUNCHES [ITEMS=256] [barrier|reduce]\n", argv[0]);
    return 2;
  }
  const int launches = std::atoi(argv[1]);
  const std::int64_t items = argc > 2 ? std::atoll(argv[2]) : 256, groups = 64;
  const bool reduce = argc > 3 && std::strcmp(argv[3], "reduce") == 0;
  const ki::simd_cpu::backend b{.threads = 1};
  auto out = ki::allocate<int>(b, groups * items);
  for (int i = 0; i < launches; ++i) {
    if (reduce) ki::launch(b, {.numgroups = groups, .workgroupsize = items}, one_reduce{}, out);
    else ki::launch(b, {.numgroups = groups, .workgroupsize = items}, one_barrier{}, out);
  }
  ki::synchronize(b);
  for (int v : ki::to_host(b, out))
    if (reduce ? v < 1 : v != 1) {
      std::fprintf(stderr, "wrong result %d\n", v);
      return 1;
    }
  return 0;
}
