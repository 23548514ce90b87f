// The KA layer's local memory (@localmem): a ki::local_array with atomic operations on its
// elements, for the histograms and counters that kernels keep in local memory.
//
//   auto bins = g.template localmem<std::uint32_t, 256>([] {});
//   g.grid_stride(n, [&](auto, std::int64_t k) { bins.atomic_fetch_add(x[k], 1u); });
//
// The operations are those of <ki/atomic.hpp> (the same types, orders, results and compile-time
// errors), taking the element's index instead of its address: a.atomic_fetch_add(i, v) is
// ki::atomic_fetch_add(&a[i], v), bounds-checked like a[i] on the CPU backends.
//
// Why a type of its own: on a CPU backend a KA work-group's work-items run one after another
// on one thread, in the loops of its phases, and nothing else can reach the group's local
// memory, so an atomic operation on it is exactly a plain read-modify-write (ki/atomic.hpp
// gives the argument). The pointer form cannot know that at compile time: it asks at run time
// whether the address is the group's (cpu::group_private) and keeps a real atomic on the other
// branch, which GCC treats as a barrier to moving memory accesses, so that every element of a
// phase's loop reloads what it could have kept in registers. Here the memory is known to be the
// group's: the W4 histogram's counting loop is 2.3x faster (docs/performance.md). On GPUs the
// operations are ki::atomic_* on the element (shared memory, device scope).
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#if !KI_GPU_PASS
#include <atomic>
#endif

#include <ki/atomic.hpp>
#include <ki/local_memory.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/target.hpp>

namespace ki::ka {

/// @localmem T (Dims...) as a KA kernel gets it: a ki::local_array (operator[], operator(),
/// data(), as_span()) with atomic operations on its elements (the index is linear, x fastest).
template <class T, std::size_t... Dims>
class local_array : public ki::local_array<T, Dims...> {
  using base = ki::local_array<T, Dims...>;

 public:
  KI_DEVICE explicit local_array(T* p) : base(p) {}

#if KI_GPU_PASS
  template <class I>
  KI_DEVICE T atomic_load(I i, memory_order o = memory_order::relaxed) const {
    return ki::atomic_load(&(*this)[i], o);
  }
  template <class I>
  KI_DEVICE void atomic_store(I i, std::type_identity_t<T> v, memory_order o = memory_order::relaxed) const {
    ki::atomic_store(&(*this)[i], v, o);
  }
  template <class I>
  KI_DEVICE T atomic_exchange(I i, std::type_identity_t<T> v, memory_order o = memory_order::relaxed) const {
    return ki::atomic_exchange(&(*this)[i], v, o);
  }
  template <class I>
  KI_DEVICE bool atomic_compare_exchange(I i, T& expected, std::type_identity_t<T> desired,
                                         memory_order o = memory_order::relaxed) const {
    return ki::atomic_compare_exchange(&(*this)[i], expected, desired, o);
  }
#define KI_DETAIL_KA_RMW(name)                                                                              \
  template <class I>                                                                                        \
  KI_DEVICE T atomic_##name(I i, std::type_identity_t<T> v, memory_order o = memory_order::relaxed) const { \
    return ki::atomic_##name(&(*this)[i], v, o);                                                            \
  }
  KI_DETAIL_KA_RMW(fetch_add)
  KI_DETAIL_KA_RMW(fetch_sub)
  KI_DETAIL_KA_RMW(fetch_and)
  KI_DETAIL_KA_RMW(fetch_or)
  KI_DETAIL_KA_RMW(fetch_xor)
  KI_DETAIL_KA_RMW(fetch_min)
  KI_DETAIL_KA_RMW(fetch_max)
#undef KI_DETAIL_KA_RMW
#else
  // CPU backends: the element (bounds-checked, naming the call's line), then the operation done
  // as a plain one. The memory order needs nothing: the group's work-items run in program order
  // on one thread. Checked-access mode sees an atomic access (atomics never race); instrumented
  // (KI_CHECKED_HOOKS) the operation is a real atomic one, which the hooks see as such (a plain
  // read-modify-write would reach them as a plain load and store).
  T atomic_load(ki::detail::checked::located_index i, memory_order = memory_order::relaxed) const {
    T* p = element(i, "atomic_load");
#if KI_CHECKED_HOOKS
    return std::atomic_ref<T>(*p).load();
#else
    return *p;
#endif
  }
  void atomic_store(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                    memory_order = memory_order::relaxed) const {
    T* p = element(i, "atomic_store");
#if KI_CHECKED_HOOKS
    std::atomic_ref<T>(*p).store(v);
#else
    *p = v;
#endif
  }
  T atomic_exchange(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                    memory_order = memory_order::relaxed) const {
    return update(element(i, "atomic_exchange"), [v](T) { return v; });
  }
  /// As ki::atomic_compare_exchange: compares object representations (as std::atomic does).
  bool atomic_compare_exchange(ki::detail::checked::located_index i, T& expected, std::type_identity_t<T> desired,
                               memory_order = memory_order::relaxed) const {
    T* p = element(i, "atomic_compare_exchange");
#if KI_CHECKED_HOOKS
    return std::atomic_ref<T>(*p).compare_exchange_strong(expected, desired);
#else
    ki::detail::not_lanes(*p);  // (a plain read-modify-write: never SIMD lanes, ki/atomic.hpp)
    if (std::memcmp(p, &expected, sizeof(T)) == 0) {
      *p = desired;
      return true;
    }
    expected = *p;
    return false;
#endif
  }
  T atomic_fetch_add(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    return update(element(i, "atomic_fetch_add"), [v](T a) { return static_cast<T>(U(a) + U(v)); });
  }
  T atomic_fetch_sub(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    return update(element(i, "atomic_fetch_sub"), [v](T a) { return static_cast<T>(U(a) - U(v)); });
  }
  T atomic_fetch_and(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    if constexpr (!ki::detail::atomic_integer<T>) return integer_only();
    else return update(element(i, "atomic_fetch_and"), [v](T a) { return static_cast<T>(a & v); });
  }
  T atomic_fetch_or(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                    memory_order = memory_order::relaxed) const {
    if constexpr (!ki::detail::atomic_integer<T>) return integer_only();
    else return update(element(i, "atomic_fetch_or"), [v](T a) { return static_cast<T>(a | v); });
  }
  T atomic_fetch_xor(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    if constexpr (!ki::detail::atomic_integer<T>) return integer_only();
    else return update(element(i, "atomic_fetch_xor"), [v](T a) { return static_cast<T>(a ^ v); });
  }
  T atomic_fetch_min(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    if constexpr (!ki::detail::atomic_integer<T>) return integer_only();
    else return update(element(i, "atomic_fetch_min"), [v](T a) { return v < a ? v : a; });
  }
  T atomic_fetch_max(ki::detail::checked::located_index i, std::type_identity_t<T> v,
                     memory_order = memory_order::relaxed) const {
    if constexpr (!ki::detail::atomic_integer<T>) return integer_only();
    else return update(element(i, "atomic_fetch_max"), [v](T a) { return v > a ? v : a; });
  }

 private:
  // Integers in their unsigned type: wrapping, as atomic arithmetic is defined to.
  using U = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<T>, std::type_identity<T> >::type;
  /// (Instantiated only for the types it refuses.)
  static T integer_only() {
    static_assert(ki::detail::atomic_integer<T>,
                  "ki::ka::local_array: this atomic operation needs a 32- or 64-bit integer type: for float and "
                  "double, write the update with ki::atomic_update on &a[i]");
    return T{};
  }
  /// *p = f(*p) as one atomic operation; returns the old value.
  template <class F>
  static T update(T* p, F f) {
#if KI_CHECKED_HOOKS
    std::atomic_ref<T> r(*p);
    T old = r.load();
    while (!r.compare_exchange_weak(old, f(old))) {
    }
    return old;
#else
    const T old = *p;
    *p = f(old);
    ki::detail::not_lanes(*p);  // (a plain read-modify-write: never SIMD lanes, ki/atomic.hpp)
    return old;
#endif
  }
  /// The element, bounds-checked; the device's features checked for its type (64-bit atomics,
  /// float64: the oracle's profile) as ki::atomic_* do; shown to checked-access mode as atomic.
  KI_ALWAYS_INLINE T* element(ki::detail::checked::located_index i, const char* what) const {
    static_assert(ki::detail::atomic_value<T>,
                  "ki::ka::local_array: atomic operations take 32- or 64-bit integers, float or double");
    static_assert(sizeof(T) < 8 || target.atomics64,
                  "ki::ka::local_array: an atomic operation on a 64-bit type needs 64-bit atomics: "
                  "ki::target.atomics64 is false for this target");
    T* p = &base::operator[](i);
    if constexpr (sizeof(T) == 8) {
      const auto& f = ki::detail::cpu::current_features;
      if (!f.atomics64 || (std::is_same_v<T, double> && !f.float64)) [[unlikely]]
        ki::detail::cpu::unsupported_atomic(what, ki::detail::type_name<T>(), f.atomics64, i.where());
    }
#if KI_CHECKED_ACCESS
    if (ki::detail::checked::recorder* c = ki::detail::checked::active) c->atomic(p);
#endif
    return p;
  }
#endif
};

}  // namespace ki::ka

#include <ki/detail/public_end.hpp>
