// ki::reference::set_trace_hook: what the oracle does, as it does it, for tools (a tracer, a
// visualiser) that want to watch a launch.
//
// The hook is called on the thread that runs the work-group, in execution order: a group
// starts; a work-item arrives at a sync point (a barrier or a sub-group function) and leaves it
// (is released); an element access is recorded (kernels compiled in checked-access mode only);
// the group ends. Groups run in parallel unless the backend has threads = 1, so a hook that
// keeps state per launch must be thread-safe. The hook must not launch kernels or throw.
//
// Cost: with no hook installed, nothing on the barrier's fast path (the oracle reads the hook
// once per work-group; while one is installed, every barrier takes the slow path) and one
// predictable branch per sub-group function and group.
#pragma once
#include <cstdint>

#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

namespace ki::reference {

enum class trace_kind : std::uint8_t {
  group_start,  ///< before the group's first work-item runs
  arrive,       ///< work-item `item` arrives at sync point `what` at `where`
  leave,        ///< work-item `item` is released from it (may resume)
  access,       ///< work-item `item` accesses `address` at `where` (checked-access mode)
  group_end,    ///< the group has ended (normally or not)
};

struct trace_event {
  trace_kind kind;
  xyz<std::int64_t> group;        ///< the work-group
  std::int64_t item = -1;         ///< linear local id (x fastest); -1 for group events
  const char* what = "";          ///< "barrier" or a sub-group function's name (arrive, leave)
  source_location where{};        ///< the sync point or the access
  const void* address = nullptr;  ///< the element accessed
  const char* kernel = "";        ///< the kernel's name
};

using trace_hook = void (*)(void* context, const trace_event& e);

/// Installs `hook` (null: none) for every launch that starts afterwards, on every reference
/// backend of the process. Returns the hook it replaces.
trace_hook set_trace_hook(trace_hook hook, void* context = nullptr);

}  // namespace ki::reference
