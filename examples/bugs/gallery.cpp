// Runs every kernel of the bug gallery and prints what the oracle says about it: the readable
// launch report (compiled in checked-access mode, so that races name both work-items).
#include <cstdint>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "barrier_in_divergent_branch.hpp"
#include "collective_after_return.hpp"
#include "different_barriers.hpp"
#include "different_collectives.hpp"
#include "local_write_write_race.hpp"
#include "missing_barrier.hpp"
#include "non_uniform_shuffle.hpp"
#include "race_between_groups.hpp"
#include "shuffle_in_divergent_code.hpp"
#include "spin_wait.hpp"
#include "tiled_loop.hpp"
#include "unspecified_lanes.hpp"

namespace {
using i64 = std::int64_t;

template <class K, class... A>
void show(const char* title, const ki::reference::backend& b, K k, i64 groups, i64 n, const A&... args) {
  std::printf("== %s\n", title);
  (void)ki::reference::take_reports();
  auto out = ki::zeros<i64>(b, groups * n);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n, .name = title}, k, out, args...);
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error&) {
  }
  (void)ki::reference::take_warnings();
  const auto reports = ki::reference::take_reports();
  if (reports.empty()) std::printf("nothing found\n");
  for (const auto& r : reports) std::printf("%s", r.str().c_str());
}
}  // namespace

int main(int argc, char** argv) {
  const std::string profile = argc > 1 ? argv[1] : "cuda";
  ki::reference::backend b{.device = ki::reference::profile::preset(profile), .threads = 1, .print_warnings = false};
  std::vector<i64> h(256);
  std::iota(h.begin(), h.end(), 1);
  auto in_ = ki::allocate<i64>(b, 256);
  ki::copyto(b, in_, h);
  const auto& in = in_;
  show("local_write_write_race", b, ki_bugs::local_write_write_race{}, 1, 64);
  show("missing_barrier", b, ki_bugs::missing_barrier{}, 1, 64, in);
  show("barrier_in_divergent_branch", b, ki_bugs::barrier_in_divergent_branch{}, 1, 64);
  show("different_barriers", b, ki_bugs::different_barriers{}, 1, 64);
  show("race_between_groups", b, ki_bugs::race_between_groups{}, 4, 64);
  show("shuffle_in_divergent_code", b, ki_bugs::shuffle_in_divergent_code{}, 1, 64);
  show("unspecified_lanes", b, ki_bugs::unspecified_lanes{}, 1, 40);
  show("collective_after_return", b, ki_bugs::collective_after_return{}, 1, 8);
  show("different_collectives", b, ki_bugs::different_collectives{}, 1, 128);
  show("non_uniform_shuffle", b, ki_bugs::non_uniform_shuffle{}, 1, 64);
  show("spin_wait", b, ki_bugs::spin_wait{}, 1, 64);
  show("tiled_loop_missing_trailing_barrier", b, ki_bugs::tiled_loop_missing_trailing_barrier{}, 1, 64, in, i64{4});
  show("tiled_loop_correct", b, ki_bugs::tiled_loop_correct{}, 1, 64, in, i64{4});
}
