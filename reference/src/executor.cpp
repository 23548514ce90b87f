// The reference executor: runs the work-groups of a launch, one fiber per blocked work-item.
//
// How a work-group runs (forward schedule):
//   * A "runner" fiber runs unstarted work-items one after another, as plain calls. A kernel
//     without barriers therefore costs one fiber per group, not one per item.
//   * When a work-item reaches a barrier, it records where, and its fiber (which is now *its*
//     fiber) is suspended. Control jumps straight to the next work-item to run: the next one
//     released from the last barrier, or a new runner fiber for the next unstarted item, or,
//     when nobody can run, the group's driver on the thread's own stack.
//   * The driver then knows that every work-item waits or has exited. If all live items wait at
//     the same barrier, it releases them (in schedule order) and jumps to the first; otherwise
//     it reports, with the items and the source lines, why the group can never finish.
// A work-item that throws, or faults (e.g. overflows its stack), ends its group; the other
// fibers are dropped without unwinding, and the error is kept for ki::synchronize.
//
// What both CPU backends do alike (the barrier state, the hand-over, the messages) is the CPU
// runtime's group runner (ki/cpu/runner.hpp) and reporter; the sub-group operations are its
// table (ki/cpu/sub_group.hpp). The oracle's group runner (group_runner.hpp) adds its scheduling
// and checks; this file runs a launch's groups on the thread pool and assembles its report:
//   * Schedule exploration (schedule.hpp): the start order of unstarted items (item_ptrs_) is
//     forward, reverse, or a per-group random permutation, and a random schedule also shuffles
//     the items released from each barrier; with threads = 1 the groups run in the same kind of
//     order. The seed also reseeds adversarial layouts and the poison. Seed 0 costs nothing.
//   * Poisoned local memory and unspecified lane reads (warnings), the sequence rule of devices
//     without independent sub-groups, segments only where sub-groups are partitionable.
//   * Checked-access mode: ki/cpu/race_detector.hpp (one detector for KI and KA kernels).
//   * The trace hook (ki/reference/events.hpp): nothing on the barrier's fast path when unset.
//   * The spin watch (group_runner.hpp): a work-item polling an atomic without end is reported
//     (no-progress) instead of hanging the launch.
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include <ki/reference/report.hpp>

#include <ki/cpu/groups.hpp>
#include <ki/cpu/ka.hpp>

#include "executor.hpp"
#include "group_runner.hpp"
#include "poison.hpp"
#include "rand_check.hpp"
#include "report_log.hpp"

namespace ki::reference::detail {
using i64 = std::int64_t;
using runner_detail::draw;
using runner_detail::resolve_stack_size;
using runner_detail::resolve_threads;

namespace {

group_runner& runner_for(const backend& b) { return cpu::thread_runner<group_runner>(resolve_stack_size(b)); }

std::atomic<std::uint64_t> launch_counter{0};

tbb::task_arena& arena_for(int threads) {
  static cpu::arena_cache arenas;  // this backend's own
  return arenas.get(threads);
}

/// A launch's warnings (per site: kind, where, message, count) into its report and its result.
void add_warnings(const cpu::warning_sites& sites, report& rep, launch_result& result) {
  for (const auto& [site, e] : sites) {
    const std::string msg = e.message + ", " + std::to_string(e.count) + (e.count == 1 ? " time" : " times");
    rep.diagnostics.push_back({e.kind, severity::warning, {e.where}, e.count, {msg}, msg});
    result.warnings.push_back({e.kind, e.where, e.count, msg});
  }
}

}  // namespace

launch_result execute(const launch_desc& queued) {
  rand_check seeds;
  launch_desc d = queued;
  d.rand_check = &seeds;
  cpu::fiber_core::recheck_fault_handlers();  // a test framework may have replaced them since the last launch
  const i64 ngroups = d.groups[0] * d.groups[1] * d.groups[2];  // fits: resolve_geometry checks the total
  const std::uint64_t serial = ++launch_counter;
  const int threads = resolve_threads(*d.b);
  const auto& sched = d.b->schedule;
  // Weak memory keeps a group's unpublished stores from the later groups: one runner for all.
  const bool one_thread = threads == 1 || ngroups == 1 || d.b->memory == memory_model::weak;
  launch_progress progress;
  progress.alone = one_thread;  // (the groups then run one after another, below)
  d.progress = &progress;

  cpu::lowest_failure<group_failure> failed(ngroups);
  cpu::launch_warnings log;
  global_log globals;
  globals.limit = static_cast<std::size_t>(runner_detail::resolve_checked_elements(*d.b));
  globals.same_value_race = d.b->same_value_writes == same_value_writes::race;
  // race_reports::all: a group's races are recorded, and the launch goes on (its other failures
  // still end it).
  cpu::race_tally tally;
  if (d.b->races == race_reports::all) globals.tally = &tally;
  // One group, run by r: a failure that ends the launch is offered as the launch's.
  const auto run_group = [&](group_runner& r, i64 g) {
    r.reset_arena();
    auto e = r.run(d, serial, g, globals);
    r.flush_warnings(log);
    if (!e) return;
    if (globals.tally == nullptr || e->error.error_kind() != kernel_error::kind::data_race)
      return failed.offer(g, std::move(*e));
    tally.add_error(g, e->error);
  };
  if (one_thread) {
    // Deterministic: groups one after another; exploring, in reverse or a random order.
    group_runner& r = runner_for(*d.b);
    // Weak memory: whatever ends the launch (an exception out of a group's run too), the stores
    // still buffered reach memory before the launch's arguments can go away.
    std::unique_ptr<group_runner, void (*)(group_runner*)> published(&r, [](group_runner* p) { p->end_launch(); });
    std::vector<i64> group_order;
    if (sched.items != order::forward) {
      group_order.resize(static_cast<std::size_t>(ngroups));
      for (i64 g = 0; g < ngroups; ++g)
        group_order[static_cast<std::size_t>(g)] = sched.items == order::reverse ? ngroups - 1 - g : g;
      if (sched.items == order::random) {
        std::uint64_t s = sched.seed * 0x9E3779B97F4A7C15ull + 17;
        for (std::size_t i = group_order.size(); i > 1; --i) std::swap(group_order[i - 1], group_order[draw(s, i)]);
      }
    }
    // As with several threads, the error reported is that of the lowest failing group: in an
    // explored order, after a failure only groups with lower ids still run.
    for (i64 k = 0; k < ngroups; ++k) {
      const i64 g = group_order.empty() ? k : group_order[static_cast<std::size_t>(k)];
      if (failed.stopped(g)) {
        if (group_order.empty()) break;
        continue;
      }
      run_group(r, g);
    }
  } else {
    cpu::group_pool pool;
    pool.threads = threads;
    pool.arena = threads > 1 ? &arena_for(threads) : nullptr;
    cpu::for_group_ranges(ngroups, pool, [&](i64 begin, i64 end) {
      group_runner& r = runner_for(*d.b);
      for (i64 g = begin; g < end && !failed.stopped(g); ++g) run_group(r, g);
    });
  }
  std::optional<group_failure>& first = failed.error();
  if (!first) {
    auto between = cpu::inter_group_race("ki::reference", d.kernel_name, globals, log.by_site);
    if (between && globals.tally != nullptr) tally.add_error(ngroups, between->error);  // (after every group's)
    else first = std::move(between);
  }
  if (!tally.empty()) {  // race_reports::all: the lowest group's race, with every race of the launch
    if (first) first->error = cpu::with_more(first->error, tally.summary());
    else first = group_failure{*tally.error(), tally.total(), tally.instances()};
  }

  launch_result result;
  report rep;
  add_warnings(log.by_site, rep, result);
  if (first) {
    diagnostic dg{ki::reference::to_string(first->error.error_kind()),
                  severity::error,
                  first->where,
                  first->count,
                  first->instances,
                  first->error.what()};
    if (dg.where.empty() && !first->error.where().empty()) dg.where.push_back(first->error.where());
    if (dg.instances.empty()) dg.instances.push_back(first->error.what());
    rep.diagnostics.insert(rep.diagnostics.begin(), std::move(dg));
  }
  if (!rep.empty()) {
    rep.kernel = d.kernel_name;
    rep.schedule = sched;
    rep.profile = d.b->device.name;
    auto shared = publish(std::move(rep));
    if (first) first->error.set_details(std::move(shared));
  }
  if (first) result.error = std::move(first->error);
  return result;
}

namespace {
/// The trace hook's view of a KA launch (ki/reference/events.hpp): phases and synchronize calls.
class ka_trace final : public ki::ka::detail::ka_tracer {
 public:
  ka_trace(runner_detail::hook_slot h, const ki::ka::detail::cpu_launch_desc& d, const backend& b, std::uint64_t serial)
      : h_(h) {
    l_.serial = serial;
    l_.kernel = d.name;
    l_.numgroups = d.groups;
    l_.groupsize = d.groupsize;
    l_.profile = b.device.name;
    l_.seed = b.schedule.seed;
    l_.order = ki::reference::to_string(b.schedule.items);
    l_.ka = true;
    l_.extents = d.range.extents();
  }
  void group_begins(xyz<std::int64_t> g) override { emit(trace_kind::group_start, g, -1, "", {}); }
  void phase(xyz<std::int64_t> g, const source_location& where, std::int64_t item) override {
    emit(trace_kind::phase, g, item, "items", where);
  }
  void sync(xyz<std::int64_t> g, const char* what, const source_location& where) override {
    emit(trace_kind::synchronize, g, -1, what, where);
  }
  void group_ends(xyz<std::int64_t> g, const kernel_error* e) override {
    if (e != nullptr) {
      const auto& s = l_.groupsize;
      trace_event ev{trace_kind::failure, g, e->local().x + s.x * (e->local().y + s.y * e->local().z),
                     ki::reference::to_string(e->error_kind())};
      ev.kernel = l_.kernel;
      ev.message = e->what();
      ev.error = e;
      ev.launch = &l_;
      h_.fn(h_.ctx, ev);
    }
    emit(trace_kind::group_end, g, -1, "", {});
  }

 private:
  void emit(trace_kind k, xyz<std::int64_t> g, std::int64_t item, const char* what, const source_location& where) {
    trace_event e{k, g, item, what, where, nullptr, l_.kernel};
    e.launch = &l_;
    h_.fn(h_.ctx, e);
  }
  runner_detail::hook_slot h_;
  trace_launch l_;
};
}  // namespace

void check_environment(const backend& b) {
  (void)resolve_stack_size(b);
  (void)resolve_threads(b);
  (void)runner_detail::resolve_spin_limit(b);
  (void)runner_detail::resolve_checked_elements(b);
  (void)schedule::from_environment();
  cpu::throw_if_bad_environment("ki::reference");
}

namespace {
/// The oracle's part of a KA launch (cpu::ka_observer): the schedule's order of the work-items in
/// each phase (forward, reverse, or a random permutation per group from the schedule's seed),
/// poison in fresh memory (or the last group's leftovers), checked-access mode, ki::seed's
/// checks, the trace hook.
class ka_oracle final : public cpu::ka_observer {
 public:
  explicit ka_oracle(const backend& b) : sched_(b.schedule) {
    leftovers_ = b.local_memory == local_memory_start::leftovers;
    fill_name = leftovers_ ? "the previous work-group's leftovers (KI_REFERENCE_LOCAL_MEMORY=leftovers)"
                           : "the poison word 0xFFBADBAD";
    check_races = true;  // (in checked-access mode: only such kernels record accesses)
    same_value_race = b.same_value_writes == same_value_writes::race;
    all_races = b.races == race_reports::all;
    checked_elements = static_cast<std::size_t>(runner_detail::resolve_checked_elements(b));
  }
  void order(i64 linear, xyz<i64> a, xyz<i64> size, std::vector<i64>& ids) override {
    using ki::reference::order;
    if (sched_.items == order::forward) return;  // ascending
    for (i64 z = 0; z < a.z; ++z)
      for (i64 y = 0; y < a.y; ++y)
        for (i64 x = 0; x < a.x; ++x) ids.push_back(x + size.x * (y + size.y * z));
    if (sched_.items == order::reverse) {
      std::reverse(ids.begin(), ids.end());
      return;
    }
    std::uint64_t s = sched_.seed ^ (static_cast<std::uint64_t>(linear) * 0xD1B54A32D192ED03ull);
    for (std::size_t i = ids.size(); i > 1; --i) {
      std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
      z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
      z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
      std::swap(ids[i - 1], ids[static_cast<std::size_t>((z ^ (z >> 31)) % i)]);
    }
  }
  // Local and private memory start as poison, as KI's local memory (leftovers: only what no
  // earlier group of the thread's arena had).
  void fresh(void* p, std::size_t bytes, std::size_t reused) override {
    if (!leftovers_) reused = 0;
    if (reused < bytes) poison_fill(static_cast<unsigned char*>(p) + reused, bytes - reused);
  }

 private:
  const schedule sched_;
  bool leftovers_ = false;
};
}  // namespace

launch_result execute_ka(const ki::ka::detail::cpu_launch_desc& d, const backend& b) {
  const int threads = resolve_threads(b);
  cpu::ka_config c{runner_detail::names};
  c.pool.threads = threads;
  c.pool.arena = threads > 1 ? &arena_for(threads) : nullptr;
  c.max_local_memory = b.device.max_local_memory;
  c.stack_size = resolve_stack_size(b);
  c.spin_limit = runner_detail::resolve_spin_limit(b);
  c.spin_limit_name = "ki::reference::backend::spin_limit or KI_REFERENCE_SPIN_LIMIT";
  c.features = {b.device.atomics64, b.device.float64, b.device.name};
  ka_oracle oracle(b);
  c.observer = &oracle;
  rand_check seeds;  // ki::seed's rules, as for KI launches
  oracle.seeds = &seeds;
  cpu::launch_warnings warnings;
  oracle.warnings = &warnings;  // (checked-access mode: races declared intended, reads of memory never written)
  std::optional<ka_trace> trace;
  if (const auto h = current_hook(); h.fn != nullptr) [[unlikely]]
    oracle.tracer = &trace.emplace(h, d, b, ++launch_counter);
  launch_result r;
  r.error = cpu::run_ka(d, c);
  report rep;
  if (r.error)
    rep.diagnostics.push_back({ki::reference::to_string(r.error->error_kind()),
                               severity::error,
                               {r.error->where()},
                               1,
                               {r.error->what()},
                               r.error->what()});
  add_warnings(warnings.by_site, rep, r);
  if (!rep.empty()) {
    rep.kernel = d.name;
    rep.schedule = b.schedule;
    rep.profile = b.device.name;
    auto shared = publish(std::move(rep));
    if (r.error) r.error->set_details(std::move(shared));
  }
  return r;
}

std::int64_t host_threads(const backend& b) {
  const int t = resolve_threads(b);
  return t > 0 ? t : tbb::this_task_arena::max_concurrency();
}

}  // namespace ki::reference::detail

namespace ki::reference {
trace_hook set_trace_hook(trace_hook hook, void* context) {
  std::lock_guard lock(detail::runner_detail::hook_m);
  const trace_hook old = detail::runner_detail::hook_value.fn;
  detail::runner_detail::hook_value = {hook, context};
  detail::runner_detail::hook_set.store(hook != nullptr, std::memory_order_release);
  return old;
}

void* trace_hook_context() {
  std::lock_guard lock(detail::runner_detail::hook_m);
  return detail::runner_detail::hook_value.ctx;
}
}  // namespace ki::reference
