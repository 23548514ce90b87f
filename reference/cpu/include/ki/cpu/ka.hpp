// The CPU runtime's KA launch: runs every work-group of a KA kernel (ki/ka/group.hpp) on the
// calling thread and a oneTBB arena, without a fiber per work-item: the group-level code once
// per group, each phase a loop over the group's work-items. Each thread runs its range of
// groups on one fiber (one switch per range), so that an invalid access or a stack overflow in
// a kernel is reported like any error instead of ending the process. Both CPU backends run
// their KA launches here; the oracle asks for phases in its explored order, for the running
// work-item to be tracked and for poisoned memory.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>

#include <ki/cpu/groups.hpp>
#include <ki/cpu/report.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/ka/cpu_launch.hpp>

namespace ki::detail::cpu {

/// The order a group's work-items run in, in each phase.
enum class ka_order : std::uint8_t { forward, reverse, random };

struct launch_warnings;  // ki/cpu/race_detector.hpp

struct ka_config {
  backend_names names;
  group_pool pool{};  ///< where the groups run (ki/cpu/groups.hpp)
  ka_order order = ka_order::forward;
  std::uint64_t seed = 0;            ///< random order: the permutation's seed (per group)
  std::size_t max_local_memory = 0;  ///< bytes per work-group
  /// The oracle's checks of ki::seed(i, s) (ki/rand.hpp), or null.
  ki::detail::cpu::rand_checker* rand_check = nullptr;
  std::size_t stack_size = 0;  ///< of the fiber the groups run on (faults are reported, not fatal)
  /// Phases run in an explicit order even when it is forward, the running work-item recorded
  /// per item: a fault (an invalid access, a stack overflow) then names it (the oracle). Else
  /// a fault names the work-group and the phase only (the phase is one loop).
  bool track_items = false;
  /// Checked-access mode (the oracle): races between the work-items of a group are reported,
  /// for kernels compiled with KI_CHECKED_ACCESS=1 (others make no access calls).
  bool check_races = false;
  /// Checked-access mode: the most elements of global memory the launch's race record keeps
  /// (one entry per element touched); beyond, the group that adds one fails as `resource`.
  /// 0: no limit.
  std::size_t checked_elements = 0;
  /// Checked-access mode: a work-item writing the value an element already holds races with the
  /// others' accesses (ki::reference::same_value_writes::race); false (allowed): it races with
  /// no write, within a group and between groups, as for KI kernels.
  bool same_value_race = true;
  /// Checked-access mode: a group's races do not end the launch; the error lists every race
  /// (ki::reference::race_reports::all).
  bool all_races = false;
  /// Fills fresh local and private memory (the oracle's poison), or null.
  void (*fill)(void* p, std::size_t bytes) = nullptr;
  /// Local memory: fill only what no earlier work-group of this thread's arena had (the
  /// reference backend's KI_REFERENCE_LOCAL_MEMORY=leftovers).
  bool leftovers = false;
  /// What the fill writes, for the warnings ("the poison word 0xFFBADBAD").
  const char* fill_name = "";
  /// Checked-access mode: where the reads of local or private memory before any write are
  /// counted (uninitialized-local-read, uninitialized-private-read), or null.
  launch_warnings* warnings = nullptr;
  /// The oracle's trace hook, while one watches (needs track_items), else null.
  ki::ka::detail::ka_tracer* tracer = nullptr;
  /// The spin watch (ki/cpu/spin.hpp): repeats of one observation before the judge looks, and
  /// where a user sets it (for the message).
  std::uint64_t spin_limit = std::uint64_t{1} << 20;
  const char* spin_limit_name = "";
  /// What the device has, seen by device functions while a group runs (the oracle: its
  /// profile's; elsewhere all of them).
  device_features features{};
};

/// Runs the launch; the failure of the lowest failing group, if any.
std::optional<kernel_error> run_ka(const ki::ka::detail::cpu_launch_desc& d, const ka_config& c);

}  // namespace ki::detail::cpu
