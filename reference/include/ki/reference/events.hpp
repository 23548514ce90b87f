// ki::reference::set_trace_hook: what the oracle does, as it does it, for tools (a tracer, a
// visualiser: ki/reference/trace.hpp, tools/ki-trace) that want to watch a launch.
//
// The hook is called on the thread that runs the work-group, in execution order: a group
// starts; a work-item starts, arrives at a sync point (a barrier or a sub-group function) and
// leaves it (is released), accesses an element (kernels compiled in checked-access mode only),
// exits; a race is found (checked-access mode); the group fails or ends. A KA launch (ki/ka.hpp)
// has phases instead: each work-item's run of an items() statement, and the group's
// synchronize calls. Groups run in parallel unless the backend has threads = 1, so a hook that
// keeps state per launch must be thread-safe. The hook must not launch kernels or throw.
//
// Cost: with no hook installed, nothing on the barrier's fast path (the oracle reads the hook
// once per work-group; while one is installed, every barrier takes the slow path), one
// predictable branch per work-item start and exit, per sub-group function and per KA phase.
#pragma once
#include <cstdint>

#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

namespace ki {
class kernel_error;
}

namespace ki::reference {

enum class trace_kind : std::uint8_t {
  group_start,  ///< before the group's first work-item runs
  arrive,       ///< work-item `item` arrives at sync point `what` at `where`
  leave,        ///< work-item `item` is released from it (may resume); `round` names the release
  access,       ///< work-item `item` accesses element `index` at `address`, at `where` (checked-access mode:
                ///< with the instrumentation, each load and store of checked memory, also through pointers)
  group_end,    ///< the group has ended (normally or not)
  start,        ///< work-item `item` starts running the kernel
  exit,         ///< work-item `item` returns from the kernel
  phase,        ///< KA: work-item `item` runs its statement of the items() call at `where`
  synchronize,  ///< KA: the group passes synchronize() (or a group collective, `what`) at `where`
  race,         ///< checked-access mode: `other_item` at `other_where`, then `item` at `where`,
                ///< access element `index` at `address` with nothing between (`what`: "read-write", ...)
  failure,      ///< the group failed: `error` (also `what`: its kind, `message`: its text)
};

/// What a launch is, for every event of it (valid during the hook call only).
struct trace_launch {
  std::uint64_t serial = 0;  ///< the launch's number in the process (from 1)
  const char* kernel = "";   ///< its name
  xyz<std::int64_t> numgroups{}, groupsize{};
  const char* profile = "";                 ///< the emulated device
  std::int64_t sub_group_width = 0;         ///< W (0: a KA launch)
  std::int64_t num_sub_groups = 0;          ///< per work-group
  const std::int32_t* sub_group = nullptr;  ///< per linear local id: its sub-group (KI launches)
  const std::int32_t* lane = nullptr;       ///< per linear local id: its lane
  bool linear_layout = true;                ///< sub-groups are runs of consecutive local ids
  std::uint64_t seed = 0;                   ///< the schedule's seed (replay: KI_REFERENCE_SEED)
  const char* order = "forward";            ///< the work-items' order: forward, reverse, random
  bool ka = false;                          ///< a KA launch (phases, no fibers)
  xyz<std::int64_t> extents{};              ///< KA: the ndrange's extents (work-items past them are padding)
};

struct trace_event {
  trace_kind kind;
  xyz<std::int64_t> group;               ///< the work-group
  std::int64_t item = -1;                ///< linear local id (x fastest); -1 for group events
  const char* what = "";                 ///< "barrier" or a sub-group function's name (arrive, leave)
  source_location where{};               ///< the sync point or the access
  const void* address = nullptr;         ///< the element accessed
  const char* kernel = "";               ///< the kernel's name
  std::int64_t width = 0;                ///< sub-group functions: the width argument (0: the whole sub-group)
  std::int64_t round = -1;               ///< leave: the release it belongs to (per group, from 0): its participants
  std::int64_t index = -1;               ///< access, race: the element's index in its array
  std::int64_t other_item = -1;          ///< race: the first access's work-item
  source_location other_where{};         ///< race: the first access's line
  const char* message = "";              ///< race, failure: the report's text
  const kernel_error* error = nullptr;   ///< failure
  const trace_launch* launch = nullptr;  ///< the launch (every event)
};

using trace_hook = void (*)(void* context, const trace_event& e);

/// Installs `hook` (null: none) for every launch that starts afterwards, on every reference
/// backend of the process. Returns the hook it replaces.
trace_hook set_trace_hook(trace_hook hook, void* context = nullptr);

/// The context the installed hook was given.
void* trace_hook_context();

}  // namespace ki::reference
