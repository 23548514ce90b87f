// The CPU runtime's group runner skeleton: what both CPU backends' executors keep and do the
// same way while they run a work-group's work-items on fibers of one thread.
//
// A backend's runner derives from group_runner_base<Derived, Item> (CRTP: no virtual calls on
// the hot paths) and adds how it schedules (the oracle's explored orders and checks, simd_cpu's
// barrier ring and chunks of groups). The base holds the group's barrier state (who waits,
// who is released, in which order), the hand-over from a suspending work-item to the next, the
// failure bookkeeping, and every message through the one reporter (report.hpp), so that one
// bug reads the same on both backends.
//
// Item: the backend's work-item record, derived from item_state, with a member `sync` (a
// sync_record). Derived provides:
//   static int runner_entry(void*)   a new runner fiber: runs unstarted work-items
//   bool has_unstarted() const       some work-item of the group has not started
//   bool started(const Item&) const  the work-item has started (for the messages)
// and may provide
//   void entered(int k)              work-item k resumes (is made current): default nothing
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>
#include <new>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/report.hpp>
#include <ki/cpu/sub_group.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>

namespace ki::detail::cpu {

/// Where a started work-item is (kept apart from its record: a barrier's fast path writes a
/// byte here and nothing of the record).
enum class item_status : std::uint8_t { running, waiting, in_collective };

/// What errors need of a work-item beyond its item_state: a sync point the group does not know
/// by itself (a sub-group function it waits in or passed, or a barrier other than the one the
/// others wait at). Valid while at_round is the runner's round (nothing is reset per group).
struct sync_record {
  std::uint64_t at_round = 0;
  source_location at{};
  const char* at_what = barrier_what;  ///< barrier_what or a sub-group function's name
  collective* coll = nullptr;          ///< while in a sub-group function: its record (on its stack)
};

template <class Derived, class Item>
class group_runner_base {
 public:
  group_runner_base(std::size_t stack_size, backend_names names) : fibers_(stack_size), report_(names) {}
  std::size_t stack_size() const { return fibers_.stack_size(); }

 protected:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  /// The work-item running on this thread.
  static Item& current() { return *static_cast<Item*>(cpu::current); }
  /// The work-item's slot (its linear local id), without reading its record.
  std::size_t slot_of(const Item& it) const { return static_cast<std::size_t>(&it - items_.data()); }

  /// Per launch: the group's shape and the work-items' local ids (x fastest), all running, none
  /// waiting; the backend then assigns their sub-groups (and gs_.num_sub_groups).
  void reset_items(const std::array<std::int64_t, 3>& items, const std::array<std::int64_t, 3>& groups,
                   std::int64_t sub_group_width) {
    const std::int64_t n = items[0] * items[1] * items[2];
    n_ = n;
    items_.assign(static_cast<std::size_t>(n), Item{});
    waiting_.assign(static_cast<std::size_t>(n), 0);
    status_.assign(static_cast<std::size_t>(n), item_status::running);
    ready_.clear();
    ready_.reserve(static_cast<std::size_t>(n));
    gs_.local_size = {items[0], items[1], items[2]};
    gs_.num_groups = {groups[0], groups[1], groups[2]};
    gs_.items = n;
    gs_.sub_group_width = sub_group_width;
    rand_slots_.assign(static_cast<std::size_t>(n), rand_slot{});
    rand_.slots = rand_slots_.data();
    gs_.rand = &rand_;
    std::int64_t k = 0;
    for (std::int64_t z = 0; z < items[2]; ++z)
      for (std::int64_t y = 0; y < items[1]; ++y)
        for (std::int64_t x = 0; x < items[0]; ++x, ++k) {
          Item& it = items_[static_cast<std::size_t>(k)];
          it.local_id = {x, y, z};
          it.local_linear = k;
          it.group = &gs_;
        }
  }
  /// Per group: nobody waits, nothing failed; records of earlier groups are stale from here on.
  void start_round_state() {
    ready_.clear();
    ready_pos_ = 0;
    arrived_ = 0;
    in_collective_ = 0;
    mismatch_ = false;
    failed_item_ = -1;
    group_error_.reset();
    group_round_ = ++round_;
    ++rand_.epoch;  // every work-item's stream starts again (rand_slot)
  }

  /// Marks work-item k running and current. Whoever resumes a work-item does this before the
  /// switch, so that a suspended one has nothing left to do when it resumes (its barrier or
  /// sub-group function just returns).
  void enter(int k) {
    status_[static_cast<std::size_t>(k)] = item_status::running;
    cpu::current = &items_[static_cast<std::size_t>(k)];
    self().entered(k);
  }
  /// Derived may say what else follows a work-item's resumption (the oracle's weak memory);
  /// by default nothing.
  void entered(int) {}

  /// The next context to run when the current one stops: a released item, else the driver.
  int next_to_resume() {
    if (ready_pos_ == ready_.size()) return driver();
    const int k = ready_[ready_pos_++];
    enter(k);
    return k;
  }
  /// The driver's slot: the thread's own stack, where run_guarded runs the group's driver.
  int driver() const { return static_cast<int>(n_); }

  /// Suspends work-item `self` and runs whoever is next: a released work-item, else a new
  /// runner for the unstarted ones, else the driver. Nothing follows the switch, so that the
  /// compiler makes it a tail call.
  void suspend(int self_slot) {
    if (ready_pos_ < ready_.size()) [[likely]]
      return switch_to_next(self_slot);
    if (self().has_unstarted()) return fibers_.spawn(self_slot, &Derived::runner_entry, &self());
    fibers_.switch_to(self_slot, driver());
  }

  /// Switches from `self_slot` to the next released work-item (there is one).
  void switch_to_next(int self_slot) {
    const int k = ready_[ready_pos_++];
    const int after = ready_pos_ < ready_.size() ? ready_[ready_pos_] : -1;
    hand_over(fibers_, items_.data(), self_slot, k, after, [this](int j) { enter(j); });
  }

  /// Releases the work-items waiting at the round's barrier, in arrival order (shuffled by the
  /// caller if it likes), for the driver to resume.
  void release_waiting() {
    ready_.assign(waiting_.begin(), waiting_.begin() + arrived_);
    ready_pos_ = 0;
    arrived_ = 0;
    last_barrier_ = round_point_;
    ++round_;
  }

  /// A barrier arrival whose source location may differ from the first arrival's.
  [[gnu::noinline]] void other_barrier(int self_slot, source_location where) {  // (by value: tail calls)
    if (same_point(where, round_point_)) return;  // the same line, named by another copy of the file name
    Item& it = items_[static_cast<std::size_t>(self_slot)];
    mismatch_ = true;
    it.sync.at = where;
    it.sync.at_what = barrier_what;
    it.sync.at_round = round_;
  }

  /// The work-item arrives in a sub-group function at `c` (errors about the call name its line).
  void note_collective(Item& it, collective& c) {
    it.sync.at = c.where;
    it.sync.at_what = collective_name(c.kind);
    it.sync.at_round = round_;
  }

  /// Work-items that have exited, counted when nothing runs: every started item then waits at
  /// the barrier, waits in a sub-group function, or has exited.
  std::int64_t exited(std::int64_t started) const { return started - arrived_ - in_collective_; }

  /// What errors name for work-item `it`: where it waits, else the last sync point it passed.
  sync_point sync_point_of(const Item& it) const {
    const bool own = it.sync.at_round == round_;  // recorded since the group's last barrier released
    const item_status st = status_[slot_of(it)];
    if (st == item_status::waiting)
      return own && it.sync.at_what == barrier_what ? sync_point{it.sync.at, barrier_what}
                                                    : sync_point{round_point_, barrier_what};
    if (own) return {it.sync.at, it.sync.at_what};
    if (round_ != group_round_) return {last_barrier_, barrier_what};  // it passed the last one released
    return {source_location{}, nullptr};
  }

  /// What the work-items of the group other than `me` do, grouped (the spin watch's report):
  /// "items 0-6 wait at barrier k.cpp:20; item 7 has not started". `interleaved`: the released
  /// ones wait for their turn at atomics (the oracle's schedule::interleave_atomics).
  std::string others_doing(const Item& me, bool interleaved) const {
    std::vector<std::pair<std::string, std::vector<std::int64_t>>> doing;  // in order of first appearance
    std::vector<bool> ready(static_cast<std::size_t>(n_), false);
    for (std::size_t k = ready_pos_; k < ready_.size(); ++k) ready[static_cast<std::size_t>(ready_[k])] = true;
    for (const Item& it : items_) {
      if (&it == &me) continue;
      const std::size_t k = slot_of(it);
      std::string d;
      if (!self().started(it)) d = "not started";
      else if (ready[k] && interleaved) d = "waiting for its turn (interleaved at atomics)";
      else if (ready[k]) d = "released from barrier " + to_string(last_barrier_) + ", not yet resumed";
      else if (status_[k] == item_status::running) d = "exited";
      else {
        const sync_point at = sync_point_of(it);
        d = std::string("wait at ") + at.what + " " + to_string(at.where);
      }
      auto g = std::find_if(doing.begin(), doing.end(), [&](const auto& e) { return e.first == d; });
      if (g == doing.end()) g = doing.insert(doing.end(), {d, {}});
      g->second.push_back(it.local_linear);
    }
    std::string others;
    for (auto& [d, ids] : doing) {
      const bool one = ids.size() == 1;
      std::string verb = d;
      if (d == "not started") verb = one ? "has not started" : "have not started";
      else if (d.rfind("wait at ", 0) == 0 && one) verb = "waits at " + d.substr(8);
      else if (d.rfind("released", 0) == 0 || d.rfind("waiting", 0) == 0) verb = (one ? "is " : "are ") + d;
      others += (others.empty() ? "" : "; ") + std::string(one ? "item " : "items ") + ranges(ids) + " " + verb;
    }
    return others.empty() ? "none (it is the group's only work-item)" : others;
  }

  /// The running work-item failed; back to the driver.
  int fail(const Item& it, kernel_error::kind k, std::string msg, source_location at = {}) {
    failed_item_ = it.local_linear;
    failed_kind_ = k;
    failed_message_ = std::move(msg);
    failed_at_ = at;
    return driver();
  }
  /// The group failed (a group-level failure), concerning work-item `k` (-1: the running one).
  int fail_group(kernel_error::kind k, const std::string& msg, std::int64_t concerns = -1) {
    record_group_failure(k, msg, concerns);
    return driver();
  }
  void record_group_failure(kernel_error::kind k, const std::string& msg, std::int64_t concerns) {
    const Item& it = concerns >= 0 ? items_[static_cast<std::size_t>(concerns)] : current();
    group_error_ = report_.group_error(k, it, sync_point_of(it), msg);
  }
  /// What the running work-item threw, as its failure or the group's (from a catch block).
  int failed_current() {
    try {
      const item_failure f = current_failure();
      if (f.group_level) {
        record_group_failure(f.kind, f.message, f.concerns);
      } else {
        failed_message_ = f.message;
        failed_item_ = current().local_linear;
        failed_kind_ = f.kind;
        failed_at_ = f.at;
      }
    } catch (const std::bad_alloc&) {
      // No memory for the report itself (a fiber cannot throw it on): the work-item fails as out
      // of memory, its message made by take_failure, outside the fiber, where that may throw.
      failed_message_.clear();
      failed_item_ = current().local_linear;
      failed_kind_ = kernel_error::kind::resource;
      failed_at_ = {};
    }
    return driver();
  }

  /// The group cannot finish (the driver found nobody able to run).
  kernel_error cannot_finish() const {
    std::vector<stuck_item> v;
    for (const Item& it : items_) {
      if (!self().started(it)) continue;
      const item_status st = status_[slot_of(it)];
      stuck_item s{it.local_linear, it.sub_group_id, st == item_status::running, {}};
      if (!s.exited) s.at = sync_point_of(it);
      v.push_back(s);
    }
    return report_.cannot_finish(v, [this](std::int64_t k) { return items_[static_cast<std::size_t>(k)].local_id; });
  }

  /// After the group's guarded run: its failure, if any (a fault, a failed work-item, a failed
  /// group). `faulting`: the current work-item when the fault happened (null: none ran yet).
  std::optional<kernel_error> take_failure(const fiber_core::fault& fault, const Item* faulting) {
    if (fault.happened) {
      const Item& it = faulting != nullptr ? *faulting : items_.front();
      return report_.item_error(reporter::fault_kind(fault), it, sync_point_of(it),
                                report_.fault_message(fault, fibers_.stack_size()));
    }
    if (failed_item_ >= 0) {
      fibers_.abandon_all();
      const Item& it = items_[static_cast<std::size_t>(failed_item_)];
      if (failed_message_.empty()) failed_message_ = "ran out of memory (std::bad_alloc), and so did its report";
      return report_.item_error(failed_kind_, it, sync_point_of(it), failed_message_,
                                failed_at_.line != 0 ? &failed_at_ : nullptr);
    }
    if (group_error_) {
      fibers_.abandon_all();
      return std::move(group_error_);
    }
    return std::nullopt;
  }

  fiber_core fibers_;
  reporter report_;
  group_state gs_;
  rand_group rand_;  // launch_seed and check: set by the backend per launch
  std::vector<rand_slot> rand_slots_;
  std::vector<Item> items_;
  std::int64_t n_ = 0;
  std::vector<item_status> status_;  // per started work-item (a failed group leaves some waiting)
  std::vector<int> waiting_;         // n_ entries: the first arrived_ wait at the barrier, in arrival order
  std::vector<int> ready_;           // released, in the order they run
  std::size_t ready_pos_ = 0;
  std::int64_t arrived_ = 0;
  std::int64_t in_collective_ = 0;  // waiting in a sub-group function
  source_location round_point_{};   // where the first arrival of this round waits
  source_location last_barrier_{};  // the barrier released last (valid while round_ != group_round_)
  bool mismatch_ = false;           // an arrival at another barrier than round_point_
  // Barrier rounds of this runner, never reset: +1 at each group's start and at each release.
  std::uint64_t round_ = 0, group_round_ = 0;
  std::int64_t failed_item_ = -1;
  kernel_error::kind failed_kind_{};
  std::string failed_message_;
  source_location failed_at_{};
  std::optional<kernel_error> group_error_;
};

}  // namespace ki::detail::cpu
