// Private: simd_cpu's group runner, which runs a chunk of work-groups of a launch on this thread
// (executor.cpp says how). Included by executor.cpp only.
#pragma once
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/runner.hpp>
#include <ki/cpu/spin.hpp>
#include <ki/cpu/sub_group.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/simd_cpu/backend.hpp>
#include <ki/source_location.hpp>

#include "executor.hpp"
#include "sub_group.hpp"

namespace ki::simd_cpu::detail {
namespace cpu = ki::detail::cpu;

namespace runner_detail {
using i64 = std::int64_t;
using cpu::fiber_core;

using cpu::item_failure;
using cpu::same_point;
using cpu::to_string;

inline std::size_t env_size(const char* name, std::size_t fallback) {
  return cpu::env_size("ki::simd_cpu", name, fallback);
}

inline std::size_t resolve_stack_size(const backend& b) {
  static const std::size_t from_env = env_size("KI_SIMD_CPU_STACK_SIZE", 256 * 1024);
  return b.stack_size != 0 ? b.stack_size : from_env;
}

inline std::uint64_t resolve_spin_limit(const backend& b) {
  static const std::uint64_t from_env = env_size("KI_SIMD_CPU_SPIN_LIMIT", std::size_t{1} << 20);
  return b.spin_limit != 0 ? b.spin_limit : from_env;
}
constexpr const char* spin_limit_name = "ki::simd_cpu::backend::spin_limit or KI_SIMD_CPU_SPIN_LIMIT";

inline int resolve_threads(const backend& b) {
  static const int from_env = static_cast<int>(env_size("KI_SIMD_CPU_THREADS", 0));
  return b.threads > 0 ? b.threads : from_env;
}

/// On a cache-line boundary, 128 bytes: its first line holds the context (where the barrier
/// ring's inline switch saves and finds the work-item's fiber while it is suspended: its slot in
/// the fiber core, ki/detail/cpu/barrier.hpp) and what the index queries read of the item_state.
struct alignas(64) item : cpu::ring_context, cpu::item_state {
  cpu::sync_record sync;  // what errors name (ki/cpu/runner.hpp)
};
static_assert(sizeof(item) == 128);

constexpr cpu::backend_names names{"ki::simd_cpu", "ki::simd_cpu::backend::stack_size or KI_SIMD_CPU_STACK_SIZE"};

class group_runner final : public cpu::executor, public cpu::group_runner_base<group_runner, item> {
  friend cpu::group_runner_base<group_runner, item>;
  using status = cpu::item_status;

 public:
  explicit group_runner(std::size_t stack_size) : group_runner_base(stack_size, names) {}

  struct failure {
    i64 group;
    kernel_error error;
  };

  /// Runs groups [first, last) of d in order, stopping before `stop` (lowered by another
  /// thread's failure) or at the first failure, which it returns.
  std::optional<failure> run(const launch_desc& d, std::uint64_t serial, i64 first, i64 last,
                             const std::atomic<i64>& stop) {
    prepare(d, serial);
    last_ = last;
    stop_ = &stop;
    done_ = false;
    first_group_ = first;
    start_group(first);
    // Slots 0 .. n - 1 are the work-items' records; slot n, the driver's, is the core's own.
    fibers_.reset(static_cast<int>(n_) + 1, &items_.front().ctx, sizeof(item), static_cast<int>(n_));
    // While this thread runs the chunk's groups, only it touches their local memory.
    std::tie(cpu::private_begin, cpu::private_end) = arena_.first();
    cpu::current_exec = this;  // (current is set per work-item)
    cpu::current_group = &gs_;
    start_watch(d);
#if KI_FIBER_INLINE_SWITCH
    cpu::current_ring = &ring_;
#endif
    const auto fault = fibers_.run_guarded(&group_runner::drive, this);
    settle();  // (a fault may have stopped the group in the ring)
    cpu::current_watch = nullptr;
    cpu::current_ring = &cpu::no_ring;
    cpu::current_exec = nullptr;
    cpu::current_group = nullptr;
    cpu::private_begin = cpu::private_end = 0;
    const item* faulting = static_cast<const item*>(cpu::current);
    cpu::current = nullptr;
    if (auto e = take_failure(fault, faulting)) return failure{group_, std::move(*e)};
    return std::nullopt;
  }

  // --- cpu::executor: called from inside work-items ---

  // The hot path of barrier kernels. In the steady state (not the work-item's first sync
  // point, not the round's first or last arrival, the same call site as the first, a released
  // work-item to run next) it writes a byte and an entry of waiting_, nothing of the
  // work-item's record, and ends in a tail call to the switch, as on the reference backend.
  // Else: barrier_slow.
  void barrier(source_location where) override {
    if (ring_on_) [[likely]]
      return ring_barrier(where);
    const int self = static_cast<int>(slot_of(current()));
    if (self >= loop_.next || arrived_ == 0 || arrived_ + 1 == n_ || ready_pos_ == ready_.size() ||
        !cpu::same_site(where, round_point_)) [[unlikely]]
      return barrier_slow(where);
    waiting_[static_cast<std::size_t>(arrived_++)] = self;
    status_[static_cast<std::size_t>(self)] = status::waiting;
    switch_to_next(self);  // (suspended_ is not 0: the first arrival was suspended)
  }

  // (The location by value in every barrier path: a by-value parameter whose address is passed
  // on would stop GCC from tail-calling the switch, leaving a frame more on suspended stacks.)
  [[gnu::noinline]] void barrier_slow(source_location where) {
    watch_.forget();  // a sync point (the spin watch)
    const int self = static_cast<int>(slot_of(own_state()));
    // Work-item 0 at the group's first sync point, nobody else started: open the ring now.
    if (self == 0 && loop_.next == 1 && arrived_ == 0 && suspended_ == 0 && n_ > 1) return open_ring(where);
    if (arrived_ == 0) round_point_ = where;
    else if (!cpu::same_site(where, round_point_)) other_barrier(self, where);
    // The last of the group to arrive (every item started, none exited, all here) releases the
    // others and runs on: no switch for it, no visit to the driver. With every work-item of the
    // group suspended here but itself, the barrier ring takes over: the others are resumed in
    // ring order, from its successor on.
    if (++arrived_ == n_ && !mismatch_) {
      arrived_ = 0;
      last_barrier_ = round_point_;
      ++round_;
      if (n_ > 1) {
        ready_.clear();
        ready_pos_ = 0;
        ring_on_ = true;
        ring_.first = &items_[static_cast<std::size_t>(self)];
      } else {
        ready_.assign(waiting_.begin(), waiting_.begin() + (n_ - 1));
        ready_pos_ = 0;
      }
      return;
    }
    waiting_[static_cast<std::size_t>(arrived_ - 1)] = self;
    status_[static_cast<std::size_t>(self)] = status::waiting;
    ++suspended_;
    suspend(self);
  }

  // --- The barrier ring (cpu::barrier_ring) ---
  //
  // From the first release of a barrier at which every work-item of the group arrived, the
  // group's state is the ring's: the running work-item R, ring_.first (F) and ring_.site say
  // who is where (cpu.hpp), and nothing else is written; the steady state of a barrier is the
  // inline switch in the kernel (ki/detail/cpu/barrier.hpp, on x86-64 without sanitizers) or
  // ring_barrier's switch. Anything else that needs to know where work-items are (a sub-group
  // function, a work-item's end, an error, a barrier elsewhere) first turns the ring back into
  // waiting_ / ready_ / status_ (settle).

  /// A barrier while the ring is on: the round's first arrival opens it (the inline switch then
  /// takes the others), its last releases it and runs on, any other switches to its successor
  /// (an arrival the inline switch left to the executor: a build without it, or the same line
  /// named by another copy of the file name). A barrier elsewhere leaves the ring.
  [[gnu::noinline]] void ring_barrier(source_location where) {
    watch_.forget();  // a sync point (the spin watch; a round calls here at least twice)
    item& me = current();
    const int self = static_cast<int>(slot_of(me));
    if (ring_.site.file == nullptr) {
      ring_.site = where;  // (me is ring_.first: the last release's, and nobody ran since)
    } else if (!same_point(where, ring_.site)) {
      settle();
      return barrier(where);
    }
    const int next = ring_next(self);
    if (&items_[static_cast<std::size_t>(next)] == ring_.first) {  // the last arrival
      last_barrier_ = ring_.site;
      ++round_;
      ring_.site = {nullptr, 0, 0};
      ring_.first = &me;
      return;
    }
    cpu::hand_over(fibers_, items_.data(), self, next, ring_next(next), [this](int j) { enter(j); });
  }

  int ring_next(int k) const { return k + 1 == n_ ? 0 : k + 1; }

  /// Work-item 0 has reached a barrier as the group's first sync point, before any other
  /// work-item started: every other work-item gets a fiber now, prepared in its slot to run
  /// it from its start (item_entry), and the ring opens with work-item 0 as the round's first
  /// arrival. The others then start as the ring resumes them, in work-item order, each by the
  /// previous one's arrival: the first round costs what a later one does, plus the fiber's
  /// start, instead of a runner fiber per work-item going through the executor. For the rest
  /// of the executor they are started (loop_.next = n_); while they wait to be resumed, a
  /// settled ring lists them as ready, which starts them just as well.
  void open_ring(source_location where) {
    for (int k = 1; k < n_; ++k)
      items_[static_cast<std::size_t>(k)].sync.coll = nullptr;  // (it may hold a former group's)
    fibers_.prepare(1, static_cast<int>(n_), &group_runner::item_entry, this);
    loop_.next = n_;
    ring_on_ = true;
    ring_.first = &items_.front();
    ring_.site = where;
    ++suspended_;
    cpu::hand_over(fibers_, items_.data(), 0, 1, n_ > 2 ? 2 : -1, [this](int j) { enter(j); });
  }

  /// Leaves the ring (if it is on): the items from F up to R have arrived at the round's barrier
  /// (waiting_, in ring order), those after R up to F wait to be resumed (ready_, in ring order).
  void settle() {
    if (ring_on_) [[unlikely]]
      settle_ring();
  }
  [[gnu::noinline]] void settle_ring() {
    ring_on_ = false;
    const int running = static_cast<int>(slot_of(current()));
    const bool open = ring_.site.file != nullptr;
    const int first = open ? static_cast<int>(slot_of(*static_cast<const item*>(ring_.first))) : running;
    arrived_ = 0;
    for (int k = first; k != running; k = ring_next(k)) {
      waiting_[static_cast<std::size_t>(arrived_++)] = k;
      status_[static_cast<std::size_t>(k)] = status::waiting;
    }
    ready_.clear();
    ready_pos_ = 0;
    for (int k = ring_next(running); k != first; k = ring_next(k)) {
      ready_.push_back(k);
      status_[static_cast<std::size_t>(k)] = status::waiting;
    }
    status_[static_cast<std::size_t>(running)] = status::running;
    if (open) round_point_ = ring_.site;
    ring_.site = {nullptr, 0, 0};
    ring_.first = nullptr;
  }

  void collective(cpu::collective& c) override {
    watch_.forget();  // a sync point (the spin watch)
    settle();
    item& it = own_state();
    const i64 W = gs_.sub_group_width;
    note_collective(it, c);
    if (c.width_given || cpu::checks_arg(c.kind))
      if (std::string bad = check_arguments(c, W); !bad.empty())
        throw item_failure{kernel_error::kind::invalid_collective, bad + " (at " + to_string(c.where) + ")"};
    // The scope: the caller's segment with a width (sub-groups are partitionable), else the
    // whole sub-group.
    const i64 sg = it.sub_group_id, lane = it.sub_group_lane;
    const bool segment = c.width > 0 && c.width < W;
    const i64 begin = segment ? lane / c.width * c.width : 0, lanes = segment ? c.width : W;
    const i64 present = std::max<i64>(0, std::min<i64>(lanes, it.sub_group_size - begin));
    it.sync.coll = &c;
    if (present > 1) {
      // Arrivals per scope: a counter per sub-group for the whole sub-group (the common case),
      // a short list of segments otherwise.
      bool last;
      if (!segment) {
        last = ++whole_arrived_[static_cast<std::size_t>(sg)] == present;
        if (last) whole_arrived_[static_cast<std::size_t>(sg)] = 0;
      } else {
        auto& scopes = pending_[static_cast<std::size_t>(sg)];
        auto p = std::find_if(scopes.begin(), scopes.end(),
                              [&](const pending_scope& x) { return x.begin == begin && x.lanes == lanes; });
        if (p == scopes.end()) p = scopes.insert(scopes.end(), pending_scope{begin, lanes, 0});
        last = ++p->arrived == present;
        if (last) scopes.erase(p);
      }
      if (!last) {
        ++in_collective_;
        const int self = static_cast<int>(slot_of(it));
        status_[static_cast<std::size_t>(self)] = status::in_collective;
        ++suspended_;
        return suspend(self);
      }
    }
    resolve(sg, begin, lanes);  // the last to arrive performs it for all and runs on
  }

  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    // One table per launch and thread: a call site keeps its memory from group to group (each
    // group still sees uninitialised memory, which is all the spec promises), and only the
    // bytes of the call sites this group has used count towards its limit.
    for (auto& l : locals_)
      if (l.key == key) {
        if (l.epoch != group_epoch_) charge(l, where);
        return l.p;
      }
    locals_.push_back({key, arena_.alloc(bytes, align), bytes, 0, where});
    charge(locals_.back(), where);
    return locals_.back().p;
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
  struct local_alloc {
    const void* key;
    void* p;
    std::size_t bytes;
    std::uint64_t epoch;    // the group that last counted it
    source_location where;  // the localmemory call (for out-of-bounds errors)
  };

  /// Counts l towards the group's local memory (the launch's dynamic local memory counts from
  /// the group's start, allocated or not).
  void charge(local_alloc& l, const source_location& where) {
    const bool dynamic = l.key == &cpu::dynamic_local_key;
    const std::size_t reserved = dynamic || dynamic_epoch_ == group_epoch_ ? 0 : d_->dynamic_local_memory;
    if (group_local_bytes_ + reserved + l.bytes > max_local_memory)
      throw cpu::reporter::local_memory_exceeded(where, l.bytes, group_local_bytes_, max_local_memory, reserved,
                                                 dynamic ? "dynamic_localmemory" : "localmemory");
    group_local_bytes_ += l.bytes;
    l.epoch = group_epoch_;
    if (dynamic) dynamic_epoch_ = group_epoch_;
  }

  /// Every participant of (sg, [begin, begin + lanes)) has arrived: check that they agree,
  /// perform, release the others in lane order.
  void resolve(i64 sg, i64 begin, i64 lanes) {
    const i64 size = std::min<i64>(gs_.sub_group_width, n_ - sg * gs_.sub_group_width);
    cpu::collective* at[64];
    for (i64 l = 0; l < lanes; ++l)
      at[l] =
          begin + l < size ? items_[static_cast<std::size_t>(sg * gs_.sub_group_width + begin + l)].sync.coll : nullptr;
    const cpu::scope s{gs_.sub_group_width, size, begin, lanes, at};
    i64 lane = 0;
    if (std::string bad = check_agreement(s, &lane); !bad.empty())
      throw item_failure{kernel_error::kind::collective_mismatch, "sub-group " + std::to_string(sg) + ": " + bad, true,
                         sg * gs_.sub_group_width + lane};
    // Lanes without a work-item read as zero bytes (the spec leaves their values unspecified).
    static constexpr cpu::unspecified_fill zeros{[](void*, void* p, std::size_t n) { std::memset(p, 0, n); }, nullptr};
    perform(s, zeros, cpu::op(s.at[0]->kind).shape == cpu::op_shape::fold ? find_fast(*s.at[0]) : nullptr);
    for (i64 l = begin; l < begin + lanes && l < size; ++l) {
      item& p = items_[static_cast<std::size_t>(sg * gs_.sub_group_width + l)];
      p.sync.coll = nullptr;
      if (&p != cpu::current) {
        --in_collective_;
        ready_.push_back(static_cast<int>(p.local_linear));
      }
    }
  }

  // The driver: on the thread's own stack, inside run_guarded.
  static void drive(void* self) { static_cast<group_runner*>(self)->drive(); }
  void drive() {
    const int main = static_cast<int>(n_);
    for (;;) {
      fibers_.spawn(main, &group_runner::runner_entry, this);
      for (;;) {
        // Nobody can run: every started item waits or has exited, or one has failed.
        if (failed_item_ >= 0 || group_error_ || done_) return;
        if (exited() == n_) break;  // the group has finished
        if (mismatch_ || exited() > 0 || in_collective_ > 0) {
          group_error_ = cannot_finish();
          return;
        }
        // Not reached in practice (the last arrival releases a barrier itself); kept so that
        // the driver alone is enough to finish a group whose items all wait at one barrier.
        release_waiting();
        ready_pos_ = 1;
        enter(ready_[0]);
        fibers_.switch_to(main, ready_[0]);
      }
      if (!next_group()) return;
    }
  }

  static int runner_entry(void* self) { return static_cast<group_runner*>(self)->runner(); }
  /// Runs unstarted work-items as plain calls until one blocks (this fiber is then that
  /// item's) or none are left; while no item of the group was suspended, goes on with the
  /// chunk's next group on the same fiber. Returns whom to resume when the fiber ends.
  int runner() {
    for (;;)
      if (const int next = run_loop(); next >= 0) return next;
  }

  /// A fiber prepared by open_ring: runs its work-item (current when it is resumed), then
  /// goes on as a runner if the group is done.
  static int item_entry(void* self) { return static_cast<group_runner*>(self)->item_fiber(); }
  int item_fiber() {
    try {
      d_->run_one(d_->ctx);
    } catch (...) {
      return failed();
    }
    if (const int next = ended(); next >= 0) return next;
    return runner();
  }

  /// Runs the group's unstarted work-items, then whatever the group needs next: returns whom to
  /// resume when this fiber ends, or -1 when it has started the chunk's next group (every
  /// work-item of this one ran to its end on it).
  int run_loop() {
    try {
      d_->run_items(d_->ctx, loop_);
    } catch (...) {
      return failed();
    }
    return ended();
  }

  /// The running work-item threw (called from the catch block): it fails, or its group for a
  /// group-level failure. Out of line: the item paths keep small frames.
  [[gnu::noinline]] int failed() {
    settle();
    return failed_current();
  }

  /// A work-item ended: whom to resume, or -1 when the group is done and the chunk's next one
  /// has started (on this fiber).
  int ended() {
    settle();
    if (suspended_ != 0) return next_to_resume();
    // Every item ran to its end on this fiber: the group is done.
    if (!next_group()) {
      done_ = true;
      return driver();
    }
    return -1;
  }

  // --- what group_runner_base asks of its backend ---
  bool has_unstarted() const { return loop_.next < n_; }
  bool started(const item& it) const { return it.local_linear < loop_.next; }
  /// Work-items that have exited, counted when nothing runs.
  i64 exited() const { return group_runner_base::exited(loop_.next); }

  /// The running work-item, at a synchronisation point. At its first one in the group it
  /// moves the item loop's `next` past itself: it may be suspended here, and the loop goes on
  /// with the next work-item on another fiber.
  item& own_state() {
    item& it = current();
    if (const i64 k = static_cast<i64>(slot_of(it)); k >= loop_.next) {
      loop_.next = k + 1;
      it.sync.coll = nullptr;  // (it may hold a former group's)
    }
    return it;
  }

  // --- the spin watch (ki/cpu/spin.hpp; docs/debugging.md, "Spin-waits") ---
  //
  // As on the reference backend, a work-item runs until its next sync point, so one that polls
  // an atomic for another of its group that has not run yet would wait forever. Here the watch
  // samples (a decrement per atomic, ki/detail/cpu/executor.hpp) and looks at every operation
  // only once a sample repeats; the judge and the message are the oracle's.
  void start_watch(const launch_desc& d) {
    watch_ = {};
    judge_ = {};
    watch_.limit = resolve_spin_limit(*d.b);
    watch_.sampling = true;
    watch_.stuck = &group_runner::stuck_entry;
    watch_.ctx = this;
    cpu::current_watch = &watch_;
    cpu::watch_countdown = 0;
  }
  static void stuck_entry(void* self, const void* p, const char* what, const source_location& where) {
    static_cast<group_runner*>(self)->stuck(p, what, where);
  }
  void stuck(const void* p, const char* what, const source_location& where) {
    const auto* b = static_cast<const char*>(p);
    const bool local = std::any_of(locals_.begin(), locals_.end(), [&](const local_alloc& l) {
      return l.epoch == group_epoch_ && b >= static_cast<const char*>(l.p) &&
             b < static_cast<const char*>(l.p) + l.bytes;
    });
    if (!judge_.stuck(watch_, *d_->progress, local, true)) return;
    own_state();  // (the item loop's `next` past it: those before it have started)
    settle();     // (the others' places, out of the ring)
    throw item_failure{kernel_error::kind::no_progress,
                       cpu::no_progress_text(what, where, watch_.repeats, "barrier or sub-group function",
                                             judge_.why(*d_->progress, local),
                                             "here the others run only when this one reaches a sync point",
                                             others_doing(current(), false), spin_limit_name, watch_.limit),
                       false, -1, where};
  }

  /// The chunk's next group, if any is left (and no lower group failed meanwhile).
  bool next_group() {
    d_->progress->group_ended();
    const i64 g = group_ + 1;
    if (g >= last_ || g >= stop_->load(std::memory_order_relaxed)) return false;
    start_group(g);
    return true;
  }

  void start_group(i64 g) {
    const i64 gx = d_->groups[0], gy = d_->groups[1];
    if (g == group_ + 1 && g != first_group_) {  // the next one: no divisions (~40 cycles)
      auto id = gs_.group_id;
      if (++id.x == gx) {
        id.x = 0;
        if (++id.y == gy) id.y = 0, ++id.z;
      }
      gs_.set_group_id(id);
    } else {
      gs_.set_group_id({g % gx, (g / gx) % gy, g / (gx * gy)});
    }
    group_ = g;
    report_.set_group(gs_.group_id);
    loop_.next = 0;
    if (suspended_ != 0) {  // only a group that used fibers leaves state behind
      for (auto& p : pending_) p.clear();
      std::fill(whole_arrived_.begin(), whole_arrived_.end(), 0);
      std::fill(status_.begin(), status_.end(), status::running);
      suspended_ = 0;
    }
    start_round_state();
    ring_on_ = false;
    ring_.site = {nullptr, 0, 0};
    ring_.first = nullptr;
    ++group_epoch_;
    group_local_bytes_ = 0;
  }

  /// Per launch and thread: the work-items (the same for every group) and local memory.
  void prepare(const launch_desc& d, std::uint64_t serial) {
    d_ = &d;
    rand_.launch_seed = d.rand_seed;  // (no checks: the oracle's)
    if (serial == prepared_serial_) return;
    prepared_serial_ = serial;
    const i64 W = d.b->sub_group_width;
    reset_items(d.items, d.groups, W);
    report_.set_kernel(d.kernel_name);
    gs_.num_sub_groups = (n_ + W - 1) / W;
    pending_.assign(static_cast<std::size_t>(gs_.num_sub_groups), {});
    whole_arrived_.assign(static_cast<std::size_t>(gs_.num_sub_groups), 0);
    for (item& it : items_) {  // the linear layout
      const i64 k = it.local_linear;
      it.sub_group_id = k / W;
      it.sub_group_lane = k % W;
      it.sub_group_size = std::min(W, n_ - k / W * W);
    }
    loop_.items = reinterpret_cast<char*>(static_cast<cpu::item_state*>(items_.data()));
    loop_.stride = sizeof(item);
    loop_.count = n_;
    ring_.begin = reinterpret_cast<char*>(static_cast<cpu::item_state*>(items_.data()));
    ring_.end = ring_.begin + static_cast<std::size_t>(n_) * sizeof(item);
    ring_.stride = sizeof(item);
    if (cpu::ring_context_of(&items_.front()) != &items_.front().ctx)  // (the layout the inline barrier assumes)
      throw std::logic_error("ki::simd_cpu: internal error: a work-item's context is not right before its item_state");
    suspended_ = 0;
    locals_.clear();
    arena_.reset();
  }

  const launch_desc* d_ = nullptr;
  std::uint64_t prepared_serial_ = 0;
  item_loop loop_;

  i64 group_ = 0, last_ = 0, first_group_ = 0;
  const std::atomic<i64>* stop_ = nullptr;
  bool done_ = false;
  i64 suspended_ = 0;                                // suspensions in this group
  std::vector<std::vector<pending_scope>> pending_;  // per sub-group: segments with arrivals
  std::vector<i64> whole_arrived_;                   // per sub-group: arrivals without a segment
  bool ring_on_ = false;                             // the group's barrier state is ring_'s (see ring_barrier)
  cpu::barrier_ring ring_;                           // (cpu::current_ring while the inline switch may use it)

  std::vector<local_alloc> locals_;
  cpu::atomic_watch watch_;
  cpu::spin_judge judge_;
  std::uint64_t group_epoch_ = 0;
  std::size_t group_local_bytes_ = 0;
  std::uint64_t dynamic_epoch_ = 0;  // the group that last counted the launch's dynamic local memory
  // The first chunk is the memory whose atomics may be plain (cpu::group_private): it holds the
  // local memory of every group this thread runs until a launch's call sites need more (later
  // chunks keep real atomics, which is always correct).
  cpu::local_arena arena_{1 << 20};
};

}  // namespace runner_detail

using runner_detail::group_runner;

}  // namespace ki::simd_cpu::detail
