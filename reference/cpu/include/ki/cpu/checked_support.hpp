// The CPU runtime: what checked-access mode's race detector (ki/cpu/race_detector.hpp, one for
// KI and KA kernels) and the oracle's other checks use for the
// accesses the instrumentation hooks report (ki/detail/cpu/checked.hpp): which memory is
// checked, which subscript names an access, and the source line of an instruction.
#pragma once
#include <cstddef>
#include <cstdint>
#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <ki/detail/cpu/checked.hpp>
#include <ki/errors.hpp>
#include <ki/source_location.hpp>

namespace ki::detail::cpu {

/// Global memory that checked-access mode watches besides the arrays a kernel subscripts: every
/// live allocation of the oracle (ki::allocate on ki::reference). Thread-safe.
void checked_allocation_added(const void* p, std::size_t bytes);
void checked_allocation_removed(const void* p);

/// A snapshot of the live allocations for one thread's recorder, refreshed only when they
/// changed (a counter), searched without a lock.
class allocation_view {
 public:
  struct range {
    const unsigned char* begin;
    std::size_t bytes;
  };
  /// Re-reads the allocations if they changed since the last call (once per work-group).
  void refresh();
  /// The allocation holding p, or null.
  const range* find(const void* p) const {
    const auto* b = static_cast<const unsigned char*>(p);
    if (b < lo_ || b >= hi_) return nullptr;  // (most misses: the stack, the kernel object)
    return search(b);
  }

 private:
  const range* search(const unsigned char* b) const;
  std::vector<range> ranges_;                          // sorted by begin
  const unsigned char *lo_ = nullptr, *hi_ = nullptr;  // the span of all of them
  std::uint64_t version_ = ~0ull;
};

/// The elements an access of `size` bytes at `b` touches (one access may span several: a
/// vectorised loop's load, a struct copy), counted in the array that holds it: the subscripted
/// array `named` if there is one, else the allocation [p, p + bytes) taken as elements of `size`
/// bytes. A wide access past the array's end is clamped to its last element.
struct accessed_elements {
  const unsigned char* base;
  std::size_t element_size;
  std::int64_t count, first, last;
  const unsigned char* element(std::int64_t i) const { return base + i * static_cast<std::int64_t>(element_size); }
};
inline accessed_elements elements_of(const unsigned char* b, std::size_t size, const checked::array_info* named,
                                     const void* p, std::size_t bytes) {
  accessed_elements r{};
  if (named != nullptr) {
    r.base = static_cast<const unsigned char*>(named->data);
    r.element_size = named->element_size;
    r.count = named->count;
  } else {
    r.base = static_cast<const unsigned char*>(p);
    r.element_size = size;
    r.count = static_cast<std::int64_t>(bytes / size);
  }
  const auto e = static_cast<std::int64_t>(r.element_size);
  r.first = (b - r.base) / e;
  r.last = (b + size - 1 - r.base) / e;
  if (r.count > 0 && r.last >= r.count) r.last = r.count - 1;
  return r;
}

/// The arrays the running work-group subscripted (ki::span, localmemory, KA private memory),
/// and the subscripts of the running work-item that name its next accesses. Reset per
/// work-group (arrays) and per work-item stretch (subscripts).
class array_names {
 public:
  struct subscript {
    checked::array_info a;
    std::int64_t index;
    source_location where;
    const unsigned char *begin = nullptr, *end = nullptr;  // the element's bytes (null: none)
  };
  void clear_arrays() {
    arrays_.clear();
    clear_subscripts();
  }
  void clear_subscripts() {
    if (live_ == 0) return;
    for (auto& s : recent_) s.begin = s.end = nullptr;
    live_ = 0;
  }
  void add(const checked::array_info& a, std::int64_t index, const source_location& where);
  /// The most recent subscript of the element holding p (one of the last few), or null.
  const subscript* recent(const void* p) const;
  /// The same, taken: it names one access (the next ones of the element, e.g. the store of
  /// `a[i] += 1` or later uses of `auto& r = a[i]`, are named by their instructions' lines).
  std::optional<subscript> take(const void* p);
  /// The array holding p that was subscripted in this group (the latest), or null.
  const checked::array_info* array_of(const void* p) const {
    const auto* b = static_cast<const unsigned char*>(p);
    for (std::size_t k = arrays_.size(); k-- > 0;)
      if (b >= arrays_[k].begin && b < arrays_[k].end) return &arrays_[k].a;
    return nullptr;
  }
  /// Forgets the subscripts of the element at p (an atomic took its address).
  void forget(const void* p);

 private:
  struct array {
    checked::array_info a;
    const unsigned char *begin, *end;
  };
  static constexpr std::size_t ring = 8;
  subscript recent_[ring]{};
  std::size_t next_ = 0, live_ = 0;  // live_: entries set since the last clear (0: skip the search)
  std::vector<array> arrays_;        // most recently added last
};

/// The source line of the code at pc (a return address of a hook: the instruction before it)
/// in the user's code: the innermost frame of its inlining chain that is neither in ki's own
/// headers nor in the compiler's or system's headers (/usr/), so that an access inside
/// ki::sub_group_load or a std:: algorithm is named by its caller's line. {} (line 0) when the
/// program has no debug information there or `addr2line` (binutils) is not found. Slow the
/// first time per pc (it runs addr2line), cached after: call it only to report.
source_location code_location(const void* pc);
/// Where the user's code reached the access at pc named at `at` (its subscript's line) from,
/// when that is elsewhere: an indexing helper (as OpenCL macros become) whose access the
/// compiler inlined into its caller is `called` from the caller's line (pc's inlining chain
/// has the call); a subscript that made a reference (a helper returning T&) is used at the line
/// of the instruction at pc. Line 0: nothing to add (no debug information, an access in the
/// kernel's own body). `caller`: the return address of the function the access is in (checked
/// mode's shadow call stack, checked::caller_of), for a helper the compiler did not
/// inline. Slow the first time per pc, like code_location.
struct helper_use {
  source_location at{};
  bool called = false;
};
helper_use helper_caller(const void* pc, const source_location& at, const void* caller = nullptr);
/// " (in a function called at k.cpp:31)" or " (used at k.cpp:31)" for helper_caller, or "".
std::string helper_note(const void* pc, const source_location& at, const void* caller = nullptr);

/// The line to name an access by: its subscript's (`named`, where one named it: the line of the
/// subscript expression, also in a statement over several lines), else its own instruction's
/// (pc: an access through a pointer, or a reference used after the subscript's access).
inline source_location access_location(const void* pc, const source_location& named) {
  if (named.line != 0 || pc == nullptr) return named;
  return code_location(pc);
}

/// How an access left an element, as checked-access mode tells it (both layers, the record of
/// global memory between work-groups too). An access that leaves the bytes as they were is a
/// read where the kernel is instrumented (KI_CHECKED_HOOKS tells loads from stores), a write of
/// the value the element held where the hooks saw a store, and either where only the
/// subscripts are seen (the bytes cannot tell a read from such a write).
enum class touch : std::uint8_t { read, wrote, same_value_write, read_or_same_value_write };
/// The access as a race report names it: "<work-item> read it at ...".
inline const char* did(touch t) {
  switch (t) {
    case touch::read: return "read it";
    case touch::wrote: return "wrote it";
    case touch::same_value_write: return "wrote it (the value it already held)";
    case touch::read_or_same_value_write: return "read it";  // (the report adds ambiguous_read_note)
  }
  return "touched it";
}
/// Ends a race report one of whose accesses is a touch::read_or_same_value_write.
inline constexpr const char* ambiguous_read_note =
    " (the access named a read left the element as it was: without the hooks (KI_CHECKED_HOOKS) a store of the "
    "value the element held looks the same; KI_REFERENCE_SAME_VALUE_WRITES=allowed takes it as such a store)";
/// The access may be a write of the value the element held: under the same-value policy
/// `allowed` (ki::reference::same_value_writes) it races with no write.
inline bool may_keep(touch t) { return t == touch::same_value_write || t == touch::read_or_same_value_write; }
/// A write (`changed`: the bytes differ after it), a read known as one, else per the hooks'
/// `known_write` (instrumented: a store; false: a subscript only).
inline touch touch_of(bool changed, bool known_read, bool known_write) {
  if (changed) return touch::wrote;
  if (known_read) return touch::read;
  return known_write ? touch::same_value_write : touch::read_or_same_value_write;
}

/// The races a launch's kernel means (ki::intended_race, <ki/intended_race.hpp>): the arrays
/// and the accesses (their subscripts' lines) declared so, as the work-items declared them.
/// Checked-access mode asks it before reporting a race: one that touches a declared array, or
/// whose either access is a declared one, is counted as intended (a warning naming the
/// declaration), not reported as an error. Thread-safe (the groups of a launch share it).
class intended_races {
 public:
  void declare(const void* p, std::size_t bytes, const source_location& where);
  /// The declaration that covers a race on the element at p between accesses at a and b, or
  /// null (the location stays valid until the launch ends).
  const source_location* match(const void* p, const source_location& a, const source_location& b) const;
  bool empty() const { return empty_.load(std::memory_order_relaxed); }

 private:
  struct range {
    const unsigned char *begin, *end;
    source_location where;
  };
  mutable std::mutex m_;
  std::vector<range> ranges_;
  std::vector<source_location> sites_;
  std::atomic<bool> empty_{true};
};

/// Checked-access mode's record of every race of a launch (ki::reference::race_reports::all):
/// per pair of lines (the race's kind and both accesses' locations), how many times, in how many
/// work-groups, and the first instance's words; and the race error of the launch's lowest
/// failing work-group, which the launch reports with the record appended. Thread-safe.
class race_tally {
 public:
  /// One race, found in work-group `group` (-1: between work-groups).
  void add(std::int64_t group, const std::string& kind, const source_location& a, const source_location& b,
           const std::string& text);
  /// A work-group's race error (the launch keeps the one of the lowest group).
  void add_error(std::int64_t group, const kernel_error& e);
  bool empty() const;
  /// The error to report: the lowest group's race error with the record appended, or nullopt.
  std::optional<kernel_error> error() const;
  /// What the record says, appended to an error's message ("" where empty).
  std::string summary() const;
  /// The first instance of each pair of lines (a launch report's instances).
  std::vector<std::string> instances() const;
  std::int64_t total() const;

 private:
  struct site {
    std::string text;
    std::int64_t count;
  };
  static constexpr std::size_t max_sites = 32;
  mutable std::mutex m_;
  std::map<std::string, std::size_t> index_;  // kind + both locations -> sites_
  std::vector<site> sites_;                   // in the order first found
  std::int64_t total_ = 0, unlisted_ = 0;
  std::set<std::int64_t> groups_;
  bool between_ = false;
  std::optional<std::pair<std::int64_t, kernel_error>> first_;
};

/// e with `more` appended to its message (the same kind, work-group, work-item and line).
kernel_error with_more(const kernel_error& e, const std::string& more);

}  // namespace ki::detail::cpu
