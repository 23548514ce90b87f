// ki::intended_race: a data race the kernel means, declared so that checked-access mode counts it
// as intended (a warning naming the declaration and how often it happened) instead of reporting
// it as the launch's error, and goes on to find the races that are not meant.
//
//   flags[ki::intended_race(0)] = 1;            // this access: its subscript (its line)
//   auto log = ki::intended_race(debug_log);    // every access of an array (a ki::span, or
//   log[i] = x;                                 //   localmemory's / g.localmem's array)
//
// A race counts as intended when it touches a declared array, or when either of its two accesses
// is a declared one (its subscript's line: the declaration is the subscript). The declaration
// holds for the rest of the launch, for every work-item, from when a work-item runs it; declare
// arrays before the accesses. What a race is does not change: on a GPU an intended race is
// still a race, with whatever result the hardware gives (a same-value debug store, a flag any
// work-item may set, a benign "last writer wins"). GPUs and the CPU backends' default mode pass
// the value through unchanged; the reference backend's checked-access mode (ki::reference_checked)
// takes the declaration. In a KA kernel: `p[ki::intended_race(i.local_linear())]` in a phase,
// `ki::intended_race(g.localmem<T, N>(key))` in group-level code. docs/debugging.md, "Races the
// kernel means".
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstddef>
#include <type_traits>

#include <ki/local_memory.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#if !KI_GPU_PASS
#include <ki/detail/cpu/checked.hpp>
#endif

namespace ki {

/// One access: the index, for a subscript (`a[ki::intended_race(i)]`), whose races are the
/// kernel's intent.
template <class I>
requires std::is_integral_v<I> KI_DEVICE inline auto intended_race(I i,
                                                                   source_location where = source_location::current()) {
#if KI_GPU_PASS
  (void)where;
  return i;
#else
  detail::checked::intend(nullptr, 0, where);
  return detail::checked::located_index(i, where);
#endif
}

/// An array: every race on its elements is the kernel's intent. Returns it.
template <class T>
KI_DEVICE inline span<T> intended_race(span<T> s, source_location where = source_location::current()) {
#if KI_GPU_PASS
  (void)where;
#else
  detail::checked::intend(s.data(), static_cast<std::size_t>(s.size()) * sizeof(T), where);
#endif
  return s;
}
template <class T, std::size_t... Dims>
KI_DEVICE inline local_array<T, Dims...> intended_race(local_array<T, Dims...> a,
                                                       source_location where = source_location::current()) {
#if KI_GPU_PASS
  (void)where;
#else
  detail::checked::intend(a.data(), static_cast<std::size_t>(a.size()) * sizeof(T), where);
#endif
  return a;
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
