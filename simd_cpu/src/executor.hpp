// Private: the executor's entry point: run every work-group of one launch, on the calling thread
// and the scheduler's workers, before returning.
#pragma once
#include <array>
#include <cstdint>
#include <optional>

#include <ki/cpu/spin.hpp>
#include <ki/errors.hpp>
#include <ki/simd_cpu/backend.hpp>

namespace ki::simd_cpu::detail {

struct launch_desc {
  std::array<std::int64_t, 3> groups;
  std::array<std::int64_t, 3> items;
  run_items_fn run_items;
  run_one_fn run_one;
  const void* ctx;
  const backend* b;
  const char* kernel_name;
  std::uint64_t rand_seed = 0;           ///< the launch's seed (ki/rand.hpp)
  std::size_t dynamic_local_memory = 0;  ///< bytes (launch_options::dynamic_local_memory), within max_local_memory
  ki::detail::cpu::launch_progress* progress = nullptr;  ///< set by execute (the spin watch)
};

/// Reads every KI_SIMD_CPU_* variable (once per process) and throws std::invalid_argument for a
/// malformed one (ki/cpu/support.hpp, bad_environment): on the host, before a launch.
void check_environment(const backend& b);
/// The failure of the lowest failing work-group, if any.
std::optional<kernel_error> execute(const launch_desc& d);
/// A KA launch: the failure of the lowest failing work-group, if any.
std::optional<kernel_error> execute_ka(const ki::ka::detail::cpu_launch_desc& d, const backend& b);
/// memmove(dst, src, bytes) on b's threads: a large copy between distinct buffers is split into
/// one contiguous part per thread (one thread streams about half of what the memory delivers to
/// all of them); a small or overlapping one is one memmove on the calling thread.
void copy_bytes(const backend& b, void* dst, const void* src, std::size_t bytes);

}  // namespace ki::simd_cpu::detail
