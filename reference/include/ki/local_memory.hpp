// localmemory<T, dims...>(key): an array in memory local to the work-group.
//
// Spec: every call site has its own memory, shared by the work-items of a work-group; it is
// uninitialised and lives until the group finishes; executing the same call site again returns
// the same memory. C++ has no call-site identity that works on every compiler pass, so the call
// site is named by a type: pass a fresh lambda, `ki::localmemory<float, 256>([] {})`. Its
// closure type is unique to that spot in the source (and to each instantiation of an enclosing
// template). Under nvcc/hipcc each key becomes its own static __shared__ array.
//
// The reference backend fills new local memory with a poison pattern (see docs/) so that
// reading it before writing shows up.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ki/errors.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#if !KI_GPU_PASS
#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/type_name.hpp>
#endif
#if KI_GPU_CODE
#include <ki/detail/gpu/intrinsics.hpp>
#endif
#if !KI_GPU_PASS
#include <ki/detail/cpu/executor.hpp>
#endif

namespace ki {

#if !KI_GPU_PASS
namespace detail {
/// What an out-of-bounds error says of a local_array<T, Dims...>: one constant per type.
struct local_array_info {
  const std::size_t* extents;
  std::size_t rank;
  const char* type;
};
/// An access of local memory `data` (described by `a`) at file:line:column is out of bounds:
/// index i (in dimension `dim`; -1: the linear index). The executor that runs the work-item
/// names the localmemory call that allocated it, where it knows it.
[[noreturn, gnu::noinline, gnu::cold]] inline void local_out_of_bounds(std::int64_t i, int dim, const void* data,
                                                                       const local_array_info* a, const char* file,
                                                                       unsigned line, unsigned column) {
  std::string shape;
  for (std::size_t d = 0; d < a->rank; ++d) shape += (d == 0 ? "" : " x ") + std::to_string(a->extents[d]);
  std::string array = "local memory";
  const source_location* site =
      cpu::current != nullptr && cpu::current_exec != nullptr ? cpu::current_exec->local_memory_site(data) : nullptr;
  if (site != nullptr && site->line != 0) array += " allocated at " + location_string(*site);
  array += " (" + shape + " elements of " + a->type + ")";
  throw_out_of_bounds(std::to_string(i) + (dim >= 0 ? " in dimension " + std::to_string(dim) : ""),
                      {file, line, column}, array);
}
}  // namespace detail
#endif

/// The view returned by localmemory: fixed extents Dims..., x (the first) fastest.
template <class T, std::size_t... Dims>
class local_array {
  static_assert(sizeof...(Dims) >= 1 && sizeof...(Dims) <= 3, "localmemory takes 1 to 3 extents");
  static_assert(((Dims > 0) && ...), "localmemory extents must be positive");

 public:
  static constexpr std::size_t extents[sizeof...(Dims)] = {Dims...};
  static constexpr std::int64_t count = static_cast<std::int64_t>((Dims * ...));

  KI_DEVICE explicit local_array(T* p) : p_(p) {}
  KI_DEVICE static constexpr std::int64_t size() { return count; }
  /// Extent of dimension d (1 beyond the given ones).
  KI_DEVICE static constexpr std::int64_t extent(std::size_t d) {
    // A local copy: the static member `extents` is host data that nvcc's device code can't read.
    constexpr std::int64_t e[] = {static_cast<std::int64_t>(Dims)...};
    return d < sizeof...(Dims) ? e[d] : 1;
  }
  KI_DEVICE T* data() const { return p_; }

#if !KI_GPU_PASS
  // CPU backends: bounds-checked, the index carrying the access's line (see span.hpp); in
  // checked-access mode each access is also recorded.
  static constexpr detail::local_array_info info{extents, sizeof...(Dims), detail::type_name<T>()};
  KI_DEVICE KI_ALWAYS_INLINE T& operator[](detail::checked::located_index i) const {
    const std::int64_t k = i.value;
    if (!detail::in_bounds(k, count) && !detail::span_checks_off) [[unlikely]]
      detail::local_out_of_bounds(k, -1, p_, &info, i.file, i.line, i.column);
#if KI_CHECKED_ACCESS
    detail::checked::note(p_, count, sizeof(T), k, i.where());
#endif
    return p_[k];
  }
  template <class... I>
  requires(sizeof...(I) + 1 == sizeof...(Dims) && sizeof...(I) >= 1) KI_DEVICE KI_ALWAYS_INLINE T& operator()(
      detail::checked::located_index i0, I... idx) const {
    const std::int64_t c[] = {i0.value, detail::to_index(idx)...};
    constexpr std::int64_t e[] = {static_cast<std::int64_t>(Dims)...};
    std::int64_t lin = 0, stride = 1;
    for (std::size_t d = 0; d < sizeof...(Dims); ++d) {
      if (!detail::in_bounds(c[d], e[d]) && !detail::span_checks_off) [[unlikely]]
        detail::local_out_of_bounds(c[d], static_cast<int>(d), p_, &info, i0.file, i0.line, i0.column);
      lin += c[d] * stride;
      stride *= e[d];
    }
#if KI_CHECKED_ACCESS
    detail::checked::note(p_, count, sizeof(T), lin, i0.where());
#endif
    return p_[lin];
  }
#else
  // GPU passes: no check.
  template <class I>
  KI_DEVICE KI_ALWAYS_INLINE T& operator[](I i) const {
    return p_[detail::to_index(i)];
  }

  template <class... I>
  requires(sizeof...(I) == sizeof...(Dims) && sizeof...(I) >= 2) KI_DEVICE KI_ALWAYS_INLINE T& operator()(
      I... idx) const {
    const std::int64_t c[] = {detail::to_index(idx)...};
    constexpr std::int64_t e[] = {static_cast<std::int64_t>(Dims)...};  // see extent()
    std::int64_t lin = 0, stride = 1;
    for (std::size_t d = 0; d < sizeof...(Dims); ++d) {
      lin += c[d] * stride;
      stride *= e[d];
    }
    return p_[lin];
  }
#endif

  /// A ki::span over the same memory, with the same extents.
  KI_DEVICE span<T> as_span() const { return span<T>(p_, xyz<std::int64_t>{extent(0), extent(1), extent(2)}); }

 private:
  T* p_;
};

namespace detail {
template <class Key>
inline constexpr char call_site_tag = 0;  // its address identifies the call site Key
}

template <class T, std::size_t... Dims, class Key>
KI_DEVICE inline local_array<T, Dims...> localmemory(Key, source_location where = source_location::current()) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "localmemory<T>: T must be trivially constructible and destructible (it is uninitialised memory)");
  static_assert(std::is_class_v<Key>,
                "localmemory: pass a fresh lambda as the call-site key, e.g. localmemory<T, N>([] {})");
  constexpr std::size_t count = (Dims * ...);
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    (void)where;
    KI_GPU_SHARED_BYTES(T, storage, sizeof(T) * count);
    return local_array<T, Dims...>(reinterpret_cast<T*>(storage));
  }
#endif
#if !KI_GPU_PASS
  void* p = detail::cpu::exec("localmemory", where)
                .local_memory(&detail::call_site_tag<Key>, sizeof(T) * count, alignof(T), where);
  return local_array<T, Dims...>(static_cast<T*>(p));
#endif
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
