// Private: what ki::reference::trace records of a launch (trace.cpp, the recorder on the trace
// hook) and what the page is drawn from (trace_page.cpp, the renderer). The recorder fills these
// records; the renderer only reads them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <ki/reference/events.hpp>
#include <ki/reference/trace.hpp>
#include <ki/xyz.hpp>

namespace ki::reference::detail::tracing {
using i64 = std::int64_t;

/// One event as the hook delivered it, its strings copied (the event's pointers live only during
/// the call); `where` and `other_where` are "file:line" without the directories, or "".
struct ev {
  trace_kind kind;
  i64 item;
  std::string what, where;
  i64 width, round, index, other_item;
  std::string other_where, message;
};

/// One traced work-group: its events in the order the hook delivered them.
struct group_rec {
  xyz<i64> id{};
  std::vector<ev> events;
  bool cut = false, ended = false;
  i64 races = 0;  // found (the first max_races are kept)
};
constexpr i64 max_races = 8;  // per group, as the launch report keeps

/// One traced launch: its shape, the sub-group layout of a work-group (empty for KA kernels),
/// the schedule, and the groups traced (in the order they started).
struct launch_rec {
  std::uint64_t serial = 0;
  std::string kernel, profile, order;
  xyz<i64> numgroups{}, groupsize{};
  i64 width = 0, num_sub_groups = 0;
  std::vector<std::int32_t> sub_group, lane;
  bool linear = true, ka = false;
  xyz<i64> extents{};
  std::uint64_t seed = 0;
  std::vector<group_rec> groups;
  i64 items() const { return groupsize.x * groupsize.y * groupsize.z; }
  xyz<i64> local_of(i64 l) const {
    return {l % groupsize.x, l / groupsize.x % groupsize.y, l / (groupsize.x * groupsize.y)};
  }
  i64 sg_of(i64 l) const { return sub_group.empty() ? -1 : sub_group[static_cast<std::size_t>(l)]; }
  i64 lane_of(i64 l) const { return lane.empty() ? -1 : lane[static_cast<std::size_t>(l)]; }
};

/// The picture of one traced group G of launch L: caption and diagnostic (when `standalone`: the
/// page's section heading says them otherwise), sub-group layout (KI), timeline; an <svg> element.
/// `with_accesses` draws the element accesses recorded. The same records give the same text.
std::string group_svg(const launch_rec& L, const group_rec& G, bool with_accesses, bool standalone);

/// The whole page (trace::html): a section per launch, one per traced group in it, with the
/// diagnostic of a failed group; `skipped` launches (over opt.max_launches) are counted at the
/// end. Everything on it is escaped, and nothing depends on addresses or clocks.
std::string page_html(const trace_options& opt, const std::vector<launch_rec>& launches, std::size_t skipped);

}  // namespace ki::reference::detail::tracing
