// Atomics on global memory (elements of a ki::span) and local memory (elements of localmemory),
// the spec's Atomix-style operations (metal-advanced-kernel-programming.txt, "Atomics").
//
//   ki::atomic_fetch_add(&counts[bin], 1);                    // relaxed by default
//   ki::atomic_store(&flag[0], 1, ki::memory_order::release);
//   ki::atomic_update(&x[0], [](float v) { return v * 2; });  // any update: a CAS loop
//
// Each function takes a pointer to the element (`&span[i]`, `&local[i]`) and an optional
// ki::memory_order with the C++ meaning; it returns the previous value (fetch_*, exchange,
// atomic_update) or whether it succeeded (compare_exchange). What an atomic orders, and how it
// relates to barrier(), is in docs/atomics.md.
//
// Types: 32- and 64-bit integers support every operation; float and double support load,
// store, exchange, compare_exchange, fetch_add and fetch_sub (fetch_min/max/and/or/xor on a
// floating-point type is a compile-time error: write it with atomic_update). Whether 64-bit
// types work on a device is ki::supports_atomics64(backend); 32-bit integers and float are
// always supported where ki::supports_atomics(backend) is true; double also needs
// ki::supports_float64(backend). On the reference backend a call the profile does not support
// is a ki::kernel_error (kind unsupported) naming the work-item and the call's line (each
// operation takes a defaulted ki::source_location last).
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstdint>
#include <cstring>
#include <type_traits>

#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/target.hpp>
#if KI_GPU_PASS && defined(__HIPCC__)
#include <hip/hip_runtime.h>
#elif KI_GPU_PASS
#include <cuda/atomic>
#else
#include <atomic>

#include <ki/detail/cpu/checked.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/detail/type_name.hpp>
#endif
#if KI_GPU_EMULATION
#include <ki/detail/gpu/emulated_atomic.hpp>  // cuda::atomic_ref, __hip_atomic_*: the host's atomics
#endif

namespace ki {

enum class memory_order { relaxed, acquire, release, acq_rel, seq_cst };

namespace detail {
template <class T>
concept atomic_integer = std::is_integral_v<T> && !std::is_same_v<T, bool> && (sizeof(T) == 4 || sizeof(T) == 8);
template <class T>
concept atomic_float = std::is_same_v<T, float> || std::is_same_v<T, double>;
template <class T>
concept atomic_value = atomic_integer<T> || atomic_float<T>;

template <class T>
inline constexpr bool always_false_atomic = false;

#if KI_GPU_EMULATION
// The emulated GPU: the GPU pass's atomic_ref_t and native live in detail::gpu, the CPU pass's in
// detail::host; detail::atomic_ref_t (below them) takes one or the other per call.
namespace gpu {
#endif
#if KI_GPU_HIP && KI_GPU_CODE
// HIP has no cuda::atomic_ref: the same interface over clang's __hip_atomic builtins, at agent
// (device) scope like cuda::thread_scope_device. Orders are the __ATOMIC_* constants.
template <class T>
class hip_atomic_ref {
 public:
  __device__ explicit hip_atomic_ref(T& r) : p_(&r) {}
  __device__ T load(int o) const { return __hip_atomic_load(p_, o, scope); }
  __device__ void store(T v, int o) const { __hip_atomic_store(p_, v, o, scope); }
  __device__ T exchange(T v, int o) const { return __hip_atomic_exchange(p_, v, o, scope); }
  __device__ bool compare_exchange_strong(T& e, T d, int o, int f) const {
    return __hip_atomic_compare_exchange_strong(p_, &e, d, o, f, scope);
  }
  __device__ bool compare_exchange_weak(T& e, T d, int o, int f) const {
    return __hip_atomic_compare_exchange_weak(p_, &e, d, o, f, scope);
  }
  __device__ T fetch_add(T v, int o) const { return __hip_atomic_fetch_add(p_, v, o, scope); }
  /// Two's complement (integers) and IEEE negation (floats) make this exact.
  __device__ T fetch_sub(T v, int o) const { return __hip_atomic_fetch_add(p_, static_cast<T>(T(0) - v), o, scope); }
  __device__ T fetch_and(T v, int o) const { return __hip_atomic_fetch_and(p_, v, o, scope); }
  __device__ T fetch_or(T v, int o) const { return __hip_atomic_fetch_or(p_, v, o, scope); }
  __device__ T fetch_xor(T v, int o) const { return __hip_atomic_fetch_xor(p_, v, o, scope); }
  __device__ T fetch_min(T v, int o) const { return __hip_atomic_fetch_min(p_, v, o, scope); }
  __device__ T fetch_max(T v, int o) const { return __hip_atomic_fetch_max(p_, v, o, scope); }

 private:
  static constexpr int scope = __HIP_MEMORY_SCOPE_AGENT;
  T* p_;
};
template <class T>
using atomic_ref_t = hip_atomic_ref<T>;
__device__ inline int native(memory_order o) {
  switch (o) {
    case memory_order::relaxed: return __ATOMIC_RELAXED;
    case memory_order::acquire: return __ATOMIC_ACQUIRE;
    case memory_order::release: return __ATOMIC_RELEASE;
    case memory_order::acq_rel: return __ATOMIC_ACQ_REL;
    default: return __ATOMIC_SEQ_CST;
  }
}
#elif KI_GPU_CODE
template <class T>
using atomic_ref_t = ::cuda::atomic_ref<T, ::cuda::thread_scope_device>;
__device__ inline ::cuda::memory_order native(memory_order o) {
  switch (o) {
    case memory_order::relaxed: return ::cuda::memory_order_relaxed;
    case memory_order::acquire: return ::cuda::memory_order_acquire;
    case memory_order::release: return ::cuda::memory_order_release;
    case memory_order::acq_rel: return ::cuda::memory_order_acq_rel;
    default: return ::cuda::memory_order_seq_cst;
  }
}
#endif
#if KI_GPU_EMULATION
}  // namespace gpu
namespace host {
#endif
#if !KI_GPU_PASS
// CPU backends run work-groups on several threads at once, so these are real atomics
// (std::atomic_ref), tested for real, except on memory that only the running thread can touch:
// the local memory of a work-group whose work-items all run on this thread and switch only at
// synchronisation points (simd_cpu publishes its range, cpu::group_private). There an atomic
// operation is performed as a plain one. Why that is exact: no other thread accesses that
// memory (a work-group's local memory is reachable only from its own work-items, which all run
// here), and no other work-item of the group runs during the operation (work-items switch only
// inside barrier() and sub-group functions, which are calls into the executor, so neither the
// CPU nor the compiler can interleave another item's accesses with it). What memory orders
// promise among accesses of one thread, program order already gives. The value computed is the
// atomic one: integer arithmetic wraps (it is done unsigned), compare-exchange compares object
// representations, as std::atomic does.
//
// Such a plain read-modify-write is kept out of SIMD lanes (not_lanes): an unchecked KA phase
// declares its work-items independent so that the compiler runs them as lanes of a vector
// (ki/ka/group.hpp), which is exact for their plain accesses (the model lets no two work-items of
// a phase touch one element where one writes) but not for these, where two lanes updating one
// element would both read its old value and one update be lost.
/// An empty asm that reads and writes v: the compiler cannot vectorise a loop with it (nor
/// if-convert it), and since it names v alone every other access stays free to move. No
/// instruction.
template <class T>
KI_ALWAYS_INLINE void not_lanes(T& v) {
  asm volatile("" : "+m"(v));
}
template <class T>
class atomic_ref_t {
 public:
  // (Instrumented checked-access mode, KI_CHECKED_HOOKS: always the real atomic, which the
  // oracle's hooks perform as one atomic operation; a plain read-modify-write would reach them as
  // a plain load and store, a race with the other work-items' atomics.)
  explicit atomic_ref_t(T& r) : p_(&r), plain_(!KI_CHECKED_HOOKS && cpu::group_private(&r)) {
#if KI_CHECKED_ACCESS
    if (checked::recorder* c = checked::active) c->atomic(&r);  // atomics never race
#endif
  }
  T load(std::memory_order o) const { return plain_ ? *p_ : real().load(o); }
  void store(T v, std::memory_order o) const { plain_ ? void(*p_ = v) : real().store(v, o); }
  T exchange(T v, std::memory_order o) const {
    if (!plain_) return real().exchange(v, o);
    const T old = *p_;
    *p_ = v;
    not_lanes(*p_);
    return old;
  }
  bool compare_exchange_strong(T& e, T d, std::memory_order o, std::memory_order f) const {
    if (!plain_) return real().compare_exchange_strong(e, d, o, f);
    not_lanes(*p_);
    if (std::memcmp(p_, &e, sizeof(T)) == 0) {
      *p_ = d;
      return true;
    }
    e = *p_;
    return false;
  }
  bool compare_exchange_weak(T& e, T d, std::memory_order o, std::memory_order f) const {
    return plain_ ? compare_exchange_strong(e, d, o, f) : real().compare_exchange_weak(e, d, o, f);
  }
  T fetch_add(T v, std::memory_order o) const { return plain_ ? update(v, add) : real().fetch_add(v, o); }
  T fetch_sub(T v, std::memory_order o) const { return plain_ ? update(v, sub) : real().fetch_sub(v, o); }
  T fetch_and(T v, std::memory_order o) const { return plain_ ? update(v, bit_and) : real().fetch_and(v, o); }
  T fetch_or(T v, std::memory_order o) const { return plain_ ? update(v, bit_or) : real().fetch_or(v, o); }
  T fetch_xor(T v, std::memory_order o) const { return plain_ ? update(v, bit_xor) : real().fetch_xor(v, o); }

 private:
  // Integers in their unsigned type: wrapping, as atomic arithmetic is defined to.
  using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T> >::type;
  static U add(U a, U b) { return a + b; }
  static U sub(U a, U b) { return a - b; }
  static U bit_and(U a, U b) { return a & b; }
  static U bit_or(U a, U b) { return a | b; }
  static U bit_xor(U a, U b) { return a ^ b; }
  T update(T v, U (*op)(U, U)) const {
    const T old = *p_;
    *p_ = static_cast<T>(op(static_cast<U>(old), static_cast<U>(v)));
    not_lanes(*p_);
    return old;
  }
  std::atomic_ref<T> real() const { return std::atomic_ref<T>(*p_); }
  T* p_;
  bool plain_;
};
inline std::memory_order native(memory_order o) {
  switch (o) {
    case memory_order::relaxed: return std::memory_order_relaxed;
    case memory_order::acquire: return std::memory_order_acquire;
    case memory_order::release: return std::memory_order_release;
    case memory_order::acq_rel: return std::memory_order_acq_rel;
    default: return std::memory_order_seq_cst;
  }
}
#endif
#if KI_GPU_EMULATION
}  // namespace host
using host::not_lanes;
/// Per call, the GPU pass's atomic (on the emulated GPU's threads) or the CPU pass's.
template <class T>
class atomic_ref_t {
 public:
  explicit atomic_ref_t(T& r) : p_(&r) {
#if KI_CHECKED_ACCESS
    if (gpu::emulated_thread())
      if (checked::recorder* c = checked::active) c->atomic(&r);  // (host::atomic_ref_t's tells it itself)
#endif
  }
#define KI_DETAIL_EMULATED_OP(ret, op, params, args)                      \
  ret op params const {                                                   \
    if (gpu::emulated_thread()) return gpu::atomic_ref_t<T>(*p_).op args; \
    return host::atomic_ref_t<T>(*p_).op args;                            \
  }
  KI_DETAIL_EMULATED_OP(T, load, (memory_order o), (native(o)))
  KI_DETAIL_EMULATED_OP(void, store, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(T, exchange, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(bool, compare_exchange_strong, (T & e, T d, memory_order o, memory_order f),
                        (e, d, native(o), native(f)))
  KI_DETAIL_EMULATED_OP(bool, compare_exchange_weak, (T & e, T d, memory_order o, memory_order f),
                        (e, d, native(o), native(f)))
  KI_DETAIL_EMULATED_OP(T, fetch_add, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(T, fetch_sub, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(T, fetch_and, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(T, fetch_or, (T v, memory_order o), (v, native(o)))
  KI_DETAIL_EMULATED_OP(T, fetch_xor, (T v, memory_order o), (v, native(o)))
#undef KI_DETAIL_EMULATED_OP
  /// GPU threads only (the CPU pass computes min and max with atomic_update).
  T fetch_min(T v, memory_order o) const { return gpu::atomic_ref_t<T>(*p_).fetch_min(v, gpu::native(o)); }
  T fetch_max(T v, memory_order o) const { return gpu::atomic_ref_t<T>(*p_).fetch_max(v, gpu::native(o)); }

 private:
  // Each pass's own order type, from ki's (the overload taking the other pass's type is not
  // viable: exactly one of these converts).
  struct native {
    memory_order o;
    explicit native(memory_order x) : o(x) {}
    operator decltype(gpu::native(memory_order{}))() const { return gpu::native(o); }
    operator std::memory_order() const { return host::native(o); }
  };
  T* p_;
};
/// The emulated build passes ki's own orders to atomic_ref_t.
inline memory_order native(memory_order o) { return o; }
#endif
/// The order a load may use (release/acq_rel make no sense for a load: the nearest valid one).
KI_DEVICE inline memory_order load_order(memory_order o) {
  return o == memory_order::release ? memory_order::relaxed : o == memory_order::acq_rel ? memory_order::acquire : o;
}
KI_DEVICE inline memory_order store_order(memory_order o) {
  return o == memory_order::acquire ? memory_order::relaxed : o == memory_order::acq_rel ? memory_order::release : o;
}
}  // namespace detail

// What the target lacks (ki/target.hpp) does not compile, naming the feature (the type
// checks below); each operation takes its call's location last, for the runtime check.
#define KI_DETAIL_TARGET_HAS(T, what)                                                              \
  static_assert(sizeof(T) < 8 || target.atomics64,                                                 \
                "ki::" what                                                                        \
                " on a 64-bit type needs 64-bit atomics: ki::target.atomics64 is false for this "  \
                "target; put the call under if constexpr (ki::target.atomics64) with a fallback"); \
  static_assert(!std::is_same_v<T, double> || target.float64,                                      \
                "ki::" what                                                                        \
                " on double needs float64: ki::target.float64 is false for this target; put the "  \
                "call under if constexpr (ki::target.float64) with a fallback");                   \
  KI_DETAIL_RUNTIME_HAS(T, what)
// What the running device lacks (the oracle's profile) is a kernel_error (kind unsupported)
// naming the work-item and `where`, the call's location; on the reference backend the operation
// is also shown to its spin watch (a work-item polling an atomic without end is a kernel_error
// of kind no_progress, docs/debugging.md). Checked on CPU backends only.
#if KI_GPU_PASS
#define KI_DETAIL_RUNTIME_HAS(T, what) (void)where
#else
#define KI_DETAIL_RUNTIME_HAS(T, what) detail::cpu::check_atomic<T>(what, detail::type_name<T>(), where, p)
#endif

template <detail::atomic_value T>
KI_DEVICE T atomic_load(T* p, memory_order o = memory_order::relaxed,
                        const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_load");
  return detail::atomic_ref_t<T>(*p).load(detail::native(detail::load_order(o)));
}

template <detail::atomic_value T>
KI_DEVICE void atomic_store(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                            const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_store");
  detail::atomic_ref_t<T>(*p).store(v, detail::native(detail::store_order(o)));
}

template <detail::atomic_value T>
KI_DEVICE T atomic_exchange(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                            const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_exchange");
  return detail::atomic_ref_t<T>(*p).exchange(v, detail::native(o));
}

/// If *p == expected, stores desired and returns true; otherwise loads *p into expected and
/// returns false. (Strong: no spurious failure.)
template <detail::atomic_value T>
KI_DEVICE bool atomic_compare_exchange(T* p, T& expected, std::type_identity_t<T> desired,
                                       memory_order o = memory_order::relaxed,
                                       const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_compare_exchange");
  return detail::atomic_ref_t<T>(*p).compare_exchange_strong(expected, desired, detail::native(o),
                                                             detail::native(detail::load_order(o)));
}

template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_add(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_add");
  return detail::atomic_ref_t<T>(*p).fetch_add(v, detail::native(o));
}

template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_sub(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_sub");
  return detail::atomic_ref_t<T>(*p).fetch_sub(v, detail::native(o));
}

#define KI_DETAIL_INTEGER_ONLY(T, what)                                                      \
  static_assert(detail::atomic_integer<T>, "ki::" what                                       \
                                           " needs a 32- or 64-bit integer type: for float " \
                                           "and double, write the update with ki::atomic_update")

template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_and(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_and");
  KI_DETAIL_INTEGER_ONLY(T, "atomic_fetch_and");
  return detail::atomic_ref_t<T>(*p).fetch_and(v, detail::native(o));
}
template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_or(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                            const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_or");
  KI_DETAIL_INTEGER_ONLY(T, "atomic_fetch_or");
  return detail::atomic_ref_t<T>(*p).fetch_or(v, detail::native(o));
}
template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_xor(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_xor");
  KI_DETAIL_INTEGER_ONLY(T, "atomic_fetch_xor");
  return detail::atomic_ref_t<T>(*p).fetch_xor(v, detail::native(o));
}

/// Any update: *p = f(*p), atomically, through a compare-exchange loop (like Metal.@atomic for
/// operations without a native atomic). Returns the previous value. f may run several times.
template <detail::atomic_value T, class F>
KI_DEVICE T atomic_update(T* p, F f, memory_order o = memory_order::relaxed,
                          const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_update");
  detail::atomic_ref_t<T> r(*p);
  T old = r.load(detail::native(detail::load_order(o)));
  while (
      !r.compare_exchange_weak(old, static_cast<T>(f(old)), detail::native(o), detail::native(detail::load_order(o)))) {
  }
  return old;
}

template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_min(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_min");
  KI_DETAIL_INTEGER_ONLY(T, "atomic_fetch_min");
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::atomic_ref_t<T>(*p).fetch_min(v, detail::native(o)); }
#endif
#if !KI_GPU_PASS
  return atomic_update(
      p, [v](T x) { return v < x ? v : x; }, o, where);  // C++20 has no fetch_min
#endif
}
template <detail::atomic_value T>
KI_DEVICE T atomic_fetch_max(T* p, std::type_identity_t<T> v, memory_order o = memory_order::relaxed,
                             const source_location& where = source_location::current()) {
  KI_DETAIL_TARGET_HAS(T, "atomic_fetch_max");
  KI_DETAIL_INTEGER_ONLY(T, "atomic_fetch_max");
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::atomic_ref_t<T>(*p).fetch_max(v, detail::native(o)); }
#endif
#if !KI_GPU_PASS
  return atomic_update(
      p, [v](T x) { return v > x ? v : x; }, o, where);
#endif
}
#undef KI_DETAIL_INTEGER_ONLY
#undef KI_DETAIL_TARGET_HAS
#undef KI_DETAIL_RUNTIME_HAS

#if KI_GPU_EMULATION
#define KI_DETAIL_GPU_NATIVE(o) detail::gpu::native(o)
#define KI_DETAIL_HOST_NATIVE(o) detail::host::native(o)
#else
#define KI_DETAIL_GPU_NATIVE(o) detail::native(o)
#define KI_DETAIL_HOST_NATIVE(o) detail::native(o)
#endif
/// Orders memory accesses around it without an atomic operation (C++ atomic_thread_fence).
KI_DEVICE inline void atomic_thread_fence(memory_order o = memory_order::seq_cst) {
#if KI_GPU_HIP && KI_GPU_CODE
  KI_GPU_BRANCH {
    switch (o) {  // __builtin_amdgcn_fence needs a constant order; relaxed orders nothing
      case memory_order::relaxed: break;
      case memory_order::acquire: __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "agent"); break;
      case memory_order::release: __builtin_amdgcn_fence(__ATOMIC_RELEASE, "agent"); break;
      case memory_order::acq_rel: __builtin_amdgcn_fence(__ATOMIC_ACQ_REL, "agent"); break;
      default: __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); break;
    }
    return;
  }
#elif KI_GPU_CODE
  KI_GPU_BRANCH {
    ::cuda::atomic_thread_fence(KI_DETAIL_GPU_NATIVE(o), ::cuda::thread_scope_device);
    return;
  }
#endif
#if !KI_GPU_PASS
  std::atomic_thread_fence(KI_DETAIL_HOST_NATIVE(o));
#endif
}

#undef KI_DETAIL_GPU_NATIVE
#undef KI_DETAIL_HOST_NATIVE

}  // namespace ki

#include <ki/detail/public_end.hpp>
