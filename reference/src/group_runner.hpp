// Private: the oracle's group runner, which runs one work-group of a launch on this thread
// (executor.cpp says how). Included by executor.cpp only.
#pragma once
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstdio>
#include <cstring>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/race_detector.hpp>
#include <ki/cpu/runner.hpp>
#include <ki/cpu/spin.hpp>
#include <ki/cpu/sub_group.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/reference/backend.hpp>
#include <ki/reference/events.hpp>
#include <ki/reference/report.hpp>
#include <ki/source_location.hpp>

#include "executor.hpp"
#include "layout.hpp"
#include "poison.hpp"
#include "store_buffer.hpp"
#include "sub_group.hpp"

#ifndef KI_REFERENCE_NO_ALWAYS_ON_CHECKS
#define KI_REFERENCE_NO_ALWAYS_ON_CHECKS 0
#endif

namespace ki::reference::detail {
namespace cpu = ki::detail::cpu;
namespace checked = ki::detail::checked;
// Checked-access mode's record, shared with the KA layer's launches (ki/cpu/race_detector.hpp).
using cpu::global_log;
using cpu::group_failure;
using cpu::local_alloc;
using cpu::race_detector;
using cpu::race_note;
using cpu::warning_sites;

namespace runner_detail {
using i64 = std::int64_t;

using cpu::barrier_what;
using cpu::collective_name;
using cpu::item_failure;
using cpu::same_point;
using cpu::to_string;

inline std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A uniformly drawn position below n (n > 0).
inline std::size_t draw(std::uint64_t& s, std::size_t n) { return static_cast<std::size_t>(splitmix64(s) % n); }

inline std::size_t env_size(const char* name, std::size_t fallback) {
  return cpu::env_size("ki::reference", name, fallback);
}

inline std::size_t resolve_stack_size(const backend& b) {
  static const std::size_t from_env = env_size("KI_REFERENCE_STACK_SIZE", 256 * 1024);
  return b.stack_size != 0 ? b.stack_size : from_env;
}

inline std::uint64_t resolve_checked_elements(const backend& b) {
  static const std::uint64_t from_env = env_size("KI_REFERENCE_CHECKED_ELEMENTS", std::size_t{1} << 24);
  return b.checked_elements != 0 ? b.checked_elements : from_env;
}
inline std::uint64_t resolve_spin_limit(const backend& b) {
  static const std::uint64_t from_env = env_size("KI_REFERENCE_SPIN_LIMIT", std::size_t{1} << 20);
  return b.spin_limit != 0 ? b.spin_limit : from_env;
}

inline int resolve_threads(const backend& b) {
  static const int from_env = static_cast<int>(env_size("KI_REFERENCE_THREADS", 0));
  return b.threads > 0 ? b.threads : from_env;
}

constexpr cpu::backend_names names{"ki::reference", "ki::reference::backend::stack_size or KI_REFERENCE_STACK_SIZE"};

/// A call site that no barrier has (not even one given an empty source_location by hand).
constexpr char no_site_file[] = "(no call site)";
constexpr source_location no_site{no_site_file, 0, 0};

/// On a cache-line boundary: the index queries read one line of it (cpu::item_state), and a
/// barrier's fast path touches none of it.
struct alignas(64) item : cpu::item_state {
  cpu::sync_record sync;  // what errors name (ki/cpu/runner.hpp)
};

/// The trace hook (ki/reference/events.hpp): read once per group.
struct hook_slot {
  trace_hook fn = nullptr;
  void* ctx = nullptr;
};
inline std::atomic<bool> hook_set{false};
inline std::mutex hook_m;
inline hook_slot hook_value;

inline hook_slot current_hook() {
  if (!hook_set.load(std::memory_order_acquire)) [[likely]]
    return {};
  std::lock_guard lock(hook_m);
  return hook_value;
}

class group_runner final : public cpu::executor, public cpu::group_runner_base<group_runner, item> {
  friend cpu::group_runner_base<group_runner, item>;
  using status = cpu::item_status;

 public:
  explicit group_runner(std::size_t stack_size) : group_runner_base(stack_size, names) {}

  /// Runs one group of launch d. Returns the error that ended it, if any.
  std::optional<group_failure> run(const launch_desc& d, std::uint64_t launch_serial, i64 group_linear,
                                   global_log& globals) {
    prepare(d, launch_serial);
    const i64 gx = d.groups[0], gy = d.groups[1];
    group_linear_ = group_linear;
    gs_.set_group_id({group_linear % gx, (group_linear / gx) % gy, group_linear / (gx * gy)});
    report_.set_group(gs_.group_id);
    if (sched_.items == order::random) {
      // A fresh random start order per group (reproducible from the seed and the group id).
      rng_ = sched_.seed ^ (static_cast<std::uint64_t>(group_linear) * 0xD1B54A32D192ED03ull);
      for (std::size_t i = item_ptrs_.size(); i > 1; --i) std::swap(item_ptrs_[i - 1], item_ptrs_[draw(rng_, i)]);
      for (std::size_t i = 0; i < item_ptrs_.size(); ++i)
        position_[static_cast<std::size_t>(item_ptrs_[i]->local_linear)] = static_cast<i64>(i);
    }
    // Statuses are only meaningful for started items (index < loop_.next), and a group that
    // finished normally leaves none waiting; only a failed one needs them reset.
    if (dirty_statuses_) std::fill(status_.begin(), status_.end(), status::running);
    dirty_statuses_ = false;
    loop_.next = 0;
    start_round_state();
    fast_point_ = no_site;
    for (auto& p : pending_) p.clear();
    masked_.clear();
    seq_count_.assign(static_cast<std::size_t>(layout_.count), 0);
    seq_log_.clear();
    width_log_.clear();
    locals_.clear();
    local_bytes_ = 0;
    dynamic_taken_ = false;
    arena_.reset();
    if (d.b->device.shared_section_bytes > 0) [[unlikely]]
      take_shared_section(d.b->device);
    fibers_.reset(static_cast<int>(n_) + 1);
    const hook_slot h = current_hook();
    hook_ = h.fn, hook_ctx_ = h.ctx;
    if (hook_) [[unlikely]]
      describe_launch(d, launch_serial);
    loop_.watch = hook_ || weak_memory_ ? &group_runner::on_item : nullptr;
    loop_.watch_ctx = this;
    trace_round_ = 0;
    cpu::checked_group checked;
    checked.size = gs_.local_size;
    checked.items = items_.data();
    checked.stride = sizeof(item);
    checked.count = n_;
    checked.locals = &locals_;
    checked.warnings = &unspecified_;
    checked.fill = fill_name();
    checked.same_value_race = same_value_race_;
    checked.fast_point = &fast_point_;
    checked.closed = no_site;
    checked.on_access = hook_ ? &group_runner::on_access : nullptr;
    checked.on_access_ctx = this;
    checked.on_race = hook_ ? &group_runner::on_race : nullptr;
    checked.launch = &globals;
    races_.start_group(checked, group_linear, gs_.group_id);
    if (weak_memory_) weak_.start_group(n_);
    races_.set_store_buffer(weak_memory_ ? &weak_ : nullptr);
    races_.set_interval(round_);
    checked::active = &races_;
    start_watch();
    cpu::current_exec = this;  // (current is set per work-item)
    cpu::current_group = &gs_;
    cpu::current_features = {d_->b->device.atomics64, d_->b->device.float64, d_->b->device.name};
    cpu::gpu_dialect = d_->b->device.gpu_dialect;
    cpu::gpu_user_site = nullptr;
    if (hook_) [[unlikely]]
      emit(trace_kind::group_start, -1, "", {});

    const auto fault = fibers_.run_guarded(&group_runner::drive, this);
    cpu::current_watch = nullptr;
    checked::active = nullptr;
    cpu::current_exec = nullptr;
    cpu::current_group = nullptr;
    cpu::current_features = {};
    cpu::gpu_dialect = 0;
    cpu::gpu_user_site = nullptr;
    const item* faulting = static_cast<const item*>(cpu::current);  // the item that faulted, if any
    dirty_statuses_ = true;                                         // cleared below when the group finished normally
    cpu::current = nullptr;
    if (auto e = take_failure(fault, faulting)) {
      if (weak_memory_) weak_.end_group(true);
      races_.drop_pending();
      if (hook_) [[unlikely]]
        emit_end(&*e);
      return group_failure{std::move(*e)};
    }
    dirty_statuses_ = false;                                          // every work-item exited: all running
    d.progress->groups_done.fetch_add(1, std::memory_order_relaxed);  // (the spin watch of other threads)
    if (weak_memory_) weak_.end_group(false);
    auto f = races_.finish(d_->kernel_name, globals);
    if (hook_) [[unlikely]]
      emit_end(f ? &f->error : nullptr);
    return f;
  }

  /// Moves this runner's unspecified-read counts into the launch's log.
  void flush_warnings(cpu::launch_warnings& log) { log.merge(unspecified_); }

  void reset_arena() { arena_.reset(); }
  /// Weak memory: the launch (run on this runner alone) ended; its buffered stores are published.
  void end_launch() { weak_.end_launch(); }

  // --- cpu::executor: called from inside work-items ---

  // The barrier is the oracle's hot path (tools/bench: BM_ki_barrier). In the steady state (the
  // call site of the round's first arrival, a released work-item to run next; fast_point_ says
  // when that may be taken) it writes a status byte and an entry of waiting_, touches nothing
  // of the work-item's record, and ends in a tail call to the switch: a suspended work-item's
  // stack holds nothing of the barrier, and the fast path pushes no register of its own.
  // Everything else: barrier_slow.
  void barrier(source_location where) override {
    const std::size_t self = slot_of(current());
#if KI_REFERENCE_NO_ALWAYS_ON_CHECKS
    // Measurement only (docs/debugging.md, "What the checks cost"): the barrier without the
    // checks that are always on. Divergence is then neither detected nor reported.
    const bool same_site = true;
#else
    const bool same_site = cpu::same_site(where, fast_point_);
#endif
    if (!same_site || ready_pos_ == ready_.size()) [[unlikely]]
      return barrier_slow(self, where);
    status_[self] = status::waiting;
    waiting_[static_cast<std::size_t>(arrived_++)] = static_cast<int>(self);
    switch_to_next(static_cast<int>(self));
  }

  // (The location by value: a by-value parameter whose address is passed on would stop GCC from
  // tail-calling the switch.)
  [[gnu::noinline]] void barrier_slow(std::size_t self, source_location where) {
    status_[self] = status::waiting;
    races_.flush();
    if (arrived_ == 0) round_point_ = fast_point_ = where;
#if !KI_REFERENCE_NO_ALWAYS_ON_CHECKS
    else other_barrier(static_cast<int>(self), where);
#endif
    if (hook_) [[unlikely]] {
      emit(trace_kind::arrive, static_cast<i64>(self), barrier_what, where);
      fast_point_ = no_site;  // every arrival comes here while a hook watches
    }
    waiting_[static_cast<std::size_t>(arrived_++)] = static_cast<int>(self);
    suspend(static_cast<int>(self));
  }

  void collective(cpu::collective& c) override {
    item& it = current();
    watch_.forget();  // a sync point (the spin watch)
    races_.flush();
    if (cpu::masked(c.kind)) [[unlikely]]
      return masked_collective(it, c);
    const i64 W = gs_.sub_group_width;
    note_collective(it, c);
    if (std::string bad = check_arguments(c, W); !bad.empty())
      throw item_failure{kernel_error::kind::invalid_collective, bad + " (at " + to_string(c.where) + ")"};
    // The scope: the caller's segment where segments may diverge, else the whole sub-group.
    const i64 sg = it.sub_group_id, lane = it.sub_group_lane;
    const bool segment = c.width > 0 && d_->b->device.partitionable_subgroups;
    if (segment) check_width(sg, lane, c);
    const i64 begin = segment ? lane / c.width * c.width : 0, lanes = segment ? c.width : W;
    const i64 present = std::max<i64>(0, std::min<i64>(lanes, it.sub_group_size - begin));
    const std::size_t self = slot_of(it);
    status_[self] = status::in_collective;
    it.sync.coll = &c;
    ++in_collective_;
    if (hook_) [[unlikely]]
      emit(trace_kind::arrive, it.local_linear, collective_name(c.kind), c.where, nullptr, c.width);
    auto& scopes = pending_[static_cast<std::size_t>(sg)];
    auto p = std::find_if(scopes.begin(), scopes.end(),
                          [&](const pending_scope& x) { return x.begin == begin && x.lanes == lanes; });
    if (p == scopes.end()) p = scopes.insert(scopes.end(), pending_scope{begin, lanes, 0});
    if (++p->arrived < present) return suspend(static_cast<int>(self));
    scopes.erase(p);
    resolve(sg, begin, lanes);  // the last to arrive performs it and runs on
    status_[self] = status::running;
  }

  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    for (const auto& l : locals_)
      if (l.key == key) return l.p;
    const std::size_t limit = d_->b->device.max_local_memory;
    // The launch's dynamic local memory counts from the group's start, allocated or not.
    const bool dynamic = key == &cpu::dynamic_local_key;
    const std::size_t reserved = dynamic || dynamic_taken_ ? 0 : d_->dynamic_local_memory;
    if (local_bytes_ + reserved + bytes > limit)
      throw cpu::reporter::local_memory_exceeded(where, bytes, local_bytes_, limit, reserved,
                                                 dynamic ? "dynamic_localmemory" : "localmemory");
    dynamic_taken_ = dynamic_taken_ || dynamic;
    std::size_t reused = 0;
    void* p = arena_.alloc(bytes, align, &reused);
    if (!leftovers_) reused = 0;
    fill_fresh(static_cast<unsigned char*>(p) + reused, bytes - reused);
    locals_.push_back({key, p, bytes, where});
    local_bytes_ += bytes;
    return p;
  }
  /// What unwritten local memory holds, in words (the uninitialised-read warning).
  const char* fill_name() const {
    if (leftovers_) return "the previous work-group's leftovers (KI_REFERENCE_LOCAL_MEMORY=leftovers)";
    return sched_.seed != 0 ? "seeded random bytes" : "the poison word 0xFFBADBAD";
  }
  /// Local memory no work-group wrote: the poison (exploring: the seed's poison bytes).
  void fill_fresh(void* p, std::size_t bytes) {
    if (bytes == 0) return;
    if (sched_.seed != 0) poison_.fill(p, bytes);
    else poison_fill(p, bytes);
  }
  /// Plain CUDA's __shared__ variables (profile::shared_section): the group's local memory, as
  /// if allocated at its start.
  void take_shared_section(const profile& p) {
    static constexpr char key = 0;
    static constexpr char file[] = "(__shared__ variables)";
    if (p.shared_section_bytes > d_->b->device.max_local_memory)
      throw std::invalid_argument("ki::reference: the program's __shared__ variables take " +
                                  std::to_string(p.shared_section_bytes) + " bytes, more than the device's " +
                                  std::to_string(d_->b->device.max_local_memory) + " bytes of local memory");
    // Leftovers: one section for the whole program, which groups take one at a time; poisoned
    // by the first group only.
    static std::atomic<const void*> poisoned{nullptr};
    if (!leftovers_ || poisoned.exchange(p.shared_section) != p.shared_section)
      fill_fresh(p.shared_section, p.shared_section_bytes);
    locals_.push_back({&key, p.shared_section, p.shared_section_bytes, {file, 0, 0}});
    local_bytes_ += p.shared_section_bytes;
  }

  void* dynamic_local_memory(std::size_t* bytes, const source_location& where) override {
    *bytes = d_->dynamic_local_memory;
    if (*bytes == 0) return nullptr;
    return local_memory(&cpu::dynamic_local_key, *bytes, cpu::dynamic_local_align, where);
  }
  const source_location* local_memory_site(const void* p) const override {
    const auto* c = static_cast<const char*>(p);
    for (const auto& l : locals_)
      if (c >= static_cast<const char*>(l.p) && c < static_cast<const char*>(l.p) + l.bytes) return &l.where;
    return nullptr;
  }

 private:
  struct pending_scope {
    i64 begin, lanes, arrived;
  };

  // --- the spin watch (ki/detail/cpu/executor.hpp; docs/debugging.md, "Spin-waits") ---
  //
  // The model promises no forward progress between the work-items of a group, and the oracle
  // runs them one at a time, each until its next sync point (barrier or sub-group function). A
  // work-item that waits in a loop for another one of its group, with no sync point in the
  // loop, therefore waits forever here when the other has not run yet (and may on a GPU). The
  // watch sees each atomic operation's address and the value there before it: an operation
  // that finds an address it used lately (one of the last atomic_watch::watched) with the value
  // it found there last, by the same work-item and with no sync point since, is a repeat;
  // anything else (another value, another address, a sync point) is a change and starts the
  // count again (all inline, in ki/detail/cpu/executor.hpp). After spin_limit repeats in a
  // row the work-item is stuck when nothing else that runs can change the value: the atomic is
  // in the group's local memory, or no other group runs at the same time (threads = 1, a single
  // group); otherwise it is stuck once no other group has ended for `stuck_time` while it kept
  // polling. Plain and volatile accesses are not seen.

  void start_watch() {
    watch_ = {};
    judge_ = {};
    watch_.limit = resolve_spin_limit(*d_->b);
    watch_.stuck = &group_runner::stuck;
    watch_.interleave = sched_.interleave_atomics ? &group_runner::interleave_entry : nullptr;
    watch_.ctx = this;
#if !KI_REFERENCE_NO_ALWAYS_ON_CHECKS  // (measurement only: without the watch, a spin hangs)
    cpu::current_watch = &watch_;
    cpu::watch_countdown = 0;
#endif
  }

  // --- interleaving at atomics (schedule::interleave_atomics) ---
  //
  // Before an atomic operation the running work-item goes to the back of the queue of those
  // released to run (ready_), and the next one runs: a new runner for the unstarted ones while
  // there are any (so that work-items polling in turn cannot keep one from ever starting), else
  // a released work-item. It is resumed in its turn, like a released one. Nobody else able to
  // run: it just goes on. Not a sync point: nothing is ordered, the spin watch keeps counting.
  static void interleave_entry(void* self) { static_cast<group_runner*>(self)->interleave(); }
  void interleave() {
    const bool others_ready = ready_pos_ < ready_.size();
    if (!others_ready && !has_unstarted()) return;
    const int self = static_cast<int>(slot_of(current()));
    races_.flush();
    if (ready_pos_ > static_cast<std::size_t>(n_)) {  // (the queue grows by one per interleaving)
      ready_.erase(ready_.begin(), ready_.begin() + static_cast<std::ptrdiff_t>(ready_pos_));
      ready_pos_ = 0;
    }
    ready_.push_back(self);
    if (has_unstarted()) return fibers_.spawn(self, &group_runner::runner_entry, this);  // (it resumes self in turn)
    switch_to_next(self);
  }

  static void stuck(void* self, const void* p, const char* what, const source_location& where) {
    static_cast<group_runner*>(self)->stuck(p, what, where);
  }

  /// The work-item repeated the same observation next_check times: report it, or (while other
  /// groups run that may change the value) wait a little and look again later.
  void stuck(const void* p, const char* what, const source_location& where) {
    const auto* b = static_cast<const unsigned char*>(p);
    const bool local = std::any_of(locals_.begin(), locals_.end(), [&](const local_alloc& l) {
      return b >= static_cast<const unsigned char*>(l.p) && b < static_cast<const unsigned char*>(l.p) + l.bytes;
    });
    if (!judge_.stuck(watch_, *d_->progress, local, true)) return;
    const std::string others = others_doing(current(), sched_.interleave_atomics);
    throw item_failure{
        kernel_error::kind::no_progress,
        cpu::no_progress_text(what, where, watch_.repeats, "barrier or sub-group function",
                              judge_.why(*d_->progress, local),
                              "here the others run only when this one reaches a sync point", others,
                              "ki::reference::backend::spin_limit or KI_REFERENCE_SPIN_LIMIT", watch_.limit),
        false, -1, where};
  }

  // --- what group_runner_base asks of its backend ---
  bool has_unstarted() const { return loop_.next < n_; }
  bool started(const item& it) const { return position_[static_cast<std::size_t>(it.local_linear)] < loop_.next; }
  /// Work-items that have exited, counted when nothing runs (in the driver).
  i64 exited() const { return group_runner_base::exited(loop_.next); }

  // --- the trace hook (ki/reference/events.hpp); only while one is installed ---
  [[gnu::noinline]] void emit(trace_kind k, i64 item, const char* what, source_location where,
                              const void* address = nullptr, i64 width = 0, i64 round = -1, i64 index = -1) const {
    trace_event e{k, gs_.group_id, item, what, where, address, d_->kernel_name, width, round, index};
    e.launch = &trace_launch_;
    hook_(hook_ctx_, e);
  }
  [[gnu::noinline]] void emit_end(const kernel_error* error) const {
    if (error != nullptr) {
      trace_event e{trace_kind::failure, gs_.group_id, linear_of(error->local()),
                    ki::reference::to_string(error->error_kind())};
      e.kernel = d_->kernel_name;
      e.message = error->what();
      e.error = error;
      e.launch = &trace_launch_;
      hook_(hook_ctx_, e);
    }
    emit(trace_kind::group_end, -1, "", {});
  }
  i64 linear_of(xyz<i64> l) const { return l.x + gs_.local_size.x * (l.y + gs_.local_size.y * l.z); }
  void describe_launch(const launch_desc& d, std::uint64_t serial) {
    if (trace_launch_.serial == serial) return;
    trace_launch_ = trace_launch{serial,
                                 d.kernel_name,
                                 {d.groups[0], d.groups[1], d.groups[2]},
                                 {d.items[0], d.items[1], d.items[2]},
                                 d.b->device.name,
                                 gs_.sub_group_width,
                                 layout_.count,
                                 layout_.sub_group.data(),
                                 layout_.lane.data(),
                                 layout_.linear,
                                 sched_.seed,
                                 ki::reference::to_string(sched_.items),
                                 false};
  }
  /// A work-item starts or returns (the launch's loop, while a hook watches or weak memory runs).
  static void on_item(void* self, const cpu::item_state& it, bool starts) {
    auto& r = *static_cast<group_runner*>(self);
    if (r.weak_memory_ && starts) r.weak_.run(it.local_linear);
    if (r.hook_) r.emit(starts ? trace_kind::start : trace_kind::exit, it.local_linear, "", {});
  }
  /// A suspended work-item resumes (group_runner_base::enter). Weak memory: the memory shows
  /// its view from here on, whatever it accesses, and however (the hooks also switch views at
  /// each access, lazily; this covers what they do not see, e.g. a memcpy that GCC leaves to
  /// the C library).
  void entered(int k) {
    if (weak_memory_) [[unlikely]]
      weak_.run(k);
  }
  static void on_access(void* self, const cpu::item_state& it, const void* address, i64 index,
                        const source_location& where) {
    static_cast<group_runner*>(self)->emit(trace_kind::access, it.local_linear, "", where, address, 0, -1, index);
  }
  static void on_race(void* self, const race_note& r) {
    const auto& me = *static_cast<group_runner*>(self);
    trace_event e{trace_kind::race, me.gs_.group_id, r.b_item, r.kind, r.b_where, r.address, me.d_->kernel_name};
    e.index = r.index;
    e.other_item = r.a_item;
    e.other_where = r.a_where;
    e.message = r.text.c_str();
    e.launch = &me.trace_launch_;
    me.hook_(me.hook_ctx_, e);
  }

  /// Every participant of (sg, [begin, begin + lanes)) has arrived: check that they agree,
  /// check the sequence rule without independent sub-groups, perform, release them.
  void resolve(i64 sg, i64 begin, i64 lanes) {
    const i64 size = layout_.size[static_cast<std::size_t>(sg)];
    scope_at_.assign(static_cast<std::size_t>(lanes), nullptr);
    for (i64 l = begin; l < begin + lanes && l < size; ++l)
      scope_at_[static_cast<std::size_t>(l - begin)] =
          items_[static_cast<std::size_t>(layout_.item_at(sg, l))].sync.coll;
    const cpu::scope scope{gs_.sub_group_width, size, begin, lanes, scope_at_.data()};
    const cpu::collective& first = *scope_at_.front();
    i64 lane = 0;
    if (std::string bad = check_agreement(scope, &lane); !bad.empty())
      throw item_failure{kernel_error::kind::collective_mismatch, "sub-group " + std::to_string(sg) + ": " + bad, true,
                         layout_.item_at(sg, lane)};
    if (!d_->b->device.independent_subgroups) check_sequence(sg, first);
    if (const i64 u = perform(scope, poison_.as_fill()); u > 0) {
      auto& e = unspecified_[to_string(first.where) + " " + collective_name(first.kind)];
      if (e.count == 0) {
        e.kind = "unspecified-lane-read";
        e.where = to_string(first.where);
        e.message =
            std::string(collective_name(first.kind)) + " at " + to_string(first.where) +
            " read lanes that have no work-item (unspecified values, filled with " +
            (poison_.seed == 0 ? std::string("the poison word 0xFFBADBAD") : std::string("seeded random bytes")) + ")";
      }
      e.count += u;
    }
    const bool orders_memory = cpu::op(first.kind).orders_memory;
    const char* name = collective_name(first.kind);
    // What it orders: the caller's segment of a width, even where the segments resolve
    // together (spec: "It doesn't order memory with other segments"); else the sub-group.
    const i64 W = gs_.sub_group_width, w = first.width > 0 && first.width < W ? first.width : W;
    for (i64 l = begin; l < begin + lanes && l < size; ++l) {
      item& p = items_[static_cast<std::size_t>(layout_.item_at(sg, l))];
      p.sync.coll = nullptr;
      if (orders_memory) races_.sub_group_barrier_passed(p.local_linear, l / w * w, w);
      --in_collective_;
      if (hook_) [[unlikely]]
        emit(trace_kind::leave, p.local_linear, name, first.where, nullptr, first.width, trace_round_);
      if (&p != cpu::current) ready_.push_back(static_cast<int>(p.local_linear));
    }
    if (hook_) [[unlikely]]
      ++trace_round_;
  }

  // --- the emulated GPU's masked rendezvous (CUDA's *_sync intrinsics) ---
  //
  // The lanes of the caller's warp that the mask names meet; the call is performed once all of
  // them have arrived. What CUDA leaves undefined is reported: a mask without the caller, a lane
  // named that has no thread or has exited, lanes of one rendezvous executing different
  // intrinsics. A named lane that waits elsewhere (a barrier, a rendezvous with another mask)
  // and never arrives leaves the group unable to finish: the report lists where each waits.

  struct pending_mask {
    i64 sub_group;
    std::uint64_t mask;
    i64 arrived;
  };

  std::string mask_text(std::uint64_t m) const {
    char buf[24];
    std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(m));
    return buf;
  }

  void masked_collective(item& it, cpu::collective& c) {
    const i64 sg = it.sub_group_id, lane = it.sub_group_lane;
    const i64 size = layout_.size[static_cast<std::size_t>(sg)];
    const std::uint64_t m = c.lane_mask;
    const std::string call = std::string(collective_name(c.kind)) + " at " + to_string(c.where);
    auto fail = [&](const std::string& why) {
      throw item_failure{kernel_error::kind::invalid_collective, "warp " + std::to_string(sg) + ", lane " +
                                                                     std::to_string(lane) + ": " + call +
                                                                     " with mask " + mask_text(m) + ": " + why};
    };
    if ((m >> lane & 1u) == 0) fail("the mask does not name the calling lane (it must)");
    const std::uint64_t present = size >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << size) - 1;
    if ((m & ~present) != 0)
      fail("the mask names lanes without a thread (" + mask_text(m & ~present) + "; the warp has " +
           std::to_string(size) + " threads)");
    for (i64 l = 0; l < size; ++l) {
      if ((m >> l & 1u) == 0 || l == lane) continue;
      const item& o = items_[static_cast<std::size_t>(layout_.item_at(sg, l))];
      if (started(o) && status_[slot_of(o)] == status::running)
        fail("lane " + std::to_string(l) + " (thread " + std::to_string(o.local_linear) +
             "), which the mask names, has exited");
    }
    note_collective(it, c);
    const std::size_t self = slot_of(it);
    status_[self] = status::in_collective;
    it.sync.coll = &c;
    ++in_collective_;
    if (hook_) [[unlikely]]
      emit(trace_kind::arrive, it.local_linear, collective_name(c.kind), c.where, nullptr, 0);
    // Lanes meet by mask: a lane that waits with another mask (an earlier or later call of its
    // own, as diverged segments do) does not join this one; one that never comes leaves the
    // group unable to finish, which the driver reports with where each lane waits.
    auto p = std::find_if(masked_.begin(), masked_.end(),
                          [&](const pending_mask& x) { return x.sub_group == sg && x.mask == m; });
    if (p == masked_.end()) p = masked_.insert(masked_.end(), pending_mask{sg, m, 0});
    if (++p->arrived < std::popcount(m)) return suspend(static_cast<int>(self));
    masked_.erase(p);
    resolve_masked(sg, m);
    status_[self] = status::running;
  }

  void resolve_masked(i64 sg, std::uint64_t m) {
    const i64 W = gs_.sub_group_width, size = layout_.size[static_cast<std::size_t>(sg)];
    scope_at_.assign(static_cast<std::size_t>(W), nullptr);
    i64 low = -1, high = 0;
    for (i64 l = 0; l < size; ++l)
      if (m >> l & 1u) {
        scope_at_[static_cast<std::size_t>(l)] = items_[static_cast<std::size_t>(layout_.item_at(sg, l))].sync.coll;
        if (low < 0) low = l;
        high = l;
      }
    const cpu::scope scope{W, size, 0, W, scope_at_.data()};
    const cpu::collective& first = *scope_at_[static_cast<std::size_t>(low)];
    i64 lane = 0;
    if (std::string bad = check_agreement(scope, &lane); !bad.empty())
      throw item_failure{kernel_error::kind::collective_mismatch, "warp " + std::to_string(sg) + ": " + bad, true,
                         layout_.item_at(sg, lane)};
    const cpu::op_row& row = cpu::op(first.kind);
    if (row.shape == cpu::op_shape::vote) {
      row.segment(scope_at_.data(), size);
    } else if (row.shape == cpu::op_shape::read) {
      i64 unspecified = 0;
      for (i64 l = low; l <= high; ++l) {
        cpu::collective* c = scope_at_[static_cast<std::size_t>(l)];
        if (c == nullptr) continue;
        const i64 src = row.source(*c, l, 0, W, W);
        if (src == cpu::own_value) std::memcpy(c->result, c->value, c->size);
        else if (src >= 0 && src < size && scope_at_[static_cast<std::size_t>(src)] != nullptr)
          std::memcpy(c->result, scope_at_[static_cast<std::size_t>(src)]->value, c->size);
        else {
          poison_.as_fill().fill(poison_.as_fill().ctx, c->result, c->size);
          ++unspecified;
        }
      }
      if (unspecified > 0) {
        auto& e = unspecified_[to_string(first.where) + " " + collective_name(first.kind)];
        if (e.count == 0) {
          e.kind = "unspecified-lane-read";
          e.where = to_string(first.where);
          e.message = std::string(collective_name(first.kind)) + " at " + to_string(first.where) +
                      " read lanes that the mask does not name (undefined on the GPU; filled with poison)";
        }
        e.count += unspecified;
      }
    }
    const char* name = collective_name(first.kind);
    for (i64 l = low; l <= high; ++l) {
      if ((m >> l & 1u) == 0) continue;
      item& p = items_[static_cast<std::size_t>(layout_.item_at(sg, l))];
      p.sync.coll = nullptr;
      // What __syncwarp orders, in checked-access mode: the span of lanes it names (a mask with
      // gaps orders the lanes between too: races among those may be missed, none is invented).
      if (row.orders_memory) races_.sub_group_barrier_passed(p.local_linear, low, high - low + 1);
      --in_collective_;
      if (hook_) [[unlikely]]
        emit(trace_kind::leave, p.local_linear, name, first.where, nullptr, 0, trace_round_);
      if (&p != cpu::current) ready_.push_back(static_cast<int>(p.local_linear));
    }
    if (hook_) [[unlikely]]
      ++trace_round_;
  }

  /// Without independent sub-groups, every sub-group executes the same communication functions
  /// in the same order: compare this one's k-th with the first sub-group that got that far.
  void check_sequence(i64 sg, const cpu::collective& c) {
    const std::size_t k = static_cast<std::size_t>(seq_count_[static_cast<std::size_t>(sg)]++);
    if (k == seq_log_.size()) {
      seq_log_.push_back({sg, c.kind, c.where, c.width});
      return;
    }
    const auto& e = seq_log_[k];
    if (e.kind != c.kind || e.width != c.width || !same_point(e.where, c.where))
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "without independent sub-groups (profile '" + std::string(d_->b->device.name) +
                             "'), all sub-groups must execute the same communication functions in the same order: "
                             "sub-group " +
                             std::to_string(sg) + " executes " + collective_name(c.kind) + " at " + to_string(c.where) +
                             " as its communication function #" + std::to_string(k) + ", sub-group " +
                             std::to_string(e.sub_group) + " executed " + collective_name(e.kind) + " at " +
                             to_string(e.where),
                         true};
  }

  /// Where segments synchronise on their own, the width must still be the same for every
  /// work-item of the sub-group (spec: "so that the segments partition it"): the k-th execution
  /// of a call site by each lane is compared with the first lane's k-th execution of it (lanes
  /// that execute it fewer times, as diverging segments may, are compared as far as they go).
  void check_width(i64 sg, i64 lane, const cpu::collective& c) {
    auto& log = width_log_[width_site{sg, c.kind, c.where.file, c.where.line, c.where.column}];
    if (log.count.empty()) log.count.assign(static_cast<std::size_t>(gs_.sub_group_width), 0);
    const std::size_t k = static_cast<std::size_t>(log.count[static_cast<std::size_t>(lane)]++);
    if (k == log.first.size()) {
      log.first.push_back({c.width, lane});
      return;
    }
    const auto [width, first_lane] = log.first[k];
    if (width != c.width)
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "sub-group " + std::to_string(sg) + ": " + collective_name(c.kind) + " at " +
                             to_string(c.where) + ": width differs: lane " + std::to_string(first_lane) + " passes " +
                             std::to_string(width) + ", lane " + std::to_string(lane) + " passes " +
                             std::to_string(c.width) +
                             " (the width must be the same for every work-item of the sub-group, so that the "
                             "segments partition it; execution #" +
                             std::to_string(k) + " of the call by each lane)",
                         true};
  }

  std::optional<kernel_error> sequence_length_error() const {
    const i64 expected = static_cast<i64>(seq_log_.size());
    for (i64 sg = 0; sg < layout_.count; ++sg)
      if (seq_count_[static_cast<std::size_t>(sg)] != expected) {
        const auto& e = seq_log_.back();
        return kernel_error(
            kernel_error::kind::collective_mismatch, gs_.group_id, {0, 0, 0}, to_string(e.where),
            report_.group_head() + ": without independent sub-groups (profile '" + std::string(d_->b->device.name) +
                "'), all sub-groups must execute the same communication "
                "functions: sub-group " +
                std::to_string(sg) + " executed " + std::to_string(seq_count_[static_cast<std::size_t>(sg)]) +
                ", sub-group " + std::to_string(e.sub_group) + " executed " + std::to_string(expected) +
                " (the last at " + to_string(e.where) + ")");
      }
    return std::nullopt;
  }

  // The driver: on the thread's own stack, inside run_guarded.
  static void drive(void* self) { static_cast<group_runner*>(self)->drive(); }
  void drive() {
    fibers_.spawn(driver(), &group_runner::runner_entry, this);
    for (;;) {
      // Every work-item now waits at a barrier, has exited, or one has failed.
      if (failed_item_ >= 0 || group_error_) return;
      if (exited() == n_) {
        if (!d_->b->device.independent_subgroups) group_error_ = sequence_length_error();
        return;
      }
#if !KI_REFERENCE_NO_ALWAYS_ON_CHECKS
      if (mismatch_ || exited() > 0 || in_collective_ > 0) {
        group_error_ = cannot_finish();
        return;
      }
#endif
      // All live work-items wait at the same barrier: release them in schedule order (the
      // order they arrived in, which is the forward order).
      release_waiting();
      watch_.forget();  // a sync point (the spin watch)
      ready_pos_ = 1;
      fast_point_ = no_site;
      races_.barrier_released(round_);    // orders accesses before and after the barrier (checked-access mode)
      if (sched_.items == order::random)  // exploring: any order is legal after a barrier
        for (std::size_t i = ready_.size(); i > 1; --i) std::swap(ready_[i - 1], ready_[draw(rng_, i)]);
      if (hook_) [[unlikely]] {
        for (const int k : ready_) emit(trace_kind::leave, k, barrier_what, last_barrier_, nullptr, 0, trace_round_);
        ++trace_round_;
      }
      enter(ready_[0]);
      fibers_.switch_to(driver(), ready_[0]);
    }
  }

  static int runner_entry(void* self) { return static_cast<group_runner*>(self)->runner(); }
  /// Runs unstarted work-items as plain calls until one blocks (then this fiber becomes that
  /// item's) or none are left; returns whom to resume when the fiber ends.
  int runner() {
    try {
      d_->run_items(d_->ctx, loop_);
    } catch (...) {  // the failing work-item is the current one
      return failed_current();
    }
    return next_to_resume();
  }

  /// Per launch and thread: the work-items' local ids (the same for every group).
  void prepare(const launch_desc& d, std::uint64_t serial) {
    d_ = &d;
    rand_.launch_seed = d.rand_seed;
    rand_.check = d.rand_check;
    if (serial == prepared_serial_) return;
    prepared_serial_ = serial;
    reset_items(d.items, d.groups, d.b->device.sub_group_width);
    report_.set_kernel(d.kernel_name);
    sched_ = d.b->schedule;
    same_value_race_ = d.b->same_value_writes == same_value_writes::race;
    weak_memory_ = d.b->memory == memory_model::weak;
    leftovers_ = d.b->local_memory == local_memory_start::leftovers;
    profile p = d.b->device;
    if (sched_.seed != 0) {
      // Exploring: the seed also chooses the layout (where the profile leaves it open; a
      // promised linear layout stays linear) and the poison bytes.
      std::uint64_t s = sched_.seed;
      p.layout_seed ^= splitmix64(s);
      p.poison_seed = splitmix64(s) | 1;
    }
    layout_ = make_layout(p, gs_.local_size);
    gs_.num_sub_groups = layout_.count;
    pending_.assign(static_cast<std::size_t>(layout_.count), {});
    poison_ = {p.poison_seed, 0};
    dirty_statuses_ = false;
    for (item& it : items_) {
      const std::size_t k = static_cast<std::size_t>(it.local_linear);
      it.sub_group_id = layout_.sub_group[k];
      it.sub_group_lane = layout_.lane[k];
      it.sub_group_size = layout_.size[static_cast<std::size_t>(it.sub_group_id)];
    }
    // The order unstarted work-items start in: forward, reverse, or (per group, in run) random.
    item_ptrs_.resize(static_cast<std::size_t>(n_));
    position_.resize(static_cast<std::size_t>(n_));
    for (std::size_t i = 0; i < item_ptrs_.size(); ++i) {
      const std::size_t j = sched_.items == order::reverse ? item_ptrs_.size() - 1 - i : i;
      item_ptrs_[i] = &items_[j];
      position_[j] = static_cast<i64>(i);
    }
    loop_.items = item_ptrs_.data();
    loop_.count = n_;
  }

  const launch_desc* d_ = nullptr;
  std::uint64_t prepared_serial_ = 0;
  item_loop loop_;                           // unstarted work-items, run by the launch's loop
  std::vector<cpu::item_state*> item_ptrs_;  // the start order
  std::vector<i64> position_;                // per work-item: its place in the start order
  ki::reference::schedule sched_;
  std::uint64_t rng_ = 0;  // random order: this group's stream
  i64 group_linear_ = 0;
  bool dirty_statuses_ = false;
  sub_group_layout layout_;
  std::vector<std::vector<pending_scope>> pending_;  // per sub-group: scopes with arrivals
  std::vector<pending_mask> masked_;                 // the emulated GPU's rendezvous with arrivals
  struct sequence_entry {
    i64 sub_group;
    cpu::collective_kind kind;
    source_location where;
    i64 width;
  };
  struct width_site {  // a call site of a width function in a sub-group
    i64 sub_group;
    cpu::collective_kind kind;
    const char* file;
    unsigned line, column;
    auto operator<=>(const width_site&) const = default;
  };
  struct width_history {
    std::vector<i64> count;                  // per lane: executions so far
    std::vector<std::pair<i64, i64>> first;  // per execution: the width and the first lane's number
  };
  std::map<width_site, width_history> width_log_;  // partitionable sub-groups: widths per call site
  std::vector<i64> seq_count_;                     // per sub-group: communication functions done
  std::vector<sequence_entry> seq_log_;            // the first sub-group's sequence
  std::vector<cpu::collective*> scope_at_;         // the resolving scope's participants, by lane
  poison_source poison_;
  warning_sites unspecified_;
  // round_point_ while a barrier may take its fast path; no_site before the round's first
  // arrival, while checked-access mode has accesses to flush, and while a trace hook watches.
  source_location fast_point_ = no_site;
  std::vector<local_alloc> locals_;
  std::size_t local_bytes_ = 0;
  bool dynamic_taken_ = false;  // the group has allocated the launch's dynamic local memory
  cpu::local_arena arena_;
  race_detector races_;
  bool same_value_race_ = true;
  store_buffer weak_;  // memory_model::weak
  bool weak_memory_ = false;
  bool leftovers_ = false;  ///< KI_REFERENCE_LOCAL_MEMORY=leftovers
  trace_hook hook_ = nullptr;
  void* hook_ctx_ = nullptr;
  trace_launch trace_launch_;  // while a hook watches: the launch, as events describe it
  i64 trace_round_ = 0;        // releases so far in this group (events' round)
  // The spin watch.
  cpu::atomic_watch watch_;
  cpu::spin_judge judge_;
};

}  // namespace runner_detail

using runner_detail::current_hook;
using runner_detail::group_runner;

}  // namespace ki::reference::detail
