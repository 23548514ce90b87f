// The simd_cpu executor: runs the work-groups of a launch, in parallel, with lazy fibers. The
// group runner is group_runner.hpp (on the CPU runtime's skeleton, ki/cpu/runner.hpp); this file
// hands chunks of groups to the threads (oneTBB or OpenMP) and keeps the lowest failure.
//
// Each host thread takes a contiguous range of work-groups (a chunk) and runs it inside one
// guarded run of its fiber core (the CPU runtime's, <ki/cpu/fiber.hpp>):
//   * One "runner" fiber runs the chunk's work-items as plain calls of the launch's own loop
//     (the kernel call is inlined into it), group after group. A kernel without barriers or
//     sub-group functions therefore costs one fiber per chunk, not per group or per item:
//     per work-item, the thread-local `current` pointer is set and the kernel is called.
//   * When a work-item reaches a synchronisation point (barrier, sub-group function), the fiber
//     it runs on becomes its own and is suspended; control jumps straight to the next work-item
//     to run: one released earlier, or a new runner for the group's next unstarted item, or,
//     when nobody can run, the driver on the thread's own stack. The last work-item to reach a
//     barrier releases the others and runs on without a switch; the last participant of a
//     sub-group function performs it for all (sub_group.cpp) and runs on.
//   * Except at work-item 0's first barrier, when no other work-item has started (the common
//     case): then every other work-item gets a fiber prepared to run it from its start, and the
//     barrier ring (below) opens at once, so that the first round is inline switches from one
//     work-item into the next, as later rounds are.
//   * A group in which some item was suspended is finished by the driver; the next group of the
//     chunk then starts on a new runner.
// The execution order is the reference backend's forward schedule, up to which item runs first
// after a barrier (the spec leaves it open). A work-item that throws or faults ends its group;
// the error of the lowest failing group is kept for ki::synchronize, like on the oracle.
//
// What the oracle checks and this backend does not: poison, the warnings about unspecified
// reads, adversarial layouts, the sequence rule of devices without independent sub-groups
// (simd_cpu has them). It still reports barrier divergence, groups that cannot finish,
// disagreeing and malformed sub-group calls, local memory beyond its limit, exceptions and
// faults, with the group, the work-item and the source line.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/partitioner.h>
#include <tbb/task_arena.h>
#if KI_SIMD_CPU_HAS_OPENMP
#include <omp.h>
#endif

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <optional>
#include <stdexcept>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/groups.hpp>
#include <ki/cpu/support.hpp>
#include <ki/errors.hpp>
#include <ki/simd_cpu/backend.hpp>

#include <ki/cpu/ka.hpp>

#include "executor.hpp"
#include "group_runner.hpp"

namespace ki::simd_cpu::detail {
namespace cpu = ki::detail::cpu;
using i64 = std::int64_t;
using cpu::fiber_core;
using cpu::lowest_failure;
using runner_detail::resolve_stack_size;
using runner_detail::resolve_threads;

namespace {

group_runner& runner_for(const backend& b) { return cpu::thread_runner<group_runner>(resolve_stack_size(b)); }

std::atomic<std::uint64_t> launch_counter{0};

tbb::task_arena& arena_for(int threads) {
  static cpu::arena_cache arenas;  // this backend's own
  return arenas.get(threads);
}

#if KI_SIMD_CPU_HAS_OPENMP
/// The OpenMP scheduler's ranges (cpu::parallel_ranges): chunks in increasing order (dynamic
/// schedule), so that a group that waits for an earlier one (message passing through atomics)
/// waits for a chunk that is running or done.
void openmp_ranges(i64 groups, int threads, void (*range)(void*, i64, i64), void* ctx) {
  const int t = threads > 0 ? threads : omp_get_max_threads();
  const i64 chunk = std::max<i64>(1, groups / (static_cast<i64>(t) * 8));
  const i64 nchunks = (groups + chunk - 1) / chunk;
#pragma omp parallel for schedule(dynamic, 1) num_threads(t)
  for (i64 c = 0; c < nchunks; ++c) range(ctx, c * chunk, std::min(groups, (c + 1) * chunk));
}
#endif

/// Where b's launches run their groups, KI and KA alike: `threads` of b's (resolve_threads).
cpu::group_pool pool_for(const backend& b, int threads) {
  cpu::group_pool p;
  p.threads = threads;
  p.arena = threads > 1 ? &arena_for(threads) : nullptr;
  if (b.scheduler == scheduler::openmp && threads != 1) {
#if KI_SIMD_CPU_HAS_OPENMP
    p.parallel = &openmp_ranges;
#else
    throw std::logic_error("ki::simd_cpu: this build has no OpenMP (KI_SIMD_CPU_SCHEDULER=openmp)");
#endif
  }
  return p;
}

}  // namespace

void check_environment(const backend& b) {
  (void)resolve_stack_size(b);
  (void)resolve_threads(b);
  (void)runner_detail::resolve_spin_limit(b);
  cpu::throw_if_bad_environment("ki::simd_cpu");
}

std::optional<kernel_error> execute(const launch_desc& launch) {
  launch_desc d = launch;
  cpu::launch_progress progress;         // (the spin watch)
  fiber_core::recheck_fault_handlers();  // a test framework may have replaced them since the last launch
  const i64 ngroups = d.groups[0] * d.groups[1] * d.groups[2];
  const std::uint64_t serial = ++launch_counter;
  const int threads = resolve_threads(*d.b);
  progress.alone = threads == 1 || ngroups == 1;
  d.progress = &progress;

  lowest_failure<kernel_error> failed(ngroups);
  cpu::for_group_ranges(ngroups, pool_for(*d.b, threads), [&](i64 begin, i64 end) {
    if (failed.stopped(begin)) return;
    group_runner& r = runner_for(*d.b);
    if (auto f = r.run(d, serial, begin, end, failed.stop())) failed.offer(f->group, std::move(f->error));
  });
  return std::move(failed.error());
}

std::optional<kernel_error> execute_ka(const ki::ka::detail::cpu_launch_desc& d, const backend& b) {
  const int threads = resolve_threads(b);
  cpu::ka_config c{runner_detail::names};
  c.pool = pool_for(b, threads);
  c.max_local_memory = max_local_memory;
  c.stack_size = resolve_stack_size(b);
  c.spin_limit = runner_detail::resolve_spin_limit(b);
  c.spin_limit_name = runner_detail::spin_limit_name;
  return cpu::run_ka(d, c);
}

void copy_bytes(const backend& b, void* dst, const void* src, std::size_t bytes) {
  // Below this a copy is one memmove: the threads' start (a few microseconds) would cost more
  // than the second core brings, and such a copy is likely in a cache anyway.
  constexpr std::size_t parallel_from = std::size_t{4} << 20;
  auto* d = static_cast<unsigned char*>(dst);
  const auto* s = static_cast<const unsigned char*>(src);
  const bool overlap = d < s + bytes && s < d + bytes;  // (memmove's order matters: one piece)
  const int threads = resolve_threads(b);
  const int parts_wanted = threads > 0 ? threads : static_cast<int>(host_threads(b));
  if (bytes < parallel_from || overlap || parts_wanted <= 1) {
    std::memmove(dst, src, bytes);
    return;
  }
  // One part per thread, each a multiple of 4 KiB (whole pages: no two threads write one line).
  constexpr std::size_t page = 4096;
  const auto parts = static_cast<std::size_t>(parts_wanted);
  const std::size_t part = (bytes / parts + page - 1) / page * page;
  const auto piece = [&](std::size_t k) {
    const std::size_t begin = k * part;
    if (begin < bytes) std::memcpy(d + begin, s + begin, std::min(part, bytes - begin));
  };
  if (b.scheduler == scheduler::openmp) {
#if KI_SIMD_CPU_HAS_OPENMP
#pragma omp parallel for schedule(static, 1) num_threads(parts_wanted)
    for (std::size_t k = 0; k < parts; ++k) piece(k);
    return;
#endif
  }
  const auto body = [&] {
    tbb::parallel_for(
        tbb::blocked_range<std::size_t>(0, parts, 1),
        [&](const tbb::blocked_range<std::size_t>& r) {
          for (std::size_t k = r.begin(); k < r.end(); ++k) piece(k);
        },
        tbb::static_partitioner());
  };
  if (threads > 1) arena_for(threads).execute(body);
  else body();
}

std::int64_t host_threads(const backend& b) {
  const int t = resolve_threads(b);
  return t > 0 ? t : tbb::this_task_arena::max_concurrency();
}

}  // namespace ki::simd_cpu::detail
