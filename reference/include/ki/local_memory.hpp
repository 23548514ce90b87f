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
                      {file, line, column}, array, __builtin_return_address(0));
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

// --- Local memory sized at launch ---
//
// launch_options::dynamic_local_memory gives a launch `bytes` of local memory per work-group
// (CUDA's dynamic shared memory, OpenCL's __local kernel arguments); the kernel reaches it with
// dynamic_localmemory<T>(). Every call, in every function, returns the same memory (as CUDA's
// extern __shared__ arrays all start at one address): a kernel that needs several arrays cuts
// them from it with the second form, at byte offsets it chooses. It is uninitialised (the
// reference backend poisons it), lives until the group finishes, and counts with the kernel's
// localmemory against the device's local memory per work-group (on the CPU backends a group that
// goes beyond is a kernel_error, kind resource; more than the device has at all is refused at
// launch). Aligned to 16 bytes.

namespace detail {
inline constexpr std::int64_t dynamic_local_align = 16;
#if KI_GPU_CODE
/// What the dynamic shared memory is declared as (its alignment).
struct alignas(dynamic_local_align) dynamic_local_unit {
  unsigned char b[dynamic_local_align];
};
#if !KI_GPU_EMULATION
/// The launch's dynamic_local_memory in bytes, which every kernel entry writes in every thread
/// before the kernel runs (ki/offload/launch.hpp): 4 bytes of shared memory per block.
__device__ inline std::uint32_t& dynamic_local_bytes() {
  KI_GPU_SHARED(std::uint32_t, bytes);
  return bytes;
}
#endif
/// The block's dynamic shared memory and (bytes not null) its size.
__device__ inline unsigned char* dynamic_local_base(std::int64_t* bytes, const source_location& where) {
#if KI_GPU_EMULATION
  std::size_t n = 0;
  void* p = gpu::emu::dynamic_shared_memory(&n, where);
  if (bytes != nullptr) *bytes = static_cast<std::int64_t>(n);
  return static_cast<unsigned char*>(p);
#else
  (void)where;
  extern __shared__ dynamic_local_unit
      ki_dynamic_local[];  // (every extern __shared__ array starts at the same address)
  if (bytes != nullptr) *bytes = dynamic_local_bytes();
  return reinterpret_cast<unsigned char*>(ki_dynamic_local);
#endif
}
#endif
#if !KI_GPU_PASS
/// dynamic_localmemory's part (byte offset, extents) that does not fit the launch's `bytes`, or
/// is misaligned for T: ki::out_of_bounds at `where` naming the numbers.
[[noreturn, gnu::noinline, gnu::cold]] inline void bad_dynamic_part(const char* type, std::size_t size,
                                                                    std::size_t align, std::int64_t offset,
                                                                    xyz<std::int64_t> e, std::int64_t bytes,
                                                                    const source_location& where) {
  std::string call = std::string("dynamic_localmemory<") + type + ">(" + std::to_string(offset) + ", {" +
                     std::to_string(e.x) + ", " + std::to_string(e.y) + ", " + std::to_string(e.z) + "})";
  std::string why;
  if (offset < 0 || e.x < 0 || e.y < 0 || e.z < 0) why = "the offset and the extents must be at least 0";
  else if (offset % static_cast<std::int64_t>(align) != 0)
    why = "the offset is not a multiple of the element's alignment, " + std::to_string(align);
  else {
    std::int64_t n = 0;
    const bool huge = __builtin_mul_overflow(e.x, e.y, &n) || __builtin_mul_overflow(n, e.z, &n);
    why = "its " + (huge ? std::string("more than INT64_MAX") : std::to_string(n)) + " elements of " +
          std::to_string(size) + " bytes from byte " + std::to_string(offset) + " do not fit";
  }
  throw out_of_bounds(call + (where.line != 0 ? " at " + location_string(where) : "") + ": " + why +
                          "; the launch's dynamic_local_memory is " + std::to_string(bytes) + " bytes",
                      where);
}
#endif
}  // namespace detail

namespace detail {
/// The group's dynamic local memory and its size in bytes, for dynamic_localmemory<T>.
template <class T>
KI_DEVICE inline unsigned char* dynamic_local_here(std::int64_t* bytes, const source_location& where) {
  static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                "dynamic_localmemory<T>: T must be trivially constructible and destructible (it is uninitialised "
                "memory)");
  static_assert(alignof(T) <= dynamic_local_align, "dynamic_localmemory<T>: T is aligned to more than 16");
#if KI_GPU_CODE
  KI_GPU_BRANCH { return dynamic_local_base(bytes, where); }
#endif
#if !KI_GPU_PASS
  std::size_t have = 0;
  void* p = cpu::exec("dynamic_localmemory", where).dynamic_local_memory(&have, where);
  *bytes = static_cast<std::int64_t>(have);
  return static_cast<unsigned char*>(p);
#endif
}
}  // namespace detail

/// The launch's local memory sized at launch, as bytes / sizeof(T) elements of T (0 where the
/// launch gave none).
template <class T>
KI_DEVICE inline span<T> dynamic_localmemory(source_location where = source_location::current()) {
  std::int64_t bytes = 0;
  unsigned char* p = detail::dynamic_local_here<T>(&bytes, where);
  return span<T>(reinterpret_cast<T*>(p), bytes / static_cast<std::int64_t>(sizeof(T)));
}

/// A part of it: extents (x fastest) elements of T from byte `offset` (a multiple of
/// alignof(T)). The CPU backends check that the part lies inside the launch's bytes
/// (ki::out_of_bounds naming the numbers); GPUs do not.
template <class T>
KI_DEVICE inline span<T> dynamic_localmemory(std::int64_t offset, xyz<std::int64_t> extents,
                                             source_location where = source_location::current()) {
  std::int64_t bytes = 0;
  unsigned char* p = detail::dynamic_local_here<T>(&bytes, where);
#if !KI_GPU_PASS  // (the CPU backends and the emulated GPU check; a GPU does not)
  // The part fits when each extent is at least 0 and offset + count * size <= bytes, computed
  // without overflow (bytes is at most the device's local memory).
  const auto size = static_cast<std::int64_t>(sizeof(T));
  bool fits = offset >= 0 && offset <= bytes && offset % static_cast<std::int64_t>(alignof(T)) == 0 && extents.x >= 0 &&
              extents.y >= 0 && extents.z >= 0;
  if (fits) {
    std::int64_t n = 0;
    fits = !__builtin_mul_overflow(extents.x, extents.y, &n) && !__builtin_mul_overflow(n, extents.z, &n) &&
           n <= (bytes - offset) / size;
  }
  if (!fits) detail::bad_dynamic_part(detail::type_name<T>(), sizeof(T), alignof(T), offset, extents, bytes, where);
#endif
  return span<T>(reinterpret_cast<T*>(p + offset), extents);
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
