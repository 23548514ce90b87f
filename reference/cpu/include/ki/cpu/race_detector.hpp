// The oracle's checked-access mode (kernels compiled with KI_CHECKED_ACCESS=1, see
// ki/detail/cpu/checked.hpp), for both layers: records each element access of the running
// work-group and reports two work-items that touch an element, one writing, with nothing
// ordering them. One detector serves KI kernels (reference/src/group_runner.hpp: work-items on
// fibers, ordered by barriers and sub_group_barriers) and KA kernels (src/ka.cpp: each phase's
// work-items one after another, ordered by g.synchronize() and collectives); what differs is
// where the running work-item and the running interval come from (checked_group) and the
// layer's words in the reports (race_words).
//
// How reads, writes and races are told apart. Instrumented kernels (KI_CHECKED_HOOKS, the
// default of ki::reference_checked): each plain load or store arrives through `plain` as what it
// is, and is judged at once against the element's record (the shadow) of the running barrier
// interval, named by its own instruction's line (the subscript's where the debug information
// has none). The memory checked: the group's local memory (KA: its private memory too), and
// global memory (the arrays the group subscripted and the oracle's live allocations); other
// addresses (the work-item's stack, the kernel object, the executor) are not. The element is
// the subscripted array's where one named it, else the access itself.
// Subscripts only (KI_CHECKED_HOOKS=0): a work-item runs from one sync point to the next (a
// segment) without another work-item of its group running. So an access is recorded with the
// element's bytes before it, and when the segment ends (the item reaches a sync point, another
// item makes an access, or the group ends) comparing the bytes tells a write (changed) from a
// read (unchanged, which includes writing the value the element already held). Either way, two
// accesses of an element by different work-items race when one writes and no barrier (or,
// within a sub-group, a sub_group_barrier of a segment holding both) lies between them. Atomic
// accesses are exempt; so are a KA kernel's group-level code (every work-item's, on a GPU).
// Races between work-groups are found at the launch's end from each group's global accesses
// (inter_group_race). Reads of local (KA: private) memory that nothing of the group wrote
// before them are warnings (the value read is the fill, e.g. the oracle's poison).
#pragma once
#include <array>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <ki/cpu/checked_support.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/ka/group.hpp>
#include <ki/source_location.hpp>

namespace ki::detail::cpu {

/// One warning site of a launch: its kind, where, the message (without the count), how often.
struct warning_entry {
  std::string kind, where, message;
  std::int64_t count = 0;
};
using warning_sites = std::map<std::string, warning_entry>;  // "file:line kind" -> entry
/// A launch's warnings, merged from every thread's runner as its groups end.
struct launch_warnings {
  std::mutex m;
  warning_sites by_site;
  /// Moves `sites` (a runner's counts) in; `sites` is left empty.
  void merge(warning_sites& sites) {
    if (sites.empty()) return;
    std::lock_guard lock(m);
    for (auto& [site, entry] : sites) {
      auto& e = by_site[site];
      if (e.count == 0) e = std::move(entry);
      else e.count += entry.count;
    }
    sites.clear();
  }
};

/// A group's failure, with what the launch report says about it beyond the exception.
struct group_failure {
  group_failure(kernel_error e, std::int64_t n = 1, std::vector<std::string> inst = {}, std::vector<std::string> w = {})
      : error(std::move(e)), count(n), instances(std::move(inst)), where(std::move(w)) {}
  kernel_error error;
  std::int64_t count = 1;              // instances (races found in the group)
  std::vector<std::string> instances;  // the first ones
  std::vector<std::string> where;      // the source locations involved
};

/// One allocation of the running group's own memory: local memory (KI's localmemory, KA's
/// localmem), or a KA kernel's private memory (@private: its work-items' slots).
struct local_alloc {
  const void* key;
  void* p;
  std::size_t bytes;
  source_location where;
  bool filled = false;  ///< (private memory) the runtime writes it before any read
};

/// A weak memory model (the oracle's memory_model::weak, reference/src/store_buffer.hpp): plain
/// accesses go there instead of the race record. The calls the detector makes, each named for
/// the running work-item `item` (its linear local id).
class weak_memory {
 public:
  /// `item` runs from here (it is about to access memory): memory shows its view.
  virtual void run(std::int64_t item) = 0;
  /// `item` is about to store `n` bytes at `p` / load `n` bytes from `p`.
  virtual void store(std::int64_t item, unsigned char* p, std::size_t n, bool local) = 0;
  virtual void load(std::int64_t item, unsigned char* p, std::size_t n) = 0;
  /// A release / an acquire of `item` (an atomic or fence with that order).
  virtual void release(std::int64_t item) = 0;
  virtual void acquire(std::int64_t item) = 0;
  /// A barrier released the work-items (`local`, `global`: the memory it orders).
  virtual void barrier(bool local, bool global) = 0;
  /// `item` passed a sub_group_barrier.
  virtual void sub_group_barrier(std::int64_t item) = 0;
  /// Recording ran out of memory (the hooks cannot throw): reported when the group ends.
  virtual bool out_of_memory() const = 0;

 protected:
  ~weak_memory() = default;
};

/// The words of a layer's reports.
struct race_words {
  const char* sync;   ///< what orders accesses: "with no <sync> between them"
  const char* local;  ///< local memory: "element 3 of <local> at k.cpp:9"
  /// A read after an unordered write: "write-read" (true: in the order they ran) or "read-write"
  /// (false: the pair).
  bool in_order;
};
inline constexpr race_words ki_race_words{"barrier", "localmemory", false};
inline constexpr race_words ka_race_words{"synchronize", "localmem", true};

/// One work-group's access to an element of global memory (not local), kept until the launch
/// ends to find races between work-groups.
struct global_access {
  const void* addr;
  std::int64_t group;  // linear group id
  xyz<std::int64_t> group_id, local_id;
  bool wrote;
  touch how;              // what the group's recorded access was (wrote: touch::wrote)
  source_location where;  // the subscript's (an instrumented access: resolved from pc when reported)
  std::int64_t count, index;
  const void* pc = nullptr;      // the instruction (instrumented kernels), else null
  const void* caller = nullptr;  // the return address of its function (the shadow call stack), else null
};
/// What deciding races between work-groups needs of one element of global memory: the accesses
/// of the two lowest groups that touched it and of the lowest that wrote it (group -1: none).
/// A race iff some group wrote it and two groups touched it; the pair reported is the lowest
/// writer and the lowest other group, whatever order the groups ended in.
struct global_element {
  global_access lo[2];
  global_access writer;
};
/// The launch's record for races between work-groups: one entry per element of global memory
/// the launch touched (groups merge theirs as they end), so its size is bounded by the elements
/// touched, not by groups x elements. At most `limit` entries: beyond, the launch fails with a
/// `resource` error that says so, instead of exhausting memory.
struct global_log {
  std::mutex m;
  std::unordered_map<const void*, global_element> elements;
  std::size_t limit = 0;  ///< 0: no limit
  bool overflowed = false;
  /// ki::reference::same_value_writes::race. false (allowed): an access that may be a write of
  /// the value the element held (may_keep) races with no other group's write.
  bool same_value_race = true;
  /// One group's access to an element (its first, or its first write). false: over the limit.
  bool merge(const global_access& a);
  /// The races the kernel declares intended (ki::intended_race): counted as warnings.
  intended_races intended;
  /// ki::reference::race_reports::all: every race of the launch is recorded here, and a group
  /// with races does not end the launch; null (first): the lowest group with a race ends it.
  race_tally* tally = nullptr;
};

/// A race as the trace hook sees it: the first access (a), then the second (b).
struct race_note {
  const char* kind;  // "read-write", "write-write", ...
  std::int64_t a_item, b_item;
  source_location a_where, b_where;
  const void* address;
  std::int64_t index;
  const std::string& text;  // the report's instance
};

/// The group being checked, as the runner describes it.
struct checked_group {
  const race_words* words = &ki_race_words;
  const char* prefix = "ki::reference";  ///< of the failures' messages
  xyz<std::int64_t> size{};              ///< the work-group's size (local ids of linear ones)
  /// KI: work-item 0's state, the others `stride` bytes apart; the running work-item is
  /// cpu::current. Null for a KA group.
  const item_state* items = nullptr;
  std::size_t stride = 0;
  /// KA: the group's state (ki/ka/group.hpp): the running work-item (`current` in a phase; none
  /// in group-level code) and interval (`epoch`, which each synchronisation advances). Null for KI.
  const ki::ka::detail::group_state* ka = nullptr;
  std::int64_t count = 0;  ///< work-items
  const std::vector<local_alloc>* locals = nullptr;
  const std::vector<local_alloc>* privates = nullptr;  ///< (KA) private memory, or null
  warning_sites* warnings = nullptr;                   ///< where uninitialised reads are counted
  const char* fill = "";                               ///< what unwritten memory holds, for the warning
  bool same_value_race = true;                         ///< a read of a value another item wrote unordered is a race
  /// (KI) The runner's barrier fast-path site, and what closes the fast path: an access sets it,
  /// so that the next barrier takes the slow path, which flushes. Null: none.
  source_location* fast_point = nullptr;
  source_location closed{};
  /// Called for every recorded access and every race found (the trace hook,
  /// ki/reference/events.hpp), or null (KI only: `items` is set).
  void (*on_access)(void* ctx, const item_state& it, const void* address, std::int64_t index,
                    const source_location& where) = nullptr;
  void* on_access_ctx = nullptr;
  void (*on_race)(void* ctx, const race_note& r) = nullptr;
  /// The launch's record (its intended races, its tally of every race), or null.
  global_log* launch = nullptr;
};

class race_detector final : public ki::detail::checked::recorder {
 public:
  /// Per group (before its first work-item runs).
  void start_group(const checked_group& g, std::int64_t group_linear, xyz<std::int64_t> group_id);
  /// The running segment ends (a sync point; the group's end): its accesses are judged.
  void flush() {
    if (deferred_.size != 0) settle();
    if (!accesses_.empty()) flush_accesses();
  }
  bool pending() const { return !accesses_.empty() || deferred_.size != 0; }
  /// Drops what the running segment recorded (the group failed).
  void drop_pending();
  /// The running barrier interval: accesses in different ones are ordered. The runner passes
  /// its round, which changes at every release and every group's start.
  /// A barrier narrowed by flags (ki::barrier(flags)) starts a new interval only for the memory
  /// all of its work-items' flags name: the other memory's accesses stay unordered across it.
  void set_interval(std::uint64_t round) {
    if (round_flags_ & local_bit) local_interval_ = round;
    if (round_flags_ & global_bit) global_interval_ = round;
    round_flags_ = local_bit | global_bit;
  }
  /// A barrier released the group's work-items: the next interval starts, and weak memory
  /// publishes (what the barrier orders).
  void barrier_released(std::uint64_t round) {
    if (weak_ != nullptr) weak_->barrier(round_flags_ & local_bit, round_flags_ & global_bit);
    set_interval(round);
  }
  /// Work-item `linear` passed a sub_group_barrier with the lanes [begin, begin + lanes) of its
  /// sub-group (its segment; the whole sub-group without a width). Spec: a segment barrier makes
  /// writes before it "visible to the segment. It doesn't order memory with other segments":
  /// its accesses before it are ordered with those after it of the lanes in that range only.
  /// Each work-item of the range is told once per barrier, all before any of them runs on.
  void sub_group_barrier_passed(std::int64_t linear, std::int64_t begin, std::int64_t lanes);
  /// Weak memory (memory_model::weak), from the group's start on: plain accesses go to the
  /// store buffers instead of the race record (no race is judged); null: races are checked.
  void set_store_buffer(weak_memory* b) { weak_ = b; }
  /// After the group ended normally: its races as a failure, else its global accesses are
  /// kept in `globals` for inter_group_race. Also a failure: recording ran out of memory, or
  /// `globals` reached its limit (`resource`).
  std::optional<group_failure> finish(const char* kernel_name, global_log& globals);
  /// The group's races as its failure (after a race).
  group_failure race_failure(const char* kernel_name) const;

  // checked::recorder (from kernels compiled in checked-access mode)
  void access(const ki::detail::checked::array_info& a, std::int64_t index, const source_location& where) override;
  void atomic(const void* p) override;
  void intended(const void* p, std::size_t bytes, const source_location& where) override {
    if (g_.launch != nullptr) g_.launch->intended.declare(p, bytes, where);
  }
  void barrier_flags(unsigned orders) override { round_flags_ &= orders; }
  void name(const ki::detail::checked::array_info& a, std::int64_t index, const source_location& where) override;
  void plain(const void* addr, std::size_t size, bool write, const void* pc) override;
  void ordering(const void* p, int order, bool writes) override;

 private:
  static constexpr std::size_t npos = static_cast<std::size_t>(-1);
  struct pending_access {
    const void* addr;
    std::size_t size;
    std::size_t old;            // offset of its bytes before the segment in access_bytes_
    std::int64_t count, index;  // the array's elements, the element's index
    source_location first, last;
    bool atomic;
    /// (KA) Settled at the element's second access: whether the accesses before it left the
    /// bytes as they were (then they were reads: a read followed by a write of the element is
    /// judged as both, as KA reported before one detector served both layers).
    bool lead_settled = false, leading_read = false;
  };
  struct access_rec {
    std::int64_t item = -1;        // linear local id; -1: none
    source_location where;         // the subscript's (instrumented: the fallback of pc's line)
    std::uint64_t at = 0;          // sg_serial_ when the access was judged (sub-group barriers before it)
    const void* pc = nullptr;      // the instruction (instrumented kernels), else null
    touch how = touch::read;       // (set by judge: what the reports call it)
    const void* caller = nullptr;  // the return address of the function it is in (checked::caller_of)
  };
  /// An instrumented write under same_value_writes::allowed, judged once the element's new
  /// bytes are known (the work-item's next recorded event): a write of the value it held is
  /// judged as a read that other items' writes do not race with.
  struct deferred_write {
    const void* addr = nullptr;
    std::size_t size = 0;  // 0: none
    unsigned char old[16];
    access_rec rec;
    std::int64_t count = 0, index = 0;
  };
  /// A sub_group_barrier a work-item passed: its serial and the lanes it ordered.
  struct sg_pass {
    std::uint64_t serial;
    std::int64_t begin, lanes;
  };
  /// Per work-item, the sub-group barriers that may still order one of its accesses with a later
  /// one of another lane: a newer barrier whose range covers an older one's replaces it. The
  /// ranges that contain one lane are segments of widths that divide the sub-group's, nested
  /// (or the same), so at most one per width remains: few. Capacity beyond that drops the oldest
  /// (an ordering forgotten: a race reported that is none; not reached with valid widths).
  static constexpr std::size_t max_sg_passes = 8;
  struct sg_history {
    sg_pass pass[max_sg_passes];
    std::size_t count = 0;
  };
  struct shadow {
    std::uint64_t epoch = ~0ull;  // the barrier interval the records below belong to
    access_rec writer, readers[2];
    bool written = false;  // in this group, ever (local memory: initialised)
  };

  const item_state& item_at(std::int64_t linear) const {
    return *reinterpret_cast<const item_state*>(reinterpret_cast<const char*>(g_.items) +
                                                static_cast<std::size_t>(linear) * g_.stride);
  }
  std::size_t find_access(const void* addr);
  static const local_alloc* site_of(const std::vector<local_alloc>* sites, const void* p) {
    if (sites == nullptr) return nullptr;
    const auto* b = static_cast<const unsigned char*>(p);
    for (const auto& l : *sites)
      if (b >= static_cast<const unsigned char*>(l.p) && b < static_cast<const unsigned char*>(l.p) + l.bytes)
        return &l;
    return nullptr;
  }
  /// The group's own memory holding p (local memory; KA: private memory too), or null.
  const local_alloc* local_of(const void* p) const {
    const local_alloc* l = site_of(g_.locals, p);
    return l != nullptr ? l : site_of(g_.privates, p);
  }
  bool is_private(const local_alloc* l) const {
    return g_.privates != nullptr && !g_.privates->empty() && l >= g_.privates->data() &&
           l < g_.privates->data() + g_.privates->size();
  }
  /// The running work-item's linear local id, or -1: none (KI: code outside the work-items; KA:
  /// group-level code, which every work-item runs on a GPU). KA: a new interval (a
  /// synchronisation since the last access) first judges the last segment's accesses.
  std::int64_t running() {
    if (g_.ka == nullptr) {
      const item_state* it = current;
      return it != nullptr ? it->local_linear : -1;
    }
    const auto& st = g_.ka->view != nullptr ? *g_.ka->view : *g_.ka;
    if (!st.in_phase || st.current < 0) return -1;
    if (static_cast<std::uint64_t>(st.epoch) != ka_epoch_) [[unlikely]] {
      flush();
      ka_epoch_ = static_cast<std::uint64_t>(st.epoch);
      local_interval_ = global_interval_ = ka_epoch_;
    }
    return st.current;
  }
  xyz<std::int64_t> local_id_of(std::int64_t linear) const {
    if (g_.items != nullptr) return item_at(linear).local_id;
    const auto& s = g_.size;
    return {linear % s.x, linear / s.x % s.y, linear / (s.x * s.y)};
  }
  [[gnu::noinline]] void record_plain(std::int64_t item, const void* addr, std::size_t size, bool write, const void* pc,
                                      const local_alloc* local, const ki::detail::checked::array_info* named,
                                      const allocation_view::range* alloc);
  bool ordered(const access_rec& r, std::int64_t me) const;
  std::string describe(std::int64_t index, std::int64_t count, const local_alloc* local) const;
  void race(const char* kind, const access_rec& a, const char* a_did, const access_rec& b, const char* b_did,
            const void* addr, std::int64_t index, std::int64_t count, const local_alloc* local);
  void flush_accesses();
  /// Judges one access of an element whose kind is known (`changed`: a write that counts as
  /// one; `real_read`: a load, which races with another item's unordered write whatever the
  /// same-value policy; `known_write`: an instrumented store that left the bytes as they were).
  void judge(const void* addr, access_rec mine, bool changed, bool real_read, std::int64_t count, std::int64_t index,
             const local_alloc* local, const source_location* first, bool known_write = false);
  void settle();
  source_location loc(const access_rec& r) const { return access_location(r.pc, r.where); }
  void uninitialized_read(const source_location& where, std::int64_t index, const local_alloc& l, std::int64_t item);

  checked_group g_{};
  std::int64_t group_linear_ = 0;
  xyz<std::int64_t> group_id_{};
  static constexpr unsigned local_bit = 1, global_bit = 2;
  std::uint64_t local_interval_ = 0, global_interval_ = 0;  // the running intervals, per memory
  unsigned round_flags_ = local_bit | global_bit;           // what the round's barrier orders
  std::vector<sg_history> sg_passes_;  // per work-item: sub_group_barriers that may order its accesses
  std::uint64_t sg_serial_ = 0;        // +1 per work-item passing a sub_group_barrier, this group
  bool sg_dirty_ = false;
  std::vector<pending_access> accesses_;  // the running segment's accesses, one per element
  std::vector<unsigned char> access_bytes_;
  std::unordered_map<const void*, std::size_t> access_index_;  // for long segments
  std::int64_t access_owner_ = -1;                             // whose accesses accesses_ holds (linear local id)
  std::unordered_map<const void*, shadow> shadow_;
  /// A direct-mapped cache in front of shadow_ (its values do not move when it rehashes).
  struct shadow_slot {
    const void* addr = nullptr;
    shadow* s = nullptr;
  };
  std::array<shadow_slot, 1024> shadow_cache_{};
  shadow& shadow_of(const void* a) {
    shadow_slot& c = shadow_cache_[(reinterpret_cast<std::uintptr_t>(a) >> 2) & (shadow_cache_.size() - 1)];
    if (c.addr != a) c = {a, &shadow_[a]};
    return *c.s;
  }
  std::unordered_map<const void*, global_access> group_globals_;
  std::int64_t races_ = 0;
  std::vector<std::string> race_instances_, race_where_;
  std::optional<std::pair<source_location, xyz<std::int64_t>>> first_race_;
  std::uint64_t ka_epoch_ = ~0ull;  // (KA) the interval of the accesses recorded last
  // Instrumented kernels:
  array_names names_;       // the group's subscripted arrays, the running item's subscripts
  allocation_view allocs_;  // the oracle's live allocations (global memory)
  deferred_write deferred_;
  std::int64_t plain_owner_ = -1;  // whose subscripts names_ holds
  bool out_of_memory_ = false;     // recording an access ran out of memory (reported at finish)
  weak_memory* weak_ = nullptr;    // weak memory: the group's store buffers
};

/// Races between work-groups on global memory (nothing orders the work-groups of a launch):
/// the first element (by address) that two groups access, one writing.
/// The first race between work-groups (the lowest address), if any, of those not declared
/// intended; those declared are counted in `intended` (warnings); with a tally (race_reports::all)
/// every one is recorded there.
/// `prefix`: of the message ("ki::reference").
std::optional<group_failure> inter_group_race(const char* prefix, const char* kernel_name, global_log& log,
                                              warning_sites& intended);

}  // namespace ki::detail::cpu
