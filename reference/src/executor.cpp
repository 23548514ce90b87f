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
// Schedule exploration (schedule.hpp): the start order of unstarted items (item_ptrs_) is
// forward, reverse, or a per-group random permutation, and a random schedule also shuffles the
// items released from each barrier; with threads = 1 the groups run in the same kind of order.
// The seed also reseeds adversarial layouts and the poison. Seed 0 costs nothing.
//
// Checked-access mode (detail/cpu/checked.hpp): kernels compiled with KI_CHECKED_ACCESS=1 report
// each element access to the group_runner (a checked::recorder); see "checked::recorder" below
// for how reads, writes and races are told apart. Races between work-groups are found at the
// end of the launch from each group's global accesses (inter_group_race).
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/reference/backend.hpp>
#include <ki/reference/report.hpp>
#include <ki/source_location.hpp>

#include <ki/cpu/support.hpp>
#include <ki/cpu/fiber.hpp>
#include "layout.hpp"
#include "poison.hpp"
#include "executor.hpp"
#include "report_log.hpp"
#include "sub_group.hpp"

#ifndef KI_REFERENCE_NO_ALWAYS_ON_CHECKS
#define KI_REFERENCE_NO_ALWAYS_ON_CHECKS 0
#endif

namespace ki::reference::detail {
namespace cpu = ki::detail::cpu;
using cpu::fiber_core;
using cpu::collective_name;
constexpr auto& name_of = cpu::collective_name;
namespace checked = ki::detail::checked;
using i64 = std::int64_t;

namespace {

using cpu::item_failure;
using cpu::same_point;
using cpu::to_string;

/// "0-31, 64, 66-70" from sorted ids.
std::string ranges(const std::vector<i64>& ids) {
  std::string s;
  for (std::size_t i = 0; i < ids.size();) {
    std::size_t j = i;
    while (j + 1 < ids.size() && ids[j + 1] == ids[j] + 1) ++j;
    if (!s.empty()) s += ", ";
    s += std::to_string(ids[i]);
    if (j > i) s += "-" + std::to_string(ids[j]);
    i = j + 1;
  }
  return s;
}

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

/// A uniformly drawn position below n (n > 0).
std::size_t draw(std::uint64_t& s, std::size_t n) { return static_cast<std::size_t>(splitmix64(s) % n); }

std::size_t env_size(const char* name, std::size_t fallback) {
  return cpu::env_size("ki::reference", name, fallback);
}

std::size_t resolve_stack_size(const backend& b) {
  static const std::size_t from_env = env_size("KI_REFERENCE_STACK_SIZE", 256 * 1024);
  return b.stack_size != 0 ? b.stack_size : from_env;
}

int resolve_threads(const backend& b) {
  static const int from_env = static_cast<int>(env_size("KI_REFERENCE_THREADS", 0));
  return b.threads > 0 ? b.threads : from_env;
}

/// Where a started work-item is (kept apart from its record, in group_runner::status_).
enum class status : std::uint8_t { running, waiting, in_collective };

constexpr const char* barrier_what = "barrier";

/// A call site that no barrier has (not even one given an empty source_location by hand).
constexpr char no_site_file[] = "(no call site)";
constexpr source_location no_site{no_site_file, 0, 0};

/// On a cache-line boundary: the index queries read one line of it (cpu::item_state), and a
/// barrier's fast path touches none of it.
struct alignas(64) item : cpu::item_state {
  i64 sg_epoch = 0;                   // sub_group_barriers passed (checked-access mode)
  // A sync point the group does not know by itself (group_runner::sync_point says which that
  // is): a communication function it waits in or passed, or a barrier other than the one the
  // others wait at. Valid while at_epoch is the runner's epoch_ (nothing is reset per group).
  std::uint64_t at_epoch = 0;
  source_location at{};
  const char* at_what = barrier_what;  // barrier_what or a communication function's name
  cpu::collective* coll = nullptr;     // while in_collective: its record (on its own stack)
};

/// One warning site of a launch: its kind, where, the message (without the count), how often.
struct warning_entry {
  std::string kind, where, message;
  i64 count = 0;
};

/// Unspecified reads per call site of one launch, merged from every thread.
struct warning_log {
  std::mutex m;
  std::map<std::string, warning_entry> by_site;  // "file:line kind" -> entry
};

/// A group's failure, with what the launch report says about it beyond the exception.
struct group_failure {
  group_failure(kernel_error e, i64 n = 1, std::vector<std::string> inst = {}, std::vector<std::string> w = {})
      : error(std::move(e)), count(n), instances(std::move(inst)), where(std::move(w)) {}
  kernel_error error;
  i64 count = 1;                       // instances (races found in the group)
  std::vector<std::string> instances;  // the first ones
  std::vector<std::string> where;      // the source locations involved
};

/// Checked-access mode: one work-group's accesses to global memory (not local), per element,
/// kept until the launch ends to find races between work-groups.
struct global_access {
  const void* addr;
  i64 group;       // linear group id
  xyz<i64> group_id, local_id;
  bool wrote;
  source_location where;
  const void* base;
  i64 count, index;
};
struct global_log {
  std::mutex m;
  std::vector<global_access> accesses;
};

constexpr std::size_t max_instances = 8;

class group_runner final : public cpu::executor, public checked::recorder {
 public:
  explicit group_runner(std::size_t stack_size) : fibers_(stack_size) {}
  std::size_t stack_size() const { return fibers_.stack_size(); }

  /// Runs one group of launch d. Returns the error that ended it, if any.
  std::optional<group_failure> run(const launch_desc& d, std::uint64_t launch_serial, i64 group_linear, global_log& globals) {
    prepare(d, launch_serial);
    const i64 gx = d.groups[0], gy = d.groups[1];
    group_linear_ = group_linear;
    gs_.set_group_id({group_linear % gx, (group_linear / gx) % gy, group_linear / (gx * gy)});
    if (sched_.items == order::random) {
      // A fresh random start order per group (reproducible from the seed and the group id).
      rng_ = sched_.seed ^ (static_cast<std::uint64_t>(group_linear) * 0xD1B54A32D192ED03ull);
      for (std::size_t i = item_ptrs_.size(); i > 1; --i) std::swap(item_ptrs_[i - 1], item_ptrs_[draw(rng_, i)]);
      for (std::size_t i = 0; i < item_ptrs_.size(); ++i) position_[static_cast<std::size_t>(item_ptrs_[i]->local_linear)] = static_cast<i64>(i);
    }
    // Statuses are only meaningful for started items (index < loop_.next), and a group that
    // finished normally leaves none waiting; only a failed one needs them reset.
    if (dirty_statuses_) std::fill(status_.begin(), status_.end(), status::running);
    dirty_statuses_ = false;
    loop_.next = 0;
    ready_.clear();
    ready_pos_ = 0;
    arrived_ = 0;
    in_collective_ = 0;
    mismatch_ = false;
    fast_point_ = no_site;
    for (auto& p : pending_) p.clear();
    seq_count_.assign(static_cast<std::size_t>(layout_.count), 0);
    seq_log_.clear();
    failed_item_ = -1;
    group_error_.reset();
    locals_.clear();
    local_bytes_ = 0;
    arena_.reset();
    fibers_.reset(static_cast<int>(n_) + 1);
    group_epoch_ = ++epoch_;  // stamps of earlier groups are stale from here on
    if (sg_epochs_dirty_)
      for (item& it : items_) it.sg_epoch = 0;
    sg_epochs_dirty_ = false;
    races_ = 0;
    race_instances_.clear();
    race_where_.clear();
    first_race_.reset();
    // Checked-access state (empty unless the kernel was compiled in checked mode).
    if (!shadow_.empty()) shadow_.clear();
    if (!group_globals_.empty()) group_globals_.clear();
    clear_pending();
    checked::active = this;
    cpu::current_exec = this;  // (current is set per work-item)
    cpu::current_group = &gs_;

    const auto fault = fibers_.run_guarded(&group_runner::drive, this);
    checked::active = nullptr;
    cpu::current_exec = nullptr;
    cpu::current_group = nullptr;
    const item* faulting = static_cast<const item*>(cpu::current);  // the item that faulted, if any
    dirty_statuses_ = true;  // cleared below when the group finished normally
    cpu::current = nullptr;
    if (fault.happened) {
      const item* it = faulting != nullptr ? faulting : &items_.front();  // (null: a fault before any item ran)
      std::ostringstream os;
      if (fault.stack_overflow)
        os << "overflowed its fiber stack (stack_size = " << fibers_.stack_size()
           << " bytes; raise ki::reference::backend::stack_size or KI_REFERENCE_STACK_SIZE)";
      else
        os << "made an invalid memory access at address " << fault.address;
      clear_pending();
      return group_failure{item_error(fault.stack_overflow ? kernel_error::kind::stack_overflow : kernel_error::kind::exception,
                                      *it, os.str())};
    }
    if (failed_item_ >= 0) {
      fibers_.abandon_all();
      clear_pending();
      return group_failure{item_error(failed_kind_, items_[static_cast<std::size_t>(failed_item_)], failed_message_)};
    }
    if (group_error_) {
      fibers_.abandon_all();
      clear_pending();
      return group_failure{std::move(*group_error_)};
    }
    dirty_statuses_ = false;  // every work-item exited: all running
    flush_accesses();  // the last work-item's accesses
    if (first_race_) {
      std::string msg = "ki::reference: kernel '" + std::string(d_->kernel_name) + "': work-group " +
                        to_string(gs_.group_id) + ": " + race_instances_.front();
      if (races_ > 1) msg += " (" + std::to_string(races_ - 1) + " more in this work-group)";
      msg += " [checked-access mode]";
      return group_failure{kernel_error(kernel_error::kind::data_race, gs_.group_id, first_race_->second,
                                        to_string(first_race_->first), msg),
                           races_, race_instances_, race_where_};
    }
    if (!group_globals_.empty()) {
      std::lock_guard lock(globals.m);
      for (const auto& [addr, a] : group_globals_) globals.accesses.push_back(a);
    }
    return std::nullopt;
  }

  /// Moves this runner's unspecified-read counts into the launch's log.
  void flush_warnings(warning_log& log) {
    if (unspecified_.empty()) return;
    std::lock_guard lock(log.m);
    for (auto& [site, entry] : unspecified_) {
      auto& e = log.by_site[site];
      if (e.count == 0) e = entry;
      else e.count += entry.count;
    }
    unspecified_.clear();
  }

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
    if (!same_site || ready_pos_ == ready_.size()) [[unlikely]] return barrier_slow(self, where);
    status_[self] = status::waiting;
    waiting_[static_cast<std::size_t>(arrived_++)] = static_cast<int>(self);
    switch_to_next(static_cast<int>(self));
  }

  [[gnu::noinline]] void barrier_slow(std::size_t self, source_location where) {
    status_[self] = status::waiting;
    if (!accesses_.empty()) flush_accesses();
    if (arrived_ == 0) round_point_ = fast_point_ = where;
#if !KI_REFERENCE_NO_ALWAYS_ON_CHECKS
    else other_barrier(items_[self], where);
#endif
    waiting_[static_cast<std::size_t>(arrived_++)] = static_cast<int>(self);
    suspend(static_cast<int>(self));
  }

  /// A barrier arrival whose source location may differ from the first arrival's.
  [[gnu::noinline]] void other_barrier(item& it, source_location where) {
    if (same_point(where, round_point_)) return;  // the same line, named by another copy of the file name
    mismatch_ = true;
    it.at = where;
    it.at_what = barrier_what;
    it.at_epoch = epoch_;
  }

  void collective(cpu::collective& c) override {
    item& it = current();
    if (!accesses_.empty()) [[unlikely]] flush_accesses();
    const i64 W = gs_.sub_group_width;
    it.at = c.where;  // errors about this call name its line
    it.at_what = name_of(c.kind);
    it.at_epoch = epoch_;
    if (std::string bad = check_arguments(c, W); !bad.empty())
      throw item_failure{kernel_error::kind::invalid_collective, bad + " (at " + to_string(c.where) + ")"};
    // The scope: the caller's segment where segments may diverge, else the whole sub-group.
    const i64 sg = it.sub_group_id, lane = it.sub_group_lane;
    const bool segment = c.width > 0 && d_->b->device.partitionable_subgroups;
    const i64 begin = segment ? lane / c.width * c.width : 0, lanes = segment ? c.width : W;
    const i64 present = std::max<i64>(0, std::min<i64>(lanes, it.sub_group_size - begin));
    status_[slot_of(it)] = status::in_collective;
    it.coll = &c;
    ++in_collective_;
    auto& scopes = pending_[static_cast<std::size_t>(sg)];
    auto p = std::find_if(scopes.begin(), scopes.end(), [&](const pending_scope& x) { return x.begin == begin && x.lanes == lanes; });
    if (p == scopes.end()) p = scopes.insert(scopes.end(), pending_scope{begin, lanes, 0});
    if (++p->arrived < present) return suspend(static_cast<int>(slot_of(it)));
    scopes.erase(p);
    resolve(sg, begin, lanes);  // the last to arrive performs it and runs on
    status_[slot_of(it)] = status::running;
  }

  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    for (const auto& l : locals_)
      if (l.key == key) return l.p;
    const std::size_t limit = d_->b->device.max_local_memory;
    if (local_bytes_ + bytes > limit)
      throw item_failure{kernel_error::kind::resource,
                         "localmemory at " + to_string(where) + " needs " + std::to_string(bytes) +
                             " bytes; the work-group already uses " + std::to_string(local_bytes_) +
                             " of max_local_memory = " + std::to_string(limit)};
    void* p = arena_.alloc(bytes, align);
    if (sched_.seed != 0) poison_.fill(p, bytes);  // exploring: the seed's poison bytes
    else poison_fill(p, bytes);
    locals_.push_back({key, p, bytes, where});
    local_bytes_ += bytes;
    return p;
  }

  // --- checked::recorder: element accesses of kernels compiled in checked-access mode ---
  //
  // The work-items of a group run one at a time on this thread, each from one sync point to
  // the next (a segment) without interruption. So an access is recorded with the element's
  // bytes before it, and when the segment ends (the item reaches a sync point, or another item
  // makes an access, or the group ends) comparing the bytes tells a write (changed) from a read
  // (unchanged, which includes writing the value the element already held). Two accesses of an
  // element by different work-items race when one writes and no barrier (or, within a
  // sub-group, sub_group_barrier) lies between them. Atomic accesses are exempt.

  void access(const checked::array_info& a, i64 index, const source_location& where) override {
    item* it = static_cast<item*>(cpu::current);
    if (it == nullptr) return;
    if (it != access_owner_) {
      flush_accesses();
      access_owner_ = it;
    }
    const auto* addr = static_cast<const unsigned char*>(a.data) + index * static_cast<i64>(a.element_size);
    if (const std::size_t k = find_access(addr); k != npos) {
      accesses_[k].last = where;
      return;
    }
    accesses_.push_back({addr, a.element_size, access_bytes_.size(), a.count, index, where, where, false});
    fast_point_ = no_site;  // the next barrier flushes them (barrier_slow)
    access_bytes_.insert(access_bytes_.end(), addr, addr + a.element_size);
  }

  void atomic(const void* p) override {
    if (static_cast<item*>(cpu::current) != access_owner_) return;
    if (const std::size_t k = find_access(p); k != npos) accesses_[k].atomic = true;
  }

 private:
  struct local_alloc {
    const void* key;
    void* p;
    std::size_t bytes;
    source_location where;
  };
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  struct pending_access {
    const void* addr;
    std::size_t size;
    std::size_t old;  // offset of its bytes before the segment in access_bytes_
    i64 count, index;  // the array's elements, the element's index
    source_location first, last;
    bool atomic;
  };
  struct access_rec {
    i64 item = -1;  // linear local id; -1: none
    source_location where;
    i64 sg_epoch = 0;
  };
  struct shadow {
    std::uint64_t epoch = ~0ull;  // the barrier interval the records below belong to
    access_rec writer, readers[2];
    bool written = false;  // in this group, ever (local memory: initialised)
  };

  std::size_t find_access(const void* addr) {
    if (accesses_.size() <= 32) {
      for (std::size_t k = accesses_.size(); k-- > 0;)
        if (accesses_[k].addr == addr) return k;
      return npos;
    }
    for (std::size_t k = access_index_.size(); k < accesses_.size(); ++k) access_index_.emplace(accesses_[k].addr, k);
    const auto f = access_index_.find(addr);
    return f == access_index_.end() ? npos : f->second;
  }

  void clear_pending() {
    accesses_.clear();
    access_bytes_.clear();
    access_index_.clear();
    access_owner_ = nullptr;
  }

  const local_alloc* local_of(const void* p) const {
    const auto* b = static_cast<const unsigned char*>(p);
    for (const auto& l : locals_)
      if (b >= static_cast<const unsigned char*>(l.p) && b < static_cast<const unsigned char*>(l.p) + l.bytes) return &l;
    return nullptr;
  }

  bool ordered(const access_rec& r, const item& me) const {
    if (r.item == me.local_linear) return true;
    const item& other = items_[static_cast<std::size_t>(r.item)];
    return other.sub_group_id == me.sub_group_id && r.sg_epoch != me.sg_epoch;
  }

  std::string describe(const pending_access& p, const local_alloc* local) const {
    if (local) return "element " + std::to_string(p.index) + " of localmemory at " + to_string(local->where);
    return "element " + std::to_string(p.index) + " of a ki::span of " + std::to_string(p.count) + " elements";
  }

  void race(const char* kind, const access_rec& a, const char* a_did, const access_rec& b, const char* b_did,
            const pending_access& p, const local_alloc* local) {
    ++races_;
    const item& ia = items_[static_cast<std::size_t>(a.item)];
    const item& ib = items_[static_cast<std::size_t>(b.item)];
    if (race_instances_.size() < max_instances)
      race_instances_.push_back(std::string(kind) + " race on " + describe(p, local) + ": work-item " + to_string(ia.local_id) +
                                " " + a_did + " it at " + to_string(a.where) + ", then work-item " + to_string(ib.local_id) +
                                " " + b_did + " it at " + to_string(b.where) + ", with no barrier between them");
    if (!first_race_) {
      first_race_.emplace(b.where, ib.local_id);
      race_where_ = {to_string(a.where)};
      if (to_string(b.where) != race_where_.front()) race_where_.push_back(to_string(b.where));
    }
  }

  void flush_accesses() {
    if (accesses_.empty()) return;
    const item& me = *access_owner_;
    for (const pending_access& p : accesses_) {
      if (p.atomic) continue;
      const bool changed = std::memcmp(p.addr, access_bytes_.data() + p.old, p.size) != 0;
      const local_alloc* local = local_of(p.addr);
      shadow& sh = shadow_[p.addr];
      if (sh.epoch != epoch_) {
        sh.epoch = epoch_;
        sh.writer.item = sh.readers[0].item = sh.readers[1].item = -1;
      }
      // A write is named by the last access of the segment, a read by the first.
      const access_rec mine{me.local_linear, changed ? p.last : p.first, me.sg_epoch};
      if (changed) {
        if (sh.writer.item >= 0 && !ordered(sh.writer, me)) {
          race("write-write", sh.writer, "wrote", mine, "wrote", p, local);
        } else {
          for (const access_rec& r : sh.readers)
            if (r.item >= 0 && !ordered(r, me)) {
              race("read-write", r, "read", mine, "wrote", p, local);
              break;
            }
        }
        sh.writer = mine;
        sh.written = true;
      } else {
        if (sh.writer.item >= 0 && !ordered(sh.writer, me)) {
          if (same_value_race_) race("read-write", sh.writer, "wrote", mine, "read", p, local);
        } else if (local != nullptr && !sh.written) {
          uninitialized_read(p, *local);
        }
        if (sh.readers[0].item < 0) sh.readers[0] = mine;
        else if (sh.readers[0].item != mine.item && sh.readers[1].item < 0) sh.readers[1] = mine;
      }
      if (local == nullptr) {
        auto [g, fresh] = group_globals_.try_emplace(p.addr);
        if (fresh || (changed && !g->second.wrote))
          g->second = global_access{p.addr, group_linear_, gs_.group_id, me.local_id, changed, mine.where, nullptr, p.count, p.index};
      }
    }
    clear_pending();
  }

  void uninitialized_read(const pending_access& p, const local_alloc& l) {
    auto& e = unspecified_[to_string(p.first) + " uninitialized-local-read"];
    if (e.count == 0) {
      e.kind = "uninitialized-local-read";
      e.where = to_string(p.first);
      e.message = "read at " + to_string(p.first) + " of localmemory at " + to_string(l.where) +
                  " before any work-item of the group wrote the element (e.g. element " + std::to_string(p.index) +
                  "; unspecified values, filled with " +
                  (sched_.seed == 0 ? std::string("the poison word 0xFFBADBAD") : std::string("seeded random bytes")) + ")";
    }
    ++e.count;
  }

  struct pending_scope {
    i64 begin, lanes, arrived;
  };

  /// Every participant of (sg, [begin, begin + lanes)) has arrived: check that they agree,
  /// check the sequence rule without independent sub-groups, perform, release them.
  void resolve(i64 sg, i64 begin, i64 lanes) {
    const i64 size = layout_.size[static_cast<std::size_t>(sg)];
    scope_at_.assign(static_cast<std::size_t>(lanes), nullptr);
    for (i64 l = begin; l < begin + lanes && l < size; ++l)
      scope_at_[static_cast<std::size_t>(l - begin)] = items_[static_cast<std::size_t>(layout_.item_at(sg, l))].coll;
    const cpu::scope scope{gs_.sub_group_width, size, begin, lanes, scope_at_.data()};
    const cpu::collective& first = *scope_at_.front();
    if (std::string bad = check_agreement(scope); !bad.empty())
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "sub-group " + std::to_string(sg) + ": " + bad, true};
    if (!d_->b->device.independent_subgroups) check_sequence(sg, first);
    if (const i64 u = perform(scope, poison_.as_fill()); u > 0) {
      auto& e = unspecified_[to_string(first.where) + " " + name_of(first.kind)];
      if (e.count == 0) {
        e.kind = "unspecified-lane-read";
        e.where = to_string(first.where);
        e.message = std::string(name_of(first.kind)) + " at " + to_string(first.where) +
                    " read lanes that have no work-item (unspecified values, filled with " +
                    (poison_.seed == 0 ? std::string("the poison word 0xFFBADBAD") : std::string("seeded random bytes")) + ")";
      }
      e.count += u;
    }
    const bool orders_memory = cpu::op(first.kind).orders_memory;
    for (i64 l = begin; l < begin + lanes && l < size; ++l) {
      item& p = items_[static_cast<std::size_t>(layout_.item_at(sg, l))];
      p.coll = nullptr;
      if (orders_memory) ++p.sg_epoch, sg_epochs_dirty_ = true;
      --in_collective_;
      if (&p != cpu::current) ready_.push_back(static_cast<int>(p.local_linear));
    }
  }

  /// Without independent sub-groups, every sub-group executes the same communication functions
  /// in the same order: compare this one's k-th with the first sub-group that got that far.
  void check_sequence(i64 sg, const cpu::collective& c) {
    const std::size_t k = static_cast<std::size_t>(seq_count_[static_cast<std::size_t>(sg)]++);
    if (k == seq_log_.size()) {
      seq_log_.push_back({sg, &c, c.kind, c.where, c.width});
      return;
    }
    const auto& e = seq_log_[k];
    if (e.kind != c.kind || e.width != c.width || !same_point(e.where, c.where))
      throw item_failure{kernel_error::kind::collective_mismatch,
                         "without independent sub-groups (profile '" + std::string(d_->b->device.name) +
                             "'), all sub-groups must execute the same communication functions in the same order: "
                             "sub-group " + std::to_string(sg) + " executes " + name_of(c.kind) + " at " + to_string(c.where) +
                             " as its communication function #" + std::to_string(k) + ", sub-group " +
                             std::to_string(e.sub_group) + " executed " + name_of(e.kind) + " at " + to_string(e.where),
                         true};
  }

  // The driver: on the thread's own stack, inside run_guarded.
  static void drive(void* self) { static_cast<group_runner*>(self)->drive(); }
  void drive() {
    const int main = static_cast<int>(n_);
    fibers_.spawn(main, &group_runner::runner_entry, this);
    for (;;) {
      // Every work-item now waits at a barrier, has exited, or one has failed.
      if (failed_item_ >= 0 || group_error_) return;
      if (exited() == n_) {
        if (!d_->b->device.independent_subgroups) group_error_ = sequence_length_error();
        return;
      }
#if !KI_REFERENCE_NO_ALWAYS_ON_CHECKS
      if (mismatch_ || exited() > 0 || in_collective_ > 0) {
        group_error_ = divergence_error();
        return;
      }
#endif
      // All live work-items wait at the same barrier: release them in schedule order (the
      // order they arrived in, which is the forward order).
      ready_.assign(waiting_.begin(), waiting_.begin() + arrived_);
      arrived_ = 0;
      ready_pos_ = 1;
      last_barrier_ = round_point_;
      fast_point_ = no_site;
      ++epoch_;  // also orders accesses before and after the barrier (checked-access mode)
      if (sched_.items == order::random)  // exploring: any order is legal after a barrier
        for (std::size_t i = ready_.size(); i > 1; --i) std::swap(ready_[i - 1], ready_[draw(rng_, i)]);
      enter(ready_[0]);
      fibers_.switch_to(main, ready_[0]);
    }
  }

  static int runner_entry(void* self) { return static_cast<group_runner*>(self)->runner(); }
  /// Runs unstarted work-items as plain calls until one blocks (then this fiber becomes that
  /// item's) or none are left; returns whom to resume when the fiber ends.
  int runner() {
    try {
      d_->run_items(d_->ctx, loop_);
    } catch (...) {  // the failing work-item is the current one
      const item_failure f = cpu::current_failure();
      if (f.group_level) return fail_group(f.kind, f.message);
      return fail(current(), f.kind, f.message);
    }
    return next_to_resume();
  }

  /// Work-items that have exited, counted when nothing runs (in the driver): every started
  /// item then waits at the barrier, waits in a communication function, or has exited.
  i64 exited() const { return loop_.next - arrived_ - in_collective_; }

  /// The work-item running on this thread.
  static item& current() { return *static_cast<item*>(cpu::current); }

  /// The work-item's slot (its linear local id), without reading its record.
  std::size_t slot_of(const item& it) const { return static_cast<std::size_t>(&it - items_.data()); }

  /// Marks work-item k running and current. Whoever resumes a work-item does this before the
  /// switch, so that a suspended item has nothing left to do when it resumes (its barrier or
  /// communication function just returns).
  void enter(int k) {
    status_[static_cast<std::size_t>(k)] = status::running;
    cpu::current = &items_[static_cast<std::size_t>(k)];
  }

  /// What errors name for work-item `it`: where it waits (waiting or in_collective), else the
  /// last sync point it passed (what = nullptr: none yet in this group).
  std::pair<source_location, const char*> sync_point(const item& it) const {
    const bool own = it.at_epoch == epoch_;  // recorded since the group's last barrier released
    const status st = status_[slot_of(it)];
    if (st == status::waiting)
      return own && it.at_what == barrier_what ? std::pair{it.at, barrier_what} : std::pair{round_point_, barrier_what};
    if (own) return {it.at, it.at_what};
    if (epoch_ != group_epoch_) return {last_barrier_, barrier_what};  // it passed the last one released
    return {source_location{}, nullptr};
  }

  int fail(item& it, kernel_error::kind k, std::string msg) {
    failed_item_ = it.local_linear;
    failed_kind_ = k;
    failed_message_ = std::move(msg);
    return static_cast<int>(n_);  // back to the driver
  }

  int fail_group(kernel_error::kind k, const std::string& msg) {
    const item& first = current();
    group_error_ = kernel_error(k, gs_.group_id, first.local_id, to_string(sync_point(first).first),
                                "ki::reference: kernel '" + std::string(d_->kernel_name) + "': work-group " +
                                    to_string(gs_.group_id) + ": " + msg);
    return static_cast<int>(n_);
  }

  std::optional<kernel_error> sequence_length_error() const {
    const i64 expected = static_cast<i64>(seq_log_.size());
    for (i64 sg = 0; sg < layout_.count; ++sg)
      if (seq_count_[static_cast<std::size_t>(sg)] != expected) {
        const auto& e = seq_log_.back();
        return kernel_error(kernel_error::kind::collective_mismatch, gs_.group_id, {0, 0, 0}, to_string(e.where),
                            "ki::reference: kernel '" + std::string(d_->kernel_name) + "': work-group " +
                                to_string(gs_.group_id) + ": without independent sub-groups (profile '" +
                                std::string(d_->b->device.name) + "'), all sub-groups must execute the same communication "
                                "functions: sub-group " + std::to_string(sg) + " executed " +
                                std::to_string(seq_count_[static_cast<std::size_t>(sg)]) + ", sub-group " +
                                std::to_string(e.sub_group) + " executed " + std::to_string(expected) +
                                " (the last at " + to_string(e.where) + ")");
      }
    return std::nullopt;
  }

  /// The next context to run when the current one stops: a released item, else the driver.
  int next_to_resume() {
    if (ready_pos_ == ready_.size()) return static_cast<int>(n_);
    const int k = ready_[ready_pos_++];
    enter(k);
    return k;
  }

  /// Suspends the running work-item (at a barrier) and runs whoever is next.
  /// Nothing follows the switch (see enter), so that the compiler makes it a tail call.
  void suspend(int self) {
    if (ready_pos_ < ready_.size()) [[likely]] return switch_to_next(self);
    if (loop_.next < n_) return fibers_.spawn(self, &group_runner::runner_entry, this);
    fibers_.switch_to(self, static_cast<int>(n_));
  }

  /// Switches from `self` to the next released work-item (there is one).
  void switch_to_next(int self) {
    const int k = ready_[ready_pos_++];
    const int after = ready_pos_ < ready_.size() ? ready_[ready_pos_] : -1;
    cpu::hand_over(fibers_, items_.data(), self, k, after, [this](int j) { enter(j); });
  }

  std::optional<kernel_error> divergence_error() const {
    // Group the waiting items by barrier, in order of first appearance.
    // Group the waiting items by what they wait at, in order of first appearance.
    struct waiting {
      source_location where;
      const char* what;  // "barrier" or a communication function
      std::vector<i64> items, sub_groups, lanes;
    };
    std::vector<waiting> at;
    std::vector<i64> exited;
    for (const item& it : items_) {
      if (position_[static_cast<std::size_t>(it.local_linear)] >= loop_.next) continue;  // never started (cannot happen here)
      const status st = status_[slot_of(it)];
      if (st == status::running) {  // started, not waiting: exited
        exited.push_back(it.local_linear);
        continue;
      }
      const char* what = st == status::in_collective ? name_of(it.coll->kind) : barrier_what;
      const source_location where = sync_point(it).first;
      auto g = std::find_if(at.begin(), at.end(), [&](const waiting& w) { return same_point(w.where, where) && w.what == what; });
      if (g == at.end()) g = at.insert(at.end(), waiting{where, what, {}, {}, {}});
      g->items.push_back(it.local_linear);
      if (std::find(g->sub_groups.begin(), g->sub_groups.end(), it.sub_group_id) == g->sub_groups.end())
        g->sub_groups.push_back(it.sub_group_id);
    }
    std::ostringstream os;
    os << "ki::reference: kernel '" << d_->kernel_name << "': work-group " << to_string(gs_.group_id)
       << " cannot finish: ";
    for (std::size_t i = 0; i < at.size(); ++i) {
      os << (i ? "; " : "") << "items " << ranges(at[i].items) << " wait at " << at[i].what << " " << to_string(at[i].where);
      if (at[i].what != std::string("barrier")) {
        std::sort(at[i].sub_groups.begin(), at[i].sub_groups.end());
        os << " (sub-group" << (at[i].sub_groups.size() > 1 ? "s " : " ") << ranges(at[i].sub_groups) << ")";
      }
    }
    if (!exited.empty()) os << "; items " << ranges(exited) << " exited";
    os << " (items are linear local ids, x fastest; every work-item of a work-group must reach the same barrier, "
          "and every work-item of a sub-group (or of a segment, with a width on a device with partitionable "
          "sub-groups) the same communication function)";
    const item& first = items_[static_cast<std::size_t>(at.front().items.front())];
    return kernel_error(at.size() > 1 ? kernel_error::kind::barrier_mismatch : kernel_error::kind::cannot_finish,
                        gs_.group_id, first.local_id, to_string(sync_point(first).first), os.str());
  }

  kernel_error item_error(kernel_error::kind k, const item& it, const std::string& what) const {
    std::ostringstream os;
    os << "ki::reference: kernel '" << d_->kernel_name << "': work-item " << to_string(it.local_id)
       << " (linear " << it.local_linear << ") of work-group " << to_string(gs_.group_id) << " " << what;
    std::string where;
    if (const auto [at, at_what] = sync_point(it); at_what != nullptr) {
      where = to_string(at);
      // A bad call is named "(at ...)" by `what`; other errors happened after this sync point.
      if (k != kernel_error::kind::invalid_collective) os << " (after " << at_what << " " << where << ")";
    }
    return kernel_error(k, gs_.group_id, it.local_id, where, os.str());
  }

  /// Per launch and thread: the work-items' local ids (the same for every group).
  void prepare(const launch_desc& d, std::uint64_t serial) {
    d_ = &d;
    if (serial == prepared_serial_) return;
    prepared_serial_ = serial;
    const i64 lx = d.items[0], ly = d.items[1], lz = d.items[2];
    n_ = lx * ly * lz;
    gs_.local_size = {lx, ly, lz};
    gs_.num_groups = {d.groups[0], d.groups[1], d.groups[2]};
    gs_.items = n_;
    gs_.sub_group_width = d.b->device.sub_group_width;
    sched_ = d.b->schedule;
    same_value_race_ = d.b->same_value_writes == same_value_writes::race;
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
    items_.assign(static_cast<std::size_t>(n_), item{});
    waiting_.assign(static_cast<std::size_t>(n_), 0);
    status_.assign(static_cast<std::size_t>(n_), status::running);
    i64 k = 0;
    for (i64 z = 0; z < lz; ++z)
      for (i64 y = 0; y < ly; ++y)
        for (i64 x = 0; x < lx; ++x, ++k) {
          item& it = items_[static_cast<std::size_t>(k)];
          it.local_id = {x, y, z};
          it.local_linear = k;
          it.sub_group_id = layout_.sub_group[static_cast<std::size_t>(k)];
          it.sub_group_lane = layout_.lane[static_cast<std::size_t>(k)];
          it.sub_group_size = layout_.size[static_cast<std::size_t>(it.sub_group_id)];
          it.group = &gs_;
        }
    // The order unstarted work-items start in: forward, reverse, or (per group, in run) random.
    item_ptrs_.resize(static_cast<std::size_t>(n_));
    position_.resize(static_cast<std::size_t>(n_));
    for (std::size_t i = 0; i < item_ptrs_.size(); ++i) {
      const std::size_t k = sched_.items == order::reverse ? item_ptrs_.size() - 1 - i : i;
      item_ptrs_[i] = &items_[k];
      position_[k] = static_cast<i64>(i);
    }
    loop_.items = item_ptrs_.data();
    loop_.count = n_;
  }

  fiber_core fibers_;
  const launch_desc* d_ = nullptr;
  std::uint64_t prepared_serial_ = 0;
  cpu::group_state gs_;
  std::vector<item> items_;
  i64 n_ = 0;

  item_loop loop_;                 // unstarted work-items, run by the launch's loop
  std::vector<cpu::item_state*> item_ptrs_;  // the start order
  std::vector<i64> position_;              // per work-item: its place in the start order
  ki::reference::schedule sched_;
  std::uint64_t rng_ = 0;                  // random order: this group's stream
  i64 group_linear_ = 0;
  std::vector<status> status_;     // per started work-item (a failed group leaves some waiting)
  bool dirty_statuses_ = false;
  std::vector<int> waiting_;       // n_ entries: the first arrived_ wait at the barrier, in arrival order
  std::vector<int> ready_;  // released items, in the order they run
  std::size_t ready_pos_ = 0;
  i64 arrived_ = 0;
  i64 in_collective_ = 0;  // items waiting in a communication function
  sub_group_layout layout_;
  std::vector<std::vector<pending_scope>> pending_;  // per sub-group: scopes with arrivals
  struct sequence_entry {
    i64 sub_group;
    const cpu::collective* c;
    cpu::collective_kind kind;
    source_location where;
    i64 width;
  };
  std::vector<i64> seq_count_;              // per sub-group: communication functions done
  std::vector<sequence_entry> seq_log_;     // the first sub-group's sequence
  std::vector<cpu::collective*> scope_at_;  // the resolving scope's participants, by lane
  poison_source poison_;
  std::map<std::string, warning_entry> unspecified_;
  source_location round_point_{};   // where the first arrival of this round waits
  // round_point_ while a barrier may take its fast path; no_site before the round's
  // first arrival and while checked-access mode has accesses to flush.
  source_location fast_point_ = no_site;
  source_location last_barrier_{};  // the barrier released last (valid while epoch_ != group_epoch_)
  bool mismatch_ = false;

  i64 failed_item_ = -1;
  kernel_error::kind failed_kind_{};
  std::string failed_message_;
  std::optional<kernel_error> group_error_;

  std::vector<local_alloc> locals_;
  std::size_t local_bytes_ = 0;
  cpu::local_arena arena_;

  // Checked-access mode.
  std::vector<pending_access> accesses_;  // the running segment's accesses, one per element
  std::vector<unsigned char> access_bytes_;
  std::unordered_map<const void*, std::size_t> access_index_;  // for long segments
  const item* access_owner_ = nullptr;
  std::unordered_map<const void*, shadow> shadow_;
  std::unordered_map<const void*, global_access> group_globals_;
  // Barrier rounds of this runner, never reset: +1 at each group's start and at each release.
  std::uint64_t epoch_ = 0, group_epoch_ = 0;
  bool sg_epochs_dirty_ = false;
  bool same_value_race_ = true;
  i64 races_ = 0;
  std::vector<std::string> race_instances_, race_where_;
  std::optional<std::pair<source_location, xyz<i64>>> first_race_;

 public:
  void reset_arena() { arena_.reset(); }
};

group_runner& runner_for(const backend& b) { return cpu::thread_runner<group_runner>(resolve_stack_size(b)); }

std::atomic<std::uint64_t> launch_counter{0};

tbb::task_arena& arena_for(int threads) {
  static cpu::arena_cache arenas;  // this backend's own
  return arenas.get(threads);
}

}  // namespace

/// Checked-access mode: a race between work-groups on global memory (nothing orders work-groups
/// within a launch). The first element (by address) that two groups access, one writing.
static std::optional<group_failure> inter_group_race(const launch_desc& d, std::vector<global_access>& acc) {
  if (acc.empty()) return std::nullopt;
  std::sort(acc.begin(), acc.end(), [](const global_access& a, const global_access& b) {
    return a.addr != b.addr ? std::less<const void*>()(a.addr, b.addr) : a.group < b.group;
  });
  std::optional<group_failure> found;
  for (std::size_t i = 0; i < acc.size();) {
    std::size_t j = i;
    while (j < acc.size() && acc[j].addr == acc[i].addr) ++j;
    // [i, j): one entry per group, in group order. A race: a writer and any other group.
    const global_access* w = nullptr;
    for (std::size_t k = i; k < j && !w; ++k)
      if (acc[k].wrote) w = &acc[k];
    if (w != nullptr && j - i > 1) {
      const global_access& o = acc[i].group != w->group ? acc[i] : acc[i + 1];
      const global_access& a = o.group < w->group ? o : *w;  // in group order
      const global_access& b = o.group < w->group ? *w : o;
      if (!found) {
        const std::string inst = std::string(o.wrote ? "write-write" : "read-write") + " race between work-groups on element " +
                                 std::to_string(a.index) + " of a ki::span of " + std::to_string(a.count) +
                                 " elements: work-item " + to_string(a.local_id) + " of work-group " + to_string(a.group_id) +
                                 (a.wrote ? " wrote" : " read") + " it at " + to_string(a.where) + ", work-item " +
                                 to_string(b.local_id) + " of work-group " + to_string(b.group_id) +
                                 (b.wrote ? " wrote" : " read") + " it at " + to_string(b.where);
        const std::string msg = "ki::reference: kernel '" + std::string(d.kernel_name) + "': " + inst +
                                " (nothing orders the work-groups of a launch: use atomics, or separate launches)";
        found = group_failure{kernel_error(kernel_error::kind::data_race, b.group_id, b.local_id, to_string(b.where), msg),
                              0, {inst}, {to_string(a.where)}};
        if (to_string(b.where) != to_string(a.where)) found->where.push_back(to_string(b.where));
      }
      ++found->count;
    }
    i = j;
  }
  if (found && found->count > 1) {
    std::string m = found->error.what();
    const auto cut = m.rfind(" (nothing orders");
    m.insert(cut, " (and " + std::to_string(found->count - 1) + " more elements)");
    found->error = kernel_error(found->error.error_kind(), found->error.group(), found->error.local(), found->error.where(), m);
  }
  return found;
}


launch_result execute(const launch_desc& d) {
  fiber_core::recheck_fault_handlers();  // a test framework may have replaced them since the last launch
  const i64 ngroups = d.groups[0] * d.groups[1] * d.groups[2];  // each bounded by max_num_groups
  const std::uint64_t serial = ++launch_counter;
  const int threads = resolve_threads(*d.b);
  const auto& sched = d.b->schedule;

  std::optional<group_failure> first;
  warning_log log;
  global_log globals;
  if (threads == 1 || ngroups == 1) {
    // Deterministic: groups one after another; exploring, in reverse or a random order.
    group_runner& r = runner_for(*d.b);
    std::vector<i64> group_order;
    if (sched.items != order::forward) {
      group_order.resize(static_cast<std::size_t>(ngroups));
      for (i64 g = 0; g < ngroups; ++g) group_order[static_cast<std::size_t>(g)] = sched.items == order::reverse ? ngroups - 1 - g : g;
      if (sched.items == order::random) {
        std::uint64_t s = sched.seed * 0x9E3779B97F4A7C15ull + 17;
        for (std::size_t i = group_order.size(); i > 1; --i) std::swap(group_order[i - 1], group_order[draw(s, i)]);
      }
    }
    // As with several threads, the error reported is that of the lowest failing group: in an
    // explored order, after a failure only groups with lower ids still run.
    i64 first_group = ngroups;
    for (i64 k = 0; k < ngroups; ++k) {
      const i64 g = group_order.empty() ? k : group_order[static_cast<std::size_t>(k)];
      if (g > first_group) continue;
      if (group_order.empty() && first) break;
      r.reset_arena();
      auto e = r.run(d, serial, g, globals);
      r.flush_warnings(log);
      if (e) first_group = g, first = std::move(e);
    }
  } else {
    // The error reported is the one of the lowest failing group id, whatever the threads'
    // timing: after a failure, only groups with lower ids still run.
    std::mutex m;
    i64 first_group = ngroups;
    std::atomic<i64> stop{ngroups};
    auto body = [&](const tbb::blocked_range<i64>& range) {
      group_runner& r = runner_for(*d.b);
      for (i64 g = range.begin(); g < range.end() && g < stop.load(std::memory_order_relaxed); ++g) {
        r.reset_arena();
        auto e = r.run(d, serial, g, globals);
        r.flush_warnings(log);
        if (e) {
          std::lock_guard lock(m);
          if (g < first_group) first_group = g, first = std::move(e), stop = g;
        }
      }
    };
    if (threads > 1) arena_for(threads).execute([&] { tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body); });
    else tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body);
  }
  if (!first) first = inter_group_race(d, globals.accesses);

  launch_result result;
  report rep;
  for (auto& [site, e] : log.by_site) {
    const std::string msg = e.message + ", " + std::to_string(e.count) + (e.count == 1 ? " time" : " times");
    rep.diagnostics.push_back({e.kind, severity::warning, {e.where}, e.count, {msg}, msg});
    result.warnings.push_back({e.kind, e.where, e.count, msg});
  }
  if (first) {
    diagnostic dg{ki::reference::to_string(first->error.error_kind()), severity::error, first->where, first->count, first->instances,
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

std::int64_t host_threads(const backend& b) {
  const int t = resolve_threads(b);
  return t > 0 ? t : tbb::this_task_arena::max_concurrency();
}

}  // namespace ki::reference::detail
