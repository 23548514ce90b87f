// ki::reference::trace: records launches on the reference backend and draws them as one
// self-contained HTML page (inline SVG: no script, no network), for people who learn, teach or
// debug the model. tools/ki-trace is the same recorder driven from outside a program.
//
//   ki::reference::trace t({.groups = {{0, 0, 0}}});   // installs itself on the trace hook
//   ki::launch(b, cfg, kernel{}, args...);
//   ki::synchronize(b);
//   t.write("trace.html");                              // or t.html(), t.svg()
//
// What the page shows, per traced launch and work-group: a timeline with one row per work-item
// (grouped by sub-group, lanes labelled), in the order the oracle ran them (the schedule its
// seed chose): each run up to a sync point, the arrival at a barrier or a sub-group function
// (kind, width), the wait, the release (a barrier's round, a sub-group function's participants),
// the exit; KA launches show their phases and synchronize calls instead. Above it, the
// sub-group layout of the emulated device (which local ids form each sub-group, partial ones,
// a non-linear layout as a grid coloured by sub-group). A failed group carries its diagnostic
// on the picture: the items that wait and where, the failing work-item, the two accesses of a
// race with their lines. Kernels compiled in checked-access mode add their element accesses.
//
// The time axis counts steps, not seconds: one step per work-item run (from a resume up to its
// next sync point or exit) and one per release. The oracle runs a group's work-items one at a
// time, so the order of the steps is the execution order.
//
// Cost: nothing while no trace exists (the hook is off, ki/reference/events.hpp); while one
// records, every event of every launch goes through it, and it keeps the traced groups' events
// (bounded by max_events per group). Launches on other backends are not seen.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <ki/xyz.hpp>

namespace ki::reference {

struct trace_options {
  /// The work-groups traced in each launch (group ids; 1-D launches: {g, 0, 0}).
  std::vector<xyz<std::int64_t>> groups{{0, 0, 0}};
  /// Launches recorded; the later ones are counted and named on the page, not drawn.
  std::size_t max_launches = 16;
  /// Events kept per traced group; the page says where a group was cut.
  std::size_t max_events = 20000;
  /// Element accesses (checked-access mode) on the picture.
  bool accesses = true;
  /// The page's heading (e.g. the command that was traced).
  std::string title = "ki-trace";
  /// If not empty: the page is rewritten there each time a traced group ends (so that it
  /// survives a program that fails afterwards).
  std::string path{};
  /// If not empty: each traced group is also written there, as it ends, as a standalone SVG
  /// (svg()) named after its launch: NAME.svg for group (0,0,0), NAME-X-Y-Z.svg for others, where
  /// NAME is the kernel's name (letters, digits, '-', '_' and '.' kept, others '_'), followed by
  /// -K for the K-th launch of that name after the first. (The pictures of docs/model.md.)
  std::string svg_dir{};
};

class trace {
 public:
  /// Starts recording: installs itself on the trace hook (ki/reference/events.hpp).
  /// std::logic_error if another trace or hook is installed.
  explicit trace(trace_options options = {});
  /// Stops recording (uninstalls the hook). Does not write anything.
  ~trace();
  trace(const trace&) = delete;
  trace& operator=(const trace&) = delete;

  /// Stops recording early (the launches so far stay).
  void stop();

  /// Launches recorded so far (at most max_launches), and those seen beyond.
  std::size_t launches() const;
  std::size_t launches_skipped() const;

  /// The page: every recorded launch. Deterministic for a deterministic program (threads = 1):
  /// no addresses, no times, file names without their directories.
  std::string html() const;
  /// One traced group of one launch (indices into what was recorded) as a standalone SVG:
  /// the layout of its sub-groups over its timeline. std::out_of_range if there is none.
  std::string svg(std::size_t launch = 0, std::size_t group = 0) const;
  /// Writes html() to `path`; std::runtime_error naming the path if it cannot.
  void write(const std::string& path) const;

  struct impl;

 private:
  std::shared_ptr<impl> impl_;
};

}  // namespace ki::reference
