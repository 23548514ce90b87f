// The executor's entry point: run every work-group of one launch, on the calling thread and
// oneTBB's workers. The queues (queue.cpp) decide when; this decides how.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <vector>

#include <ki/cpu/spin.hpp>
#include <ki/errors.hpp>
#include <ki/reference/backend.hpp>

namespace ki::reference::detail {

struct launch_desc {
  std::array<std::int64_t, 3> groups;
  std::array<std::int64_t, 3> items;
  void (*run_items)(const void* ctx, item_loop& loop);
  const void* ctx;
  const backend* b;
  const char* kernel_name;
  std::uint64_t rand_seed = 0;           ///< the launch's seed (ki/rand.hpp), drawn when it was queued
  std::size_t dynamic_local_memory = 0;  ///< bytes (launch_options::dynamic_local_memory), within max_local_memory
  ki::detail::cpu::rand_checker* rand_check = nullptr;   ///< set by execute
  ki::detail::cpu::launch_progress* progress = nullptr;  ///< set by execute
};

/// What the spin watch needs of the rest of a launch (ki/cpu/spin.hpp; the reference backend
/// counts every group's end).
using launch_progress = ki::detail::cpu::launch_progress;

struct launch_result {
  std::optional<kernel_error> error;  ///< the failure of the lowest failing work-group
  std::vector<warning> warnings;      ///< merged per call site
};

/// Reads every KI_REFERENCE_* variable a launch uses (once per process) and throws
/// std::invalid_argument for a malformed one (ki/cpu/support.hpp, bad_environment): on the
/// host, before a launch is queued.
void check_environment(const backend& b);
launch_result execute(const launch_desc& d);
/// A KA launch (its groups without fibers, phases in the schedule's order).
launch_result execute_ka(const ki::ka::detail::cpu_launch_desc& d, const backend& b);

/// KI_REFERENCE_TRACE=<page.html> (tools/ki-trace): on the first launch of the process, starts
/// a ki::reference::trace that rewrites the page as traced groups end (trace.cpp).
void start_env_trace();

}  // namespace ki::reference::detail
