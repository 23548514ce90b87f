// ki::reference::schedule: which of the legal executions the oracle runs (schedule exploration).
//
// Between two synchronisation points the work-items of a group may run in any order, a
// profile without the linear-layout promise may form sub-groups any way, and unspecified
// values may be anything. A kernel whose output depends on any of these choices has a bug (a
// race, a layout assumption, a read of unspecified memory). A seed picks one choice of each,
// legally and reproducibly:
//
//   seed 0   the default run: items in forward order (linear local id), the profile's layout
//            seed and poison (the fixed word 0xFFBADBAD unless the profile seeds it)
//   seed 1   items in reverse order; layout and poison derived from the seed
//   seed >1  items in a random order at every release from a barrier, and work-groups in a
//            random order (with threads = 1); layout and poison derived from the seed
//
// The order can also be named explicitly (schedule{order::reverse, 7}). A failing run is
// replayed with the same seed: KI_REFERENCE_SEED=<seed> in the environment, or
// backend{.schedule = ki::reference::schedule::from_seed(seed)}.
#pragma once
#include <cstdint>

namespace ki::reference {

/// The order in which the work-items of a group run between synchronisation points.
enum class order : std::uint8_t { forward, reverse, random };

struct schedule {
  ki::reference::order items = ki::reference::order::forward;
  /// 0: no exploration. Otherwise it seeds the random order, and (re)seeds adversarial layouts
  /// (only where the profile does not promise a linear one) and the poison of unspecified values.
  std::uint64_t seed = 0;
  /// Interleave the work-items of a group at atomic operations, not only at barriers and
  /// sub-group functions: before each atomic operation (KI kernels) the work-item lets the others
  /// that can run go first, each up to its own next atomic operation or sync point, in turn. The
  /// model allows it (no order is promised between the work-items of a group), so a kernel whose
  /// result changes under it has a bug: an update made of an atomic load and an atomic store
  /// loses increments, compare-exchange loops see contention. A spin-wait on another work-item
  /// of the group then ends when that one sets the value, as on a GPU that schedules threads
  /// independently; without this the oracle reports it (no_progress). Off by default;
  /// KI_REFERENCE_INTERLEAVE=atomics turns it on.
  bool interleave_atomics = false;

  /// The choice of seed s (see above).
  static constexpr schedule from_seed(std::uint64_t s) {
    return {s == 0 ? order::forward : s == 1 ? order::reverse : order::random, s, false};
  }
  /// KI_REFERENCE_SEED=<n> (from_seed(n)), optionally overridden in its order by
  /// KI_REFERENCE_SCHEDULE=forward|reverse|random, and KI_REFERENCE_INTERLEAVE=atomics (or
  /// none). None set: seed 0. Read once per process; an unparsable value is reported on stderr
  /// and ignored.
  static schedule from_environment();
};

/// Checked-access mode: whether a work-item writing the value an element already holds, in the
/// same barrier interval as another work-item's access, is a race (see docs/debugging.md).
enum class same_value_writes : std::uint8_t {
  race,     ///< reported (default): on a GPU it is still a race, even if usually benign
  allowed,  ///< not reported; a read of another item's write in the same interval is then found
            ///< only by schedules that run the reader first (reverse, random)
};

/// Checked-access mode: what a launch with data races reports (docs/debugging.md, "Every race
/// of a launch").
enum class race_reports : std::uint8_t {
  first_group,  ///< the lowest work-group with races ends the launch: its races (default)
  all,          ///< every work-group runs; the error (the lowest group's race) lists every race
                ///< of the launch, per pair of lines, with counts (the first 32 pairs)
};

/// When a work-item's stores become visible to the other work-items (docs/debugging.md, "Weak
/// memory").
enum class memory_model : std::uint8_t {
  /// At once (what x86 and a one-thread emulator give): every legal program runs right, and so
  /// do many programs that miss a release, an acquire or a fence.
  sequential,
  /// A store buffer per work-item: a plain store is seen by the others only after that
  /// work-item's next release (an atomic operation or fence with release semantics), a barrier
  /// ordering its memory, a sub_group_barrier it passes, or the launch's end, and by each of
  /// them only from its next acquire on (also in later work-groups); until then they read the
  /// value from before it, as a GPU may let them. Needs kernels compiled in checked-access
  /// mode with the instrumentation hooks (ki::reference_checked with GCC or Clang; a launch from
  /// another translation unit is refused with std::invalid_argument), which then reports no races
  /// (correct synchronisation through atomics is not modelled by the race detector); work-groups
  /// run one after another on one thread. KI kernels only (KA kernels run as in `sequential`).
  weak,
};

/// What a work-group's local memory (KI's localmemory, KA's localmem, the emulated GPU's
/// `__shared__` arrays) holds before the group writes it (docs/debugging.md, "Local memory's
/// first contents"). Either way the values are unspecified, and checked-access mode warns of
/// every read of local memory the group has not written.
enum class local_memory_start : std::uint8_t {
  /// The poison word 0xFFBADBAD (a seeded schedule: its random bytes), every group afresh.
  poison,
  /// Adversarial: what the previous work-group run on the same host thread left at the same
  /// place (its local memory, in the order it asked for it), as a GPU's multiprocessor leaves
  /// shared memory to the next block; poison only where no group has been before. A kernel that
  /// reads local memory before writing it then reads plausible, stale values, not an obvious
  /// poison word: a test that passes under `poison` by comparing against 0xFFBADBAD, or whose
  /// first group happens to read a zero, fails here.
  leftovers,
};

}  // namespace ki::reference
