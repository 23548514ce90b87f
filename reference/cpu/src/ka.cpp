// The CPU runtime's KA launches (ki/cpu/ka.hpp).
#include <ki/cpu/ka.hpp>

#include <algorithm>
#include <string>
#include <atomic>
#include <new>
#include <tuple>
#include <vector>

#include <ki/cpu/checked_support.hpp>
#include <ki/cpu/fiber.hpp>
#include <ki/cpu/groups.hpp>
#include <ki/cpu/race_detector.hpp>
#include <ki/cpu/report.hpp>
#include <ki/cpu/spin.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/checked.hpp>

namespace ki::detail::cpu {
using i64 = std::int64_t;
namespace {

/// One thread's KA group runner: the group's memory and the phases' order.
class ka_runner final : public ki::ka::detail::cpu_services, public ki::ka::detail::group_source {
 public:
  ka_runner() = default;
  /// Per launch (the runner is the thread's, kept across launches: its arena stays allocated).
  void prepare(const ka_config& c, const ki::ka::detail::cpu_launch_desc& d, global_log* log,
               launch_progress& progress) {
    c_ = &c;
    obs_ = c.observer;
    checks_ = obs_ != nullptr && obs_->check_races;
    tracer_ = obs_ != nullptr ? obs_->tracer : nullptr;
    log_ = log;
    progress_ = &progress;
    group_.emplace(d.range, d.groupsize, d.groups, *this);
    if (!fibers_ || fibers_->stack_size() != c.stack_size) fibers_.emplace(c.stack_size);
  }

  /// Runs the groups [begin, end) (those below `stop` when each starts) on one fiber; the first
  /// failure, with its group's linear id.
  struct range_result {
    std::optional<kernel_error> error;
    i64 group = -1;
  };
  range_result run_range(const ki::ka::detail::cpu_launch_desc& d, i64 begin, i64 end, const std::atomic<i64>& stop,
                         reporter& rep) {
    job_ = {&d, begin, end, &stop, &rep, {}, begin, begin, false};
    fibers_->reset(2);                // slot 0: the groups' fiber; slot 1: this thread's stack
    current_features = c_->features;  // (the device's, for the range's groups; a fault too ends here)
    start_watch();
    const fiber_core::fault f = fibers_->run_guarded(&drive, this);
    current_watch = nullptr;
    current_features = {};
    if (obs_ != nullptr && obs_->warnings != nullptr) obs_->warnings->merge(warnings_);
    warnings_.clear();
    if (job_.out_of_memory) {
      job_.out_of_memory = false;
      throw std::bad_alloc();  // a kernel's failure, and then no memory to report it
    }
    if (!f.happened) return std::move(job_.result);
    // The fiber is gone (not unwound): undo what it had set, and say where it was.
    clear_thread_flags();
    ki::detail::span_checks_off = false;  // (a fault in an unchecked phase, g.items(ki::ka::unchecked, f))
    const auto& own = group_->state();
    const auto& st = own.view != nullptr ? *own.view : own;  // a statically sized kernel's copy
    rep.set_group(id_of(d, job_.current));
    const std::string what = rep.fault_message(f, fibers_->stack_size());
    const kernel_error::kind kind = reporter::fault_kind(f);
    item_state first;
    range_result r;
    r.group = job_.current;
    if (!st.in_phase) {  // (the line is not known: the last phase's says where it was)
      const std::string when =
          st.phase.line != 0 ? ", after the phase at " + to_string(st.phase) + "," : " (before its first phase)";
      r.error =
          rep.group_error(kind, first, sync_point{group_where_, nullptr}, "its group-level code" + when + " " + what);
    } else if (st.current >= 0) {
      item_state it;
      const auto& g = d.groupsize;
      it.local_linear = st.current;
      it.local_id = {st.current % g.x, st.current / g.x % g.y, st.current / (g.x * g.y)};
      r.error = rep.phase_error(kind, it, st.phase, what);
    } else {
      r.error = rep.group_error(kind, first, sync_point{st.phase, nullptr},
                                "a work-item of the phase at " + to_string(st.phase) + " " + what +
                                    " (this backend runs the phase as one loop; the reference backend names the "
                                    "work-item)");
    }
    if (tracer_ != nullptr) [[unlikely]]  // (the group's fiber is gone: it did not end the group)
      tracer_->group_ends(id_of(d, r.group), &*r.error);
    return r;
  }

  static xyz<i64> id_of(const ki::ka::detail::cpu_launch_desc& d, i64 linear) {
    const auto& n = d.groups;
    if (n.y == 1 && n.z == 1) return {linear, 0, 0};  // (1-D: no division per group)
    return {linear % n.x, (linear / n.x) % n.y, linear / (n.x * n.y)};
  }

  /// The kernel's typed code asks for each group of the range in turn: ends the one that ran
  /// in `st` (its race check, its trace) and starts the next.
  bool next(ki::ka::detail::group_state& st) override {
    auto& j = job_;
    if (j.running) {
      j.running = false;
      progress_->group_ended();
      if (checks_ || tracer_ != nullptr) [[unlikely]] {
        if (auto e = end_group(*j.d)) {
          // race_reports::all: the group's races are recorded, the launch goes on.
          if (e->error_kind() == kernel_error::kind::data_race && log_ != nullptr && log_->tally != nullptr) {
            log_->tally->add_error(j.current, *e);
          } else {
            j.result = {std::move(e), j.current};
            return false;
          }
        }
      }
    }
    const i64 g = j.next;
    if (g >= j.end || g >= j.stop->load(std::memory_order_relaxed)) return false;
    j.next = g + 1;
    j.current = g;
    begin_group(*j.d, g, st);
    running_ = &st;
    watch_.forget();  // (a new group: what the last one saw is no repeat)
    watch_.ka_item = obs_ != nullptr ? &st.current : nullptr;
    j.running = true;
    return true;
  }
  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    for (const auto& l : locals_)
      if (l.key == key) return l.p;
    // The launch's dynamic local memory counts from the group's start, whatever it has taken.
    if (local_bytes_ + dynamic_budget_ + bytes > c_->max_local_memory) {
      group_where_ = where;
      throw reporter::local_memory_exceeded(where, bytes, local_bytes_, c_->max_local_memory, dynamic_budget_);
    }
    return allocate_local(key, bytes, align, where);
  }
  void* dynamic_local_memory(const void* key, xyz<i64> e, std::size_t size, std::size_t align, const char* type,
                             const source_location& where) override {
    const auto fail = [&](kernel_error::kind k, const std::string& why) {
      group_where_ = where;
      throw item_failure{k, "called g.localmem<" + std::string(type) + ">(key, " + std::to_string(e.x) + ", " +
                                std::to_string(e.y) + ", " + std::to_string(e.z) + ") at " + to_string(where) + ": " +
                                why};
    };
    for (const auto& s : dynamic_sites_)
      if (s.key == key) {
        if (s.extents.x != e.x || s.extents.y != e.y || s.extents.z != e.z)
          fail(kernel_error::kind::invalid_collective,
               "the call site ran earlier in this work-group with extents (" + std::to_string(s.extents.x) + ", " +
                   std::to_string(s.extents.y) + ", " + std::to_string(s.extents.z) +
                   "); its memory keeps them (the extents must be values of group-level code, the same each time)");
        return s.p;
      }
    if (e.x < 0 || e.y < 0 || e.z < 0) fail(kernel_error::kind::invalid_collective, "an extent must be at least 0");
    if (dynamic_sites_.size() == static_cast<std::size_t>(ki::ka::detail::max_dynamic_localmem_sites))
      fail(kernel_error::kind::invalid_collective,
           "a kernel may have at most " + std::to_string(ki::ka::detail::max_dynamic_localmem_sites) +
               " call sites of g.localmem with run-time extents (a GPU thread keeps their places in a table)");
    // Taken from the launch's bytes as a GPU takes it: in call order, each aligned for its type.
    const std::size_t offset = (dynamic_used_ + align - 1) / align * align;
    std::size_t bytes = 0;
    const bool huge = __builtin_mul_overflow(static_cast<std::size_t>(e.x), static_cast<std::size_t>(e.y), &bytes) ||
                      __builtin_mul_overflow(bytes, static_cast<std::size_t>(e.z), &bytes) ||
                      __builtin_mul_overflow(bytes, size, &bytes);
    if (huge || offset + bytes > dynamic_budget_)
      fail(kernel_error::kind::resource,
           "it needs " + (huge ? std::string("more than SIZE_MAX") : std::to_string(bytes)) +
               " bytes of the launch's dynamic_local_memory = " + std::to_string(dynamic_budget_) + " bytes" +
               (dynamic_used_ > 0 ? ", of which the group's earlier g.localmem calls take " + std::to_string(offset) +
                                        " (with alignment)"
                                  : std::string()) +
               (huge ? std::string() : ": launch with .dynamic_local_memory = " + std::to_string(offset + bytes)) +
               (huge || offset + bytes <= c_->max_local_memory
                    ? std::string(" or more")
                    : std::string(", more than the device's ") + std::to_string(c_->max_local_memory)));
    dynamic_used_ = offset + bytes;
    void* p = bytes > 0 ? allocate_local(key, bytes, align, where) : nullptr;
    dynamic_sites_.push_back({key, e, p});
    return p;
  }
  ki::ka::detail::rand_stream* rand_streams() override {
    const std::size_t n =
        static_cast<std::size_t>(group_->state().size.x * group_->state().size.y * group_->state().size.z);
    auto* s = static_cast<ki::ka::detail::rand_stream*>(
        arena_.alloc(n * sizeof(ki::ka::detail::rand_stream), alignof(ki::ka::detail::rand_stream)));
    for (std::size_t k = 0; k < n; ++k) s[k] = {rand_seed_, 0, false};
    return s;
  }
  void rand_seeded(xyz<i64> local, std::uint64_t s, std::uint32_t draws, const source_location& where) override {
    if (obs_ == nullptr || obs_->seeds == nullptr) return;
    group_state_for_rand gs(*this, local);
    obs_->seeds->seeded(gs.item, s, draws, where);
  }
  void rand_unseeded(xyz<i64> local, const source_location& where) override {
    if (obs_ == nullptr || obs_->seeds == nullptr) return;
    group_state_for_rand gs(*this, local);
    obs_->seeds->unseeded_draw(gs.item, where);
  }
  /// The work-item as the checks of ki::seed name it (its group and local ids).
  struct group_state_for_rand {
    group_state_for_rand(const ka_runner& r, xyz<i64> local) {
      group.group_id = r.running_ != nullptr ? r.running_->id : xyz<i64>{};
      item.group = &group;
      item.local_id = local;
    }
    ki::detail::cpu::group_state group;
    ki::detail::cpu::item_state item;
  };
  /// A new allocation of the group's local memory (filled as the configuration says).
  void* allocate_local(const void* key, std::size_t bytes, std::size_t align, const source_location& where) {
    std::size_t reused = 0;
    void* p = arena_.alloc(bytes, align, &reused);
    if (obs_ != nullptr) obs_->fresh(p, bytes, reused);
    locals_.push_back({key, p, bytes, where});
    local_bytes_ += bytes;
    return p;
  }
  void* private_memory(std::size_t bytes, std::size_t align, const source_location& where, bool filled) override {
    void* p = arena_.alloc(bytes, align);
    if (obs_ != nullptr) obs_->fresh(p, bytes, 0);
    if (checks_) privates_.push_back({nullptr, p, bytes, where, filled});
    return p;
  }
  using local_site = local_alloc;
  // --- the spin watch (ki/cpu/spin.hpp; docs/debugging.md, "Spin-waits") ---
  //
  // A phase runs each work-item to its end, one after another, so a work-item that polls an
  // atomic for another one of its group that has not run the phase yet waits forever. The
  // watch samples the atomics (exact where the runner tracks the running work-item, the
  // oracle); after spin_limit repeats the judge decides. A phase run as one loop (simd_cpu)
  // does not tell its work-items apart: there the judge also wants a second of repeats.
  void start_watch() {
    watch_ = {};
    judge_ = {};
    watch_.limit = c_->spin_limit;
    watch_.sampling = obs_ == nullptr;
    watch_.stuck = &ka_runner::stuck_entry;
    watch_.ctx = this;
    current_watch = &watch_;
    watch_countdown = 0;
  }
  static void stuck_entry(void* self, const void* p, const char* what, const source_location& where) {
    static_cast<ka_runner*>(self)->stuck(p, what, where);
  }
  void stuck(const void* p, const char* what, const source_location& where) {
    const auto* b = static_cast<const unsigned char*>(p);
    const bool in_local = std::any_of(locals_.begin(), locals_.end(), [&](const local_site& l) {
      return b >= static_cast<const unsigned char*>(l.p) && b < static_cast<const unsigned char*>(l.p) + l.bytes;
    });
    if (!judge_.stuck(watch_, *progress_, in_local, obs_ != nullptr)) return;
    throw item_failure{kernel_error::kind::no_progress,
                       no_progress_text(what, where, watch_.repeats, "g.synchronize() or group collective",
                                        judge_.why(*progress_, in_local),
                                        "here a phase runs its work-items one after another, each to its end",
                                        others_in_phase(), c_->spin_limit_name, watch_.limit),
                       false, -1, where};
  }
  /// What the other work-items of the group do while the running one spins in its phase.
  std::string others_in_phase() const {
    const ki::ka::detail::group_state& st = *running_;
    if (!st.in_phase) return "none runs while its group-level code runs (outside any phase)";
    const std::string phase = to_string(st.phase);
    if (st.current < 0)  // (a phase run as one loop)
      return "those before it in the phase at " + phase +
             " have run it to its end, those after it have not started "
             "it (this backend runs the phase as one loop; the reference backend names them)";
    std::vector<i64> order;
    if (st.order_ascending || st.order == nullptr) {
      const auto& a = st.active;
      const auto& s = st.size;
      for (i64 z = 0; z < a.z; ++z)
        for (i64 y = 0; y < a.y; ++y)
          for (i64 x = 0; x < a.x; ++x) order.push_back(x + s.x * (y + s.y * z));
    } else {
      order.assign(st.order, st.order + st.order_count);
    }
    const auto me = std::find(order.begin(), order.end(), st.current);
    const std::vector<i64> before(order.begin(), me);
    const std::vector<i64> after(me == order.end() ? me : me + 1, order.end());
    std::string r;
    if (!before.empty())
      r = std::string(before.size() == 1 ? "item " : "items ") + ranges(before) +
          (before.size() == 1 ? " has" : " have") + " run the phase at " + phase + " to its end";
    if (!after.empty())
      r += (r.empty() ? "" : "; ") + std::string(after.size() == 1 ? "item " : "items ") + ranges(after) +
           (after.size() == 1 ? " has" : " have") + " not started it" +
           (before.empty() ? " (the phase at " + phase + ")" : "");
    return r.empty() ? "none (it is the group's only work-item)" : r;
  }

  [[noreturn]] void misplaced(const char* what, const source_location& where, const source_location& phase) override {
    throw item_failure{kernel_error::kind::invalid_collective,
                       "called " + std::string(what) + " at " + to_string(where) +
                           " inside its phase g.items(...) at " + to_string(phase) +
                           ": group-level code (synchronize, reduce, scan, items) runs between phases, not in a "
                           "work-item's statements",
                       false, -1, where};
  }
  [[noreturn]] void bad_ids(i64 first, i64 count, i64 stride, const source_location& where) override {
    group_where_ = where;
    const char* why = first < 0   ? "first must be at least 0"
                      : count < 0 ? "count must be at least 0"
                                  : "stride must be at least 1";
    throw item_failure{kernel_error::kind::invalid_collective,
                       "called g.items(ki::ka::local_ids{.first = " + std::to_string(first) +
                           ", .count = " + std::to_string(count) + ", .stride = " + std::to_string(stride) +
                           "}, f) at " + to_string(where) + ": " + why};
  }
  [[noreturn]] void bound_exceeded(const char* what, i64 bound, i64 size, const source_location& where) override {
    group_where_ = where;
    throw item_failure{kernel_error::kind::invalid_collective,
                       "called " + std::string(what) + " at " + to_string(where) +
                           " with groupsize = " + std::to_string(bound) + ", a bound below the work-group's " +
                           std::to_string(size) + " work-items"};
  }

 private:
  using local = local_alloc;
  /// The range of groups the fiber runs, and how far it got.
  struct range_job {
    const ki::ka::detail::cpu_launch_desc* d = nullptr;
    i64 begin = 0, end = 0;
    const std::atomic<i64>* stop = nullptr;
    reporter* rep = nullptr;
    range_result result;
    i64 current = 0;             ///< the group started last (its linear id)
    i64 next = 0;                ///< the group to start next
    bool running = false;        ///< `current` has started and not ended
    bool out_of_memory = false;  ///< the failure's report could not be made (thrown after the fiber)
  };
  // On the thread's own stack, inside run_guarded: the fiber runs the groups, then resumes it.
  static void drive(void* self) { static_cast<ka_runner*>(self)->fibers_->spawn(1, &entry, self); }
  static int entry(void* self) {
    static_cast<ka_runner*>(self)->run_groups();
    return 1;
  }

  /// On the fiber: the kernel's typed code runs the range's groups (next() gives them). The
  /// thread's flags are set once for the range.
  void run_groups() {
    auto& j = job_;
    const auto& d = *j.d;
    group_->set_view(nullptr);  // (a fault in an earlier range left it set)
    // While this thread runs the range, only it touches the groups' local and private memory:
    // atomics on it may be plain operations (ki/atomic.hpp says why that is exact).
    std::tie(private_begin, private_end) = arena_.first();
    ka_running = true;  // (a KI device function called in the kernel says so)
    try {
      d.run_groups(d.ctx, *group_, *this);
    } catch (...) {
      clear_thread_flags();
      j.running = false;
      try {
        j.result = {failure_of(d, *j.rep), j.current};
        if (tracer_ != nullptr) [[unlikely]]
          tracer_->group_ends(id_of(d, j.current), &*j.result.error);
      } catch (const std::bad_alloc&) {  // (no exception may leave the fiber)
        j.out_of_memory = true;
      }
      return;
    }
    clear_thread_flags();
  }
  static void clear_thread_flags() {
    ka_running = false;
    private_begin = private_end = 0;
    ki::detail::checked::active = nullptr;
  }

  /// Before the kernel runs for the group `linear`: its memory, its place, its order, in st.
  void begin_group(const ki::ka::detail::cpu_launch_desc& d, i64 linear, ki::ka::detail::group_state& st) {
    const xyz<i64> id = id_of(d, linear);
    if (tracer_ != nullptr) [[unlikely]]
      tracer_->group_begins(id);
    arena_.reset();
    locals_.clear();
    privates_.clear();
    group_where_ = {};
    local_bytes_ = 0;
    dynamic_budget_ = d.dynamic_local_memory;
    rand_seed_ = d.rand_seed;
    dynamic_used_ = 0;
    dynamic_sites_.clear();
    if (obs_ == nullptr) [[likely]] {  // phases as plain loops
      ki::ka::detail::start_group(st, id, nullptr, 0);
    } else {
      ki::ka::detail::start_group(st, id, nullptr, 0);  // (its active work-items)
      order_.clear();
      obs_->order(linear, st.active, d.groupsize, order_);
      if (order_.empty()) {  // ascending, each work-item marked
        // (Forward phases run the active work-items directly: the order is only a marker.)
        static constexpr i64 forward = 0;
        ki::ka::detail::start_group(st, id, &forward, 0, true, tracer_);
      } else {
        ki::ka::detail::start_group(st, id, order_.data(), static_cast<i64>(order_.size()), false, tracer_);
      }
    }
    if (checks_) {
      checked_group checked;
      checked.words = &ka_race_words;
      checked.prefix = c_->names.prefix;
      checked.size = d.groupsize;
      checked.ka = &group_->state();
      checked.count = d.groupsize.x * d.groupsize.y * d.groupsize.z;
      checked.locals = &locals_;
      checked.privates = &privates_;
      checked.warnings = &warnings_;
      checked.fill = obs_->fill_name;
      checked.same_value_race = obs_->same_value_race;
      checked.launch = log_;
      races_.start_group(checked, linear, id);
      // (Only kernels compiled in checked mode call it; instrumented ones (KI_CHECKED_HOOKS) for
      // every load and store, the runtime's typed code around the kernel too: from here on.)
      ki::detail::checked::active = &races_;
    }
  }

  /// After the kernel ran for the group job_.current without an exception: its races, its trace.
  std::optional<kernel_error> end_group(const ki::ka::detail::cpu_launch_desc& d) {
    std::optional<kernel_error> e;
    if (checks_)
      if (auto f = races_.finish(d.name, *log_)) e = std::move(f->error);
    if (tracer_ != nullptr) [[unlikely]]
      tracer_->group_ends(id_of(d, job_.current), e ? &*e : nullptr);
    return e;
  }

  /// The report of the exception being handled, thrown by the kernel for the group job_.current.
  std::optional<kernel_error> failure_of(const ki::ka::detail::cpu_launch_desc& d, reporter& rep) {
    const item_failure f = current_failure();
    rep.set_group(id_of(d, job_.current));
    const auto& pf = group_->failure();
    if (pf.happened) {
      item_state it;
      it.local_id = pf.local;
      it.local_linear = pf.local.x + d.groupsize.x * (pf.local.y + d.groupsize.y * pf.local.z);
      return rep.phase_error(f.kind, it, pf.where, f.message, f.at.line != 0 ? &f.at : nullptr);
    }
    item_state first;
    if (group_where_.line == 0) {  // (where the runtime does not know the line: the phases around it, as for a fault)
      const auto& own = group_->state();
      const auto& st = own.view != nullptr ? *own.view : own;
      const std::string when =
          st.phase.line != 0 ? ", after the phase at " + to_string(st.phase) + "," : " (before its first phase)";
      return rep.group_error(f.kind, first, sync_point{st.phase, nullptr},
                             "its group-level code" + when + " " + f.message);
    }
    return rep.group_error(f.kind, first, sync_point{group_where_, nullptr}, "its group-level code " + f.message);
  }

  std::optional<fiber_core> fibers_;
  range_job job_;
  atomic_watch watch_;
  spin_judge judge_;
  launch_progress* progress_ = nullptr;
  const ki::ka::detail::group_state* running_ = nullptr;  ///< the state the kernel runs the group in
  race_detector races_;
  global_log* log_ = nullptr;
  warning_sites warnings_;  ///< checked-access mode: the warnings of the groups run since the last range
  const ka_config* c_ = nullptr;
  ka_observer* obs_ = nullptr;                   ///< the launch's (c_->observer), or null
  bool checks_ = false;                          ///< checked-access mode's race checks
  ki::ka::detail::ka_tracer* tracer_ = nullptr;  ///< the observer's, while a trace hook watches
  std::optional<ki::ka::cpu_group> group_;
  local_arena arena_{1 << 20};  // (its first chunk is the memory whose atomics may be plain)
  std::vector<local> locals_;
  std::vector<local> privates_;  ///< checked-access mode: the kernel's private memory
  std::size_t local_bytes_ = 0;
  /// g.localmem<T>(key, extents): the launch's dynamic_local_memory, the bytes the group's calls
  /// have taken (aligned as on a GPU) and the call sites with their extents and memory.
  struct dynamic_site {
    const void* key;
    xyz<i64> extents;
    void* p;
  };
  std::size_t dynamic_budget_ = 0, dynamic_used_ = 0;
  std::uint64_t rand_seed_ = 0;  ///< the launch's (ki::rand<T>(i) without ki::seed)
  std::vector<dynamic_site> dynamic_sites_;
  std::vector<i64> order_;
  source_location group_where_{};  ///< where the group-level code failed, when the runtime knows
};

}  // namespace

std::optional<kernel_error> run_ka(const ki::ka::detail::cpu_launch_desc& d, const ka_config& c) {
  const i64 ngroups = d.groups.x * d.groups.y * d.groups.z;
  if (ngroups == 0 || d.range.count() == 0) return std::nullopt;
  lowest_failure<kernel_error> failed(ngroups);
  global_log log;  // checked-access mode: every group's global accesses
  const bool checks = c.observer != nullptr && c.observer->check_races;
  if (checks) {
    log.limit = c.observer->checked_elements;
    log.same_value_race = c.observer->same_value_race;
  }
  race_tally tally;
  if (checks && c.observer->all_races) log.tally = &tally;
  launch_progress progress;  // (the spin watch)
  progress.alone = c.pool.one_thread(ngroups);
  fiber_core::recheck_fault_handlers();
  for_group_ranges(ngroups, c.pool, [&](i64 begin, i64 end) {
    if (failed.stopped(begin)) return;
    thread_local ka_runner runner;
    runner.prepare(c, d, checks ? &log : nullptr, progress);
    reporter rep(c.names);
    rep.set_kernel(d.name);
    auto res = runner.run_range(d, begin, end, failed.stop(), rep);
    if (res.error) failed.offer(res.group, std::move(*res.error));
  });
  std::optional<kernel_error>& first = failed.error();
  if (!first && checks) {
    warning_sites intended;
    auto between = inter_group_race(c.names.prefix, d.name, log, intended);
    if (c.observer->warnings != nullptr) c.observer->warnings->merge(intended);
    if (between && log.tally != nullptr) log.tally->add_error(ngroups, between->error);  // (after every group's)
    else if (between) first = std::move(between->error);
  }
  if (log.tally != nullptr && !log.tally->empty()) {  // race_reports::all: every race of the launch
    if (first) first = with_more(*first, log.tally->summary());
    else first = log.tally->error();
  }
  return first;
}

}  // namespace ki::detail::cpu
