// Private: the state that device functions read on CPU backends.
//
// On a CPU backend a work-item is ordinary host code running on some thread (on a fiber for
// the reference backend). The executor points `current` at the running work-item's state
// before it runs or resumes it, so index queries are plain loads, and synchronisation points
// call back into the executor through `group_state::exec`.
#pragma once
#include <ki/detail/private.hpp>
// Host-only: device functions use it only in their !KI_GPU_PASS branch, and the reference
// backend's host code includes it in every pass.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <ki/detail/cpu/sub_group_ops.hpp>  // collective
#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

namespace ki::detail::cpu {

/// What a CPU backend implements for the operations that involve other work-items or group
/// resources. Called only from inside a work-item.
class executor {
 public:
  /// A sub-group communication function: returns once it has been performed for the caller's
  /// sub-group (or segment), with the caller's result written.
  virtual void collective(collective& c) = 0;
  /// barrier(): returns once every work-item of the group has reached this barrier.
  virtual void barrier(source_location where) = 0;  // (by value: in registers, so callers can tail-call it)
  /// localmemory: the group's allocation for the call site `key` (same key, same memory).
  virtual void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) = 0;
  /// dynamic_localmemory: the group's local memory sized at launch (launch_options::
  /// dynamic_local_memory; *bytes is set to its size), the same memory at every call; the first
  /// call (`where`) allocates it. Null where the launch gave none.
  virtual void* dynamic_local_memory(std::size_t* bytes, const source_location& where) = 0;
  /// The localmemory call that allocated the group's local memory containing `p`, or null
  /// (for out-of-bounds errors: called on their path only).
  virtual const source_location* local_memory_site(const void* p) const = 0;

 protected:
  ~executor() = default;
};

/// The call-site key of dynamic_localmemory's allocation (executors allocate it as local memory
/// of this key, aligned to dynamic_local_align, on its first call in a group).
inline constexpr char dynamic_local_key = 0;
inline constexpr std::size_t dynamic_local_align = 16;

struct item_state;

/// A work-item's random stream (ki/rand.hpp): valid while `epoch` is its group's, else it is
/// the launch seed's from draw 0 (so a runner resets nothing per group).
struct rand_slot {
  std::uint64_t key = 0;
  std::uint64_t epoch = 0;
  std::uint32_t draws = 0;  ///< draws since the launch started or the work-item seeded
  bool seeded = false;      ///< ki::seed was called
};

/// The oracle's checks of ki::seed (null on backends that do not check).
class rand_checker {
 public:
  /// Before the work-item, which has drawn `draws` numbers, seeds with s at `where`.
  virtual void seeded(const item_state& it, std::uint64_t s, std::uint32_t draws, const source_location& where) = 0;
  /// Before the work-item's first draw, which is unseeded, at `where`.
  virtual void unseeded_draw(const item_state& it, const source_location& where) = 0;

 protected:
  ~rand_checker() = default;
};

/// A runner's random streams of the group it runs: slots[local_linear] for each work-item.
struct rand_group {
  std::uint64_t launch_seed = 0;
  std::uint64_t epoch = 0;  ///< +1 per group a runner starts (never 0 while it runs one)
  rand_slot* slots = nullptr;
  rand_checker* check = nullptr;
};

/// Shared by all work-items of a work-group.
struct group_state {
  xyz<std::int64_t> group_id{};
  xyz<std::int64_t> global_base{};  ///< group_id * local_size: kept by set_group_id
  xyz<std::int64_t> local_size{1, 1, 1};
  xyz<std::int64_t> num_groups{1, 1, 1};
  std::int64_t items = 1;            ///< work-items in the group (product of local_size)
  std::int64_t sub_group_width = 1;  ///< the device's sub-group width
  std::int64_t num_sub_groups = 1;
  rand_group* rand = nullptr;  ///< the runner's random streams (ki/rand.hpp)

  void set_group_id(xyz<std::int64_t> g) {
    group_id = g;
    global_base = {g.x * local_size.x, g.y * local_size.y, g.z * local_size.z};
  }
};

/// One work-item: what the index queries read. The executors keep where a work-item is
/// (running, waiting...) apart from it, so that a barrier need not touch it.
struct item_state {
  const group_state* group = nullptr;
  xyz<std::int64_t> local_id{};
  std::int64_t local_linear = 0;  ///< x fastest
  std::int64_t sub_group_id = 0;
  std::int64_t sub_group_lane = 0;
  std::int64_t sub_group_size = 1;  ///< work-items in this item's sub-group
};

/// The optional device features that device functions check at run time, for the running
/// group: the reference backend sets them from its profile around each group; elsewhere
/// (simd_cpu, outside kernels) the device has them all.
struct device_features {
  bool atomics64 = true;
  bool float64 = true;
  const char* profile = "";  ///< for messages
};
inline constinit thread_local device_features current_features{};

/// Thrown inside a work-item by an operation the device lacks (e.g. an atomic on a 64-bit type
/// without 64-bit atomics); the executor reports it as kernel_error::kind::unsupported naming
/// the work-item and `where`.
struct unsupported_operation : std::logic_error {
  unsupported_operation(const std::string& what, const source_location& at) : std::logic_error(what), where(at) {}
  source_location where;
};

/// Memory that only this thread can touch while it runs work-groups: the local memory of a
/// backend that runs each work-group's work-items on one thread, switching only at
/// synchronisation points (simd_cpu sets it; empty elsewhere). Atomics on it are performed as
/// plain operations (ki/atomic.hpp says why that is exact).
inline constinit thread_local std::uintptr_t private_begin = 0, private_end = 0;
inline bool group_private(const void* p) {
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  return a - private_begin < private_end - private_begin;  // one compare; empty range: never
}

/// The barriers' fast-path test: the same call site named by the same file-name pointer (a false
/// "no" only sends the caller to its slow path, which also compares the names).
inline bool same_site(const source_location& a, const source_location& b) {
  return a.line == b.line && a.column == b.column && a.file == b.file;
}

/// A suspended fiber (the CPU runtime's fiber core, <ki/cpu/fiber.hpp>): resumed by loading
/// rbp and rsp and jumping to pc (x86-64; with Boost.Context's switch only sp is used). Empty
/// while sp is null.
struct fiber_context {
  void* sp = nullptr;
  void* pc = nullptr;
  void* bp = nullptr;
};

/// The barrier ring: a backend's state for the inline barrier (ki/detail/cpu/barrier.hpp), set
/// by an executor that runs a work-group's items on one thread and lets a barrier switch
/// straight from a work-item to the next in the ring (simd_cpu). While `site` is the round's
/// barrier, every work-item of the group other than the running one is suspended, the ring
/// order is work-item order (after the last record comes the first), the items from `first`
/// up to the running one have arrived at `site` and the others wait to be resumed; a work-item
/// arriving at `site` whose successor is not `first` may suspend itself into its context
/// (ring_context_of) and resume its successor's, making it current. Every other case is the
/// executor's (file null: no round open, or no ring).
struct barrier_ring {
  source_location site{nullptr, 0, 0};
  const item_state* first = nullptr;
  char* begin = nullptr;  ///< work-item 0's item_state
  char* end = nullptr;    ///< `stride` bytes past the last one's
  std::size_t stride = 0;
};

/// Where the ring keeps a work-item's context: right before its item_state. An executor that
/// keeps a ring derives its work-item records from ring_context first, then item_state (a
/// fixed offset: the inline barrier loads no offset).
struct ring_context {
  fiber_context ctx;
};
inline fiber_context* ring_context_of(item_state* it) {
  return &reinterpret_cast<ring_context*>(reinterpret_cast<char*>(it) - sizeof(ring_context))->ctx;
}

/// The work-item running on this thread, or null outside kernels.
inline constinit thread_local item_state* current = nullptr;
/// The executor running work-groups on this thread (set with `current`, for the whole run): sync
/// points reach it without reading the work-item's record.
inline constinit thread_local executor* current_exec = nullptr;
/// No ring: its site matches no barrier.
inline constinit barrier_ring no_ring{};
/// The work-group running on this thread (set with `current_exec`: an executor runs one group
/// at a time per thread and keeps it in one group_state, which every work-item's `group` points
/// to). The index queries read it rather than the work-item's record: a load less per query,
/// and one that the compiler can hoist out of an item loop.
inline constinit thread_local const group_state* current_group = nullptr;
/// The barrier ring of that executor, if it has one (else no_ring: every barrier calls the
/// executor). Never null, so that the inline barrier tests nothing but the site.
inline constinit thread_local barrier_ring* current_ring = &no_ring;

/// The spin watch (docs/debugging.md, "Spin-waits"): what the running work-item's atomic
/// operations saw, so that one polling an atomic without end is reported instead of hanging
/// (the work-items of a group switch only at sync points on the CPU backends, and a KA phase
/// runs each work-item to its end, so a work-item that waits in a loop for another one of its
/// group, which has not run yet, would wait forever). Set by a CPU backend's runner while it
/// runs a group (null elsewhere: nothing is watched).
///
/// An operation is a repeat when the same work-item, with no sync point since (the executor
/// calls forget() at each one), finds at an address of `seen` the value it found there last;
/// any other is a change (another value, an address not in `seen`, which then replaces the
/// oldest entry), which starts the count again. When `repeats` reaches `next_check`, the
/// runner's `stuck` decides.
///
/// Exact (the oracle's KI work-items): every operation is seen. Sampling (simd_cpu, KA
/// kernels): an atomic operation only counts down watch_countdown, and every sample_period-th
/// one is seen; a seen one that is a repeat *arms* the watch, which then sees every operation,
/// exactly, until a change disarms it. So a report needs `limit` repeats in a row seen one by
/// one, as in exact mode; the fast path of an atomic is a decrement and a branch.
struct atomic_watch {
  static constexpr std::size_t watched = 4;  ///< addresses polled in turn that count as one spin
  /// Atomics between samples: odd (and prime), so that a loop of a few operations is sampled at
  /// each of them in turn, not always at the same one.
  static constexpr std::int64_t sample_period = 1021;
  struct seen_value {
    const void* p;       ///< null: none
    std::uint64_t bits;  ///< the value there before the last operation on it (its bytes)
  };
  seen_value seen[watched]{};    ///< the last addresses used
  std::size_t oldest = 0;        ///< the entry a new address replaces
  std::uintptr_t item = 0;       ///< the work-item that used them (item_of)
  std::uint64_t repeats = 0;     ///< operations in a row that saw nothing change
  std::uint64_t next_check = 0;  ///< `stuck` is called when repeats reaches it
  std::uint64_t limit = 0;       ///< next_check after a change
  bool stalled = false;          ///< (the runner's: cleared by a change)
  bool sampling = false;         ///< see above; false: exact
  bool armed = false;            ///< sampling: every operation is seen until a change
  /// KA kernels whose runner tracks the running work-item (the oracle): its local linear id
  /// (the group_state's `current`), else null. KI work-items are told apart by `current`; the
  /// work-items of a KA phase that is one loop (simd_cpu) are not told apart.
  const std::int64_t* ka_item = nullptr;
  /// The runner's part: report the work-item (throws, from inside it), or set next_check later.
  void (*stuck)(void* ctx, const void* p, const char* what, const source_location& where) = nullptr;
  /// Set while the schedule interleaves work-items at atomics (ki::reference::schedule::
  /// interleave_atomics): called before each atomic operation, it lets the other work-items of
  /// the group that can run do so first (up to their own next atomic or sync point).
  void (*interleave)(void* ctx) = nullptr;
  void* ctx = nullptr;

  void forget() {
    for (auto& e : seen) e.p = nullptr;
  }
  void changed();
};
inline constinit thread_local atomic_watch* current_watch = nullptr;
/// Atomic operations until the watch looks at one (below 0: it looks at the next). A runner
/// that sets current_watch sets it to 0; with no watch it only counts down (from INT64_MAX).
inline constinit thread_local std::int64_t watch_countdown = INT64_MAX;

inline void atomic_watch::changed() {
  repeats = 1;
  next_check = limit;
  stalled = false;
  if (sampling) {
    armed = false;
    watch_countdown = sample_period - 1;
  }
}

/// Before the atomic operation `what` at `where` on *p: shows the watch the value there. Out of
/// line: inlined, its body made the atomics of simd_cpu's histograms 13-28% slower
/// (BM_ka_histogram, BM_simd_histogram).
template <class T>
[[gnu::noinline]] void watch_atomic_on(T* p, const char* what, const source_location& where) {
  atomic_watch* const w = current_watch;
  if (w == nullptr) {  // (no runner watches: count down from the top again)
    watch_countdown = INT64_MAX;
    return;
  }
  watch_countdown = 0;  // (exact or armed: the next operation is seen too)
  if (w->interleave != nullptr) w->interleave(w->ctx);
  const T v = std::atomic_ref<T>(*p).load(std::memory_order_relaxed);
  std::uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  const std::uintptr_t who = current != nullptr      ? reinterpret_cast<std::uintptr_t>(current)
                             : w->ka_item != nullptr ? static_cast<std::uintptr_t>(*w->ka_item)
                                                     : 0;
  if (who != w->item) [[unlikely]] {
    w->item = who;
    w->forget();
  }
  const bool sample = w->sampling && !w->armed;
  atomic_watch::seen_value* const e = w->seen;
  std::size_t k = 0;
  while (k < atomic_watch::watched && e[k].p != p) ++k;
  if (k == atomic_watch::watched || e[k].bits != bits) {  // a change: a new address, or a new value
    if (k == atomic_watch::watched) {
      e[w->oldest] = {p, bits};
      w->oldest = (w->oldest + 1) % atomic_watch::watched;
    } else {
      e[k].bits = bits;
    }
    return w->changed();
  }
  if (sample) [[unlikely]] {  // a sample that repeats: from now on, see every operation
    w->armed = true;
    w->repeats = 1;
    w->next_check = w->limit;
    return;
  }
  if (++w->repeats < w->next_check) [[likely]]
    return;
  w->stuck(w->ctx, p, what, where);
}
template <class T>
[[gnu::always_inline]] inline void watch_atomic(T* p, const char* what, const source_location& where) {
  if (--watch_countdown < 0) [[unlikely]]
    watch_atomic_on(p, what, where);
}

/// The emulated GPU (KI_GPU_EMULATION, ki/detail/gpu/emulated.hpp): 1 (CUDA) or 2 (HIP) while
/// the reference backend runs a work-group of a launch whose profile emulates a GPU's execution
/// of the GPU pass (profile::gpu_dialect), else 0. Device functions compiled with both passes
/// take their GPU branch where it is set.
inline constinit thread_local int gpu_dialect = 0;
/// The emulated GPU: the user's call of the ki function whose GPU pass the running work-item
/// executes (ki/detail/gpu/emulated.hpp, user_call), or null; the runner clears it at each
/// work-group's start and end (a failed group's fibers are dropped, not unwound).
inline constinit thread_local const source_location* gpu_user_site = nullptr;

/// Set while a CPU backend runs a KA kernel's work-group (ki/ka/group.hpp): KernelInterface
/// device functions are then a mix of the two layers, which the spec rules out.
inline constinit thread_local bool ka_running = false;

/// A device function called where no KI work-item runs: outside any kernel, or inside a KA kernel
/// (`where`: the call's location, where known).
[[noreturn]] inline void outside_kernel(const char* what, const source_location* where = nullptr) {
  std::string at;
  if (where != nullptr && where->line != 0)
    at = std::string(" at ") + base_name(where->file) + ":" + std::to_string(where->line);
  if (ka_running)
    throw std::logic_error(std::string("ki: ") + what + at +
                           " is a KernelInterface device function; a KA kernel (ki::ka) cannot call it (a kernel is "
                           "written against one layer or the other, never a mix)");
  throw std::logic_error(std::string("ki: ") + what + at + " called outside a kernel");
}

/// A host function (ki::launch, ki::synchronize, an allocation, a copy, an event) called from
/// inside a kernel running on this thread: a std::logic_error naming it, which the kernel's
/// report then carries with the work-item (on a GPU such a call does not compile; here it would
/// wait for the kernel that makes it, or run a launch inside a launch).
inline void host_only(const char* what) {
  if (current != nullptr || ka_running) [[unlikely]]
    throw std::logic_error(std::string("ki: ") + what +
                           " called inside a kernel: it is a host function (launches, synchronize, allocations, "
                           "copies and events are made by the host, between kernels)");
}

inline const item_state& here(const char* what) {
  item_state* it = current;
  if (it == nullptr) [[unlikely]]
    outside_kernel(what);
  return *it;
}
/// The same for a call at `where` (the error names it).
inline const item_state& here(const char* what, const source_location& where) {
  item_state* it = current;
  if (it == nullptr) [[unlikely]]
    outside_kernel(what, &where);
  return *it;
}

/// The executor of the running work-item's group (`what` names the caller outside kernels).
inline executor& exec(const char* what) {
  if (current == nullptr) [[unlikely]]
    outside_kernel(what);
  return *current_exec;
}
/// The same for a sync point at `where`.
inline executor& exec(const char* what, const source_location& where) {
  if (current == nullptr) [[unlikely]]
    outside_kernel(what, &where);
  return *current_exec;
}

/// The call `what` at `where`, on a value of type `type` (sizeof `size`, double or not): throws
/// unsupported_operation when the running device lacks 64-bit atomics or float64 for it.
[[gnu::cold, gnu::noinline]] inline void unsupported_atomic(const char* what, const char* type, bool atomics64,
                                                            const source_location& where) {
  const std::string at = std::string(base_name(where.file)) + ":" + std::to_string(where.line);
  const std::string head = std::string("called ki::") + what + " on " + type + " at " + at + ", which profile '" +
                           current_features.profile + "' does not support: ";
  throw unsupported_operation(
      head +
          (atomics64 ? "it has no float64 (supports_float64 is false): check ki::supports_float64(backend)"
                     : "it has no 64-bit atomics (supports_atomics64 is false): check "
                       "ki::supports_atomics64(backend)") +
          " and use a fallback (or if constexpr (ki::target.atomics64 / float64))",
      where);
}
/// An atomic called on the host outside any kernel. The location as scalars: the caller's
/// path then keeps nothing in memory for it (constants, rematerialised here).
[[noreturn, gnu::cold, gnu::noinline]] inline void atomic_outside_kernel(const char* what, const char* file,
                                                                         unsigned line) {
  const source_location where{file, line, 0};
  outside_kernel(what, &where);
}
/// An atomic operation on an address that is not a multiple of its type's size: on a GPU a
/// misaligned address faults (or is not atomic), on the CPU it breaks std::atomic_ref's
/// precondition. A std::invalid_argument naming the call, its line and the address (the
/// kernel's report adds the work-item).
[[noreturn, gnu::cold, gnu::noinline]] inline void misaligned_atomic(const char* what, const char* type,
                                                                     std::size_t size, const void* p, const char* file,
                                                                     unsigned line) {
  char address[32];
  std::snprintf(address, sizeof address, "%p", p);
  throw std::invalid_argument(std::string("ki::") + what + " at " + base_name(file) + ":" + std::to_string(line) +
                              " on " + type + " at address " + address + ", which is not aligned to " +
                              std::to_string(size) + " bytes (an atomic needs its type's alignment: a GPU faults)");
}
/// What every atomic operation checks on a CPU backend before it runs: that it runs in a
/// kernel, the address's alignment, the device's features for its type, and the spin watch.
template <class T>
inline void check_atomic(const char* what, const char* type, const source_location& where, T* p) {
  // An atomic is a device function: on the host, outside any kernel, it is refused before it
  // touches memory (a KA kernel's work-items run with ka_running set and no KI work-item).
  const bool ki_item = current != nullptr;
  if (!ki_item && !ka_running) [[unlikely]]
    atomic_outside_kernel(what, where.file, where.line);
  if ((reinterpret_cast<std::uintptr_t>(p) & (sizeof(T) - 1)) != 0) [[unlikely]]
    misaligned_atomic(what, type, sizeof(T), p, where.file, where.line);
  if constexpr (sizeof(T) == 8) {
    if (!current_features.atomics64) [[unlikely]]
      unsupported_atomic(what, type, false, where);
    if (std::is_same_v<T, double> && !current_features.float64) [[unlikely]]
      unsupported_atomic(what, type, true, where);
  }
  watch_atomic(p, what, where);
}

}  // namespace ki::detail::cpu
