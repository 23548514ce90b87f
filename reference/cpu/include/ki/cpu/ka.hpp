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
#include <optional>
#include <vector>

#include <ki/cpu/groups.hpp>
#include <ki/cpu/report.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/ka/cpu_launch.hpp>

namespace ki::detail::cpu {

struct launch_warnings;  // ki/cpu/race_detector.hpp

/// What the oracle adds to a KA launch, in one place: the runtime keeps the mechanism (the
/// groups loop, the fiber, the arena, the phases, the race detector), the observer says how to
/// use it. Asked once per launch or per group, never per work-item. Without one (simd_cpu)
/// each phase is a plain loop over the group's work-items in ascending order, memory is what
/// the arena holds, and nothing is recorded.
class ka_observer {
 public:
  /// Before group `linear` runs: the local linear ids of its active work-items (`active` of a
  /// group of `size`, x fastest) in the order each of its phases runs them, into `order` (given
  /// empty; left empty: ascending). Either way each work-item is marked before it runs, so that
  /// a fault or a spin-wait names it.
  virtual void order(std::int64_t linear, xyz<std::int64_t> active, xyz<std::int64_t> size,
                     std::vector<std::int64_t>& order) = 0;
  /// Fresh memory of a group (local or private): `bytes` at p, of which an earlier group of this
  /// thread left the first `reused` (local memory; 0 for private memory).
  virtual void fresh(void* p, std::size_t bytes, std::size_t reused) = 0;

  /// The trace hook's view of the launch, while one watches, else null.
  ki::ka::detail::ka_tracer* tracer = nullptr;
  /// The checks of ki::seed(i, s) (ki/rand.hpp), or null.
  rand_checker* seeds = nullptr;
  /// Checked-access mode: races between work-items (of a group, and between groups) and reads of
  /// memory nothing wrote are reported, for kernels compiled with KI_CHECKED_ACCESS=1 (others make
  /// no access calls).
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
  /// What fresh memory holds, for the warnings ("the poison word 0xFFBADBAD").
  const char* fill_name = "";
  /// Checked-access mode: where the warnings are counted (uninitialized-local-read,
  /// uninitialized-private-read, intended-race), or null.
  launch_warnings* warnings = nullptr;

 protected:
  ~ka_observer() = default;
};

struct ka_config {
  backend_names names;
  group_pool pool{};                 ///< where the groups run (ki/cpu/groups.hpp)
  std::size_t max_local_memory = 0;  ///< bytes per work-group
  std::size_t stack_size = 0;        ///< of the fiber the groups run on (faults are reported, not fatal)
  /// The oracle, or null. With one, phases run in its order, each work-item marked before it
  /// runs (a fault, a spin-wait names it); without, a fault names the work-group and the phase
  /// only (the phase is one loop).
  ka_observer* observer = nullptr;
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
