// Private: checked-access mode (compile a kernel's translation unit with KI_CHECKED_ACCESS=1,
// e.g. by linking ki::reference_checked instead of ki::reference).
//
// In that mode every element access through ki::span or localmemory tells the CPU executor
// which element, of which array, from which source line, before it happens; the oracle works
// out afterwards whether it was a read or a write and reports races (how: the comment of
// reference/cpu/include/ki/cpu/race_detector.hpp). The accessors still return T&, so kernel source compiles
// unchanged and means the same thing;
// the one surprise is that an element bound to a reference (`auto& r = a[i]`) is recorded once,
// where it was bound, not at each later use. Default mode: none of this exists (no cost), but
// for located_index, which names the line of an out-of-bounds access.
#pragma once
#include <ki/detail/private.hpp>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ki/source_location.hpp>

#ifndef KI_CHECKED_ACCESS
#define KI_CHECKED_ACCESS 0
#endif
#ifndef KI_CHECKED_HOOKS
#define KI_CHECKED_HOOKS 0
#endif

namespace ki::detail::checked {

/// What an array access tells the executor.
struct array_info {
  const void* data;          ///< element 0
  std::int64_t count;        ///< elements
  std::size_t element_size;  ///< bytes per element
};

/// Implemented by the reference executor while it runs a work-group on this thread.
class recorder {
 public:
  /// Element `index` of `a` is about to be read or written by the running work-item (a
  /// subscript in a translation unit without the hooks: read or write is not known).
  virtual void access(const array_info& a, std::int64_t index, const source_location& where) = 0;
  /// Element `index` of `a` is subscripted at `where` (a translation unit with the hooks): names
  /// the array, and the line of the running work-item's next plain access of that element.
  virtual void name(const array_info& a, std::int64_t index, const source_location& where) = 0;
  /// A plain load (`write` false) or store of `size` bytes at `addr` by code at `pc` (the
  /// hooks, in whatever code of the kernels' translation unit runs on this thread: the
  /// recorder ignores what is not a work-item's access of memory it checks).
  virtual void plain(const void* addr, std::size_t size, bool write, const void* pc) = 0;
  /// The running work-item accesses p atomically (atomics never race).
  virtual void atomic(const void* p) = 0;
  /// An atomic operation on p, or a fence (p null), by code of the kernels' translation unit
  /// (the hooks), before it happens: `order` is its memory order as an __ATOMIC_* value (a
  /// compare-exchange: its success order), `writes` whether it may store (a load: false; a
  /// fence: true). Weak memory publishes at a release (store_buffer.hpp).
  virtual void ordering(const void* p, int order, bool writes) {
    (void)p;
    (void)order;
    (void)writes;
  }
  /// The running work-item is about to wait at a barrier that orders only the memory in
  /// `orders` (bit 0: local, bit 1: global; ki::barrier_flags).
  virtual void barrier_flags(unsigned orders) = 0;
  /// ki::intended_race (<ki/intended_race.hpp>) at `where`: races on the `bytes` at p (p null:
  /// of the accesses whose subscript is at `where`) are the kernel's intent.
  virtual void intended(const void* p, std::size_t bytes, const source_location& where) {
    (void)p;
    (void)bytes;
    (void)where;
  }

 protected:
  ~recorder() = default;
};

/// The recorder of the work-group running on this thread (null outside kernels).
inline constinit thread_local recorder* active = nullptr;

/// The shadow call stack of instrumented code (KI_CHECKED_HOOKS: the instrumentation's function
/// entry and exit hooks keep one per work-item, reference/src/checked_hooks.cpp), so that a report
/// can name the line that called a helper the compiler did not inline. Set by the hooks on their
/// first call (null: no instrumented code has run, or no hooks).
struct shadow_calls {
  /// The return address of the function containing the code at pc, as the running work-item's
  /// stack has it: below the frame entered from pc (pc a call's return address) where there is
  /// one, else the innermost frame (pc an access in the innermost instrumented function).
  const void* (*caller_of)(const void* pc) = nullptr;
  /// Forgets every stack of this thread (a group starts: what a fault or an exception left).
  void (*forget)() = nullptr;
};
inline constinit thread_local shadow_calls calls{};
/// calls.caller_of(pc), or null.
inline const void* caller_of(const void* pc) { return calls.caller_of != nullptr ? calls.caller_of(pc) : nullptr; }
inline void forget_calls() {
  if (calls.forget != nullptr) calls.forget();
}

// (Two spellings of note(), one per way of recording, in inline namespaces of their own: a
// program may link translation units of both kinds without two different bodies of one inline
// function.)
#if KI_CHECKED_HOOKS
inline namespace hooked {
#else
inline namespace subscripts {
#endif
/// A subscript of a checked array (ki::span, localmemory, KA private memory).
inline void note(const void* data, std::int64_t count, std::size_t size, std::int64_t index,
                 const source_location& where) {
#if KI_CHECKED_HOOKS
  if (recorder* r = active) r->name(array_info{data, count, size}, index, where);
#else
  if (recorder* r = active) r->access(array_info{data, count, size}, index, where);
#endif
}
}  // namespace hooked / subscripts

/// ki::intended_race: declares the race (any mode: outside checked-access mode nothing records
/// accesses, and the declaration costs a thread-local load).
inline void intend(const void* p, std::size_t bytes, const source_location& where) {
  if (recorder* r = active) r->intended(p, bytes, where);
}

/// A barrier with memory flags (ki::barrier(flags)) is about to be waited at.
inline void barrier_flags(unsigned orders) {
  if (recorder* r = active) r->barrier_flags(orders);
}

/// An index that remembers where it was written: the parameter type of the CPU accessors of
/// ki::span and localmemory, in both modes (operator[] cannot take a defaulted source_location
/// of its own in C++20, but a converting constructor's default argument is evaluated at the
/// subscript). Checked mode records it with each access; both modes name it in an
/// out-of-bounds error. It costs a correct access nothing: the accessors are inlined and the
/// location is constants that only the (cold) error path reads. The location is kept as
/// scalars, not a source_location member: with a struct member, GCC 12 stores it to the stack
/// on every iteration of a loop of accesses (for the cold path to read); scalars it
/// rematerialises on that path.
struct located_index {
  std::int64_t value;
  const char* file;
  unsigned line, column;
  template <class I>
  requires std::is_integral_v<I> located_index(I i, const char* f = __builtin_FILE(), unsigned l = __builtin_LINE(),
                                               unsigned c = KI_DETAIL_COLUMN())
      : value(static_cast<std::int64_t>(i)), file(f), line(l), column(c) {}
  /// An index at a location the caller names (ki::sub_group_load / store: the call's line).
  template <class I>
  requires std::is_integral_v<I> located_index(I i, const source_location& w)
      : value(static_cast<std::int64_t>(i)), file(w.file), line(w.line), column(w.column) {}
  source_location where() const { return {file, line, column}; }
};

}  // namespace ki::detail::checked
