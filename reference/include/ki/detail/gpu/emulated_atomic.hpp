// Private: the emulated GPU's atomics (KI_GPU_EMULATION): what the GPU pass of ki/atomic.hpp
// calls, for a host compiler. CUDA: the part of libcu++'s cuda::atomic_ref and
// cuda::atomic_thread_fence it uses; HIP: clang's __hip_atomic_* builtins. Both are the host's
// atomics (std::atomic_ref, every scope as the system's), which are at least as strong as the
// GPU's; the CPU pass's checks (the spin watch, the profile's features) run before them in
// ki/atomic.hpp.
#pragma once
#include <ki/detail/private.hpp>
#include <atomic>
#include <cstring>
#include <type_traits>

#include <ki/detail/gpu/emulated.hpp>

namespace ki::detail::gpu::emu {
/// *p = op(*p, v) through compare-exchange (min and max, float add on any type).
template <class T, class Op>
T update(T* p, T v, std::memory_order o, Op op) {
  std::atomic_ref<T> r(*p);
  T old = r.load(std::memory_order_relaxed);
  while (!r.compare_exchange_weak(old, op(old, v), o, std::memory_order_relaxed)) {
  }
  return old;
}
inline constexpr auto min_op = [](auto a, auto b) { return b < a ? b : a; };
inline constexpr auto max_op = [](auto a, auto b) { return b > a ? b : a; };
}  // namespace ki::detail::gpu::emu

#if KI_GPU_EMULATION == 1
namespace cuda {
enum class memory_order { relaxed, consume, acquire, release, acq_rel, seq_cst };
inline constexpr memory_order memory_order_relaxed = memory_order::relaxed;
inline constexpr memory_order memory_order_acquire = memory_order::acquire;
inline constexpr memory_order memory_order_release = memory_order::release;
inline constexpr memory_order memory_order_acq_rel = memory_order::acq_rel;
inline constexpr memory_order memory_order_seq_cst = memory_order::seq_cst;
enum thread_scope { thread_scope_system, thread_scope_device, thread_scope_block, thread_scope_thread };
namespace detail {
inline std::memory_order host(memory_order o) {
  switch (o) {
    case memory_order::relaxed: return std::memory_order_relaxed;
    case memory_order::consume:
    case memory_order::acquire: return std::memory_order_acquire;
    case memory_order::release: return std::memory_order_release;
    case memory_order::acq_rel: return std::memory_order_acq_rel;
    default: return std::memory_order_seq_cst;
  }
}
inline std::memory_order load_part(memory_order o) {
  return o == memory_order::release   ? std::memory_order_relaxed
         : o == memory_order::acq_rel ? std::memory_order_acquire
                                      : host(o);
}
}  // namespace detail
template <class T, thread_scope = thread_scope_system>
class atomic_ref {
 public:
  explicit atomic_ref(T& r) : p_(&r) {}
  T load(memory_order o = memory_order_seq_cst) const { return r().load(detail::host(o)); }
  void store(T v, memory_order o = memory_order_seq_cst) const { r().store(v, detail::host(o)); }
  T exchange(T v, memory_order o = memory_order_seq_cst) const { return r().exchange(v, detail::host(o)); }
  bool compare_exchange_strong(T& e, T d, memory_order o, memory_order f) const {
    return r().compare_exchange_strong(e, d, detail::host(o), detail::load_part(f));
  }
  bool compare_exchange_weak(T& e, T d, memory_order o, memory_order f) const {
    return r().compare_exchange_weak(e, d, detail::host(o), detail::load_part(f));
  }
  T fetch_add(T v, memory_order o = memory_order_seq_cst) const { return r().fetch_add(v, detail::host(o)); }
  T fetch_sub(T v, memory_order o = memory_order_seq_cst) const { return r().fetch_sub(v, detail::host(o)); }
  T fetch_and(T v, memory_order o = memory_order_seq_cst) const { return r().fetch_and(v, detail::host(o)); }
  T fetch_or(T v, memory_order o = memory_order_seq_cst) const { return r().fetch_or(v, detail::host(o)); }
  T fetch_xor(T v, memory_order o = memory_order_seq_cst) const { return r().fetch_xor(v, detail::host(o)); }
  T fetch_min(T v, memory_order o = memory_order_seq_cst) const {
    return ki::detail::gpu::emu::update(p_, v, detail::host(o), ki::detail::gpu::emu::min_op);
  }
  T fetch_max(T v, memory_order o = memory_order_seq_cst) const {
    return ki::detail::gpu::emu::update(p_, v, detail::host(o), ki::detail::gpu::emu::max_op);
  }

 private:
  std::atomic_ref<T> r() const { return std::atomic_ref<T>(*p_); }
  T* p_;
};
inline void atomic_thread_fence(memory_order o, thread_scope = thread_scope_system) {
  std::atomic_thread_fence(detail::host(o));
}
}  // namespace cuda
#endif

#if KI_GPU_EMULATION == 2
#define __HIP_MEMORY_SCOPE_AGENT 3
namespace ki::detail::gpu::emu {
inline std::memory_order hip_order(int o) { return static_cast<std::memory_order>(o); }  // __ATOMIC_* values
inline std::memory_order hip_load_order(int o) {
  return o == __ATOMIC_RELEASE   ? std::memory_order_relaxed
         : o == __ATOMIC_ACQ_REL ? std::memory_order_acquire
                                 : hip_order(o);
}
}  // namespace ki::detail::gpu::emu
template <class T>
T __hip_atomic_load(T* p, int o, int) {
  return std::atomic_ref<T>(*p).load(ki::detail::gpu::emu::hip_load_order(o));
}
template <class T>
void __hip_atomic_store(T* p, T v, int o, int) {
  std::atomic_ref<T>(*p).store(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
T __hip_atomic_exchange(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).exchange(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
bool __hip_atomic_compare_exchange_strong(T* p, T* e, T d, int o, int f, int) {
  return std::atomic_ref<T>(*p).compare_exchange_strong(*e, d, ki::detail::gpu::emu::hip_order(o),
                                                        ki::detail::gpu::emu::hip_load_order(f));
}
template <class T>
bool __hip_atomic_compare_exchange_weak(T* p, T* e, T d, int o, int f, int) {
  return std::atomic_ref<T>(*p).compare_exchange_weak(*e, d, ki::detail::gpu::emu::hip_order(o),
                                                      ki::detail::gpu::emu::hip_load_order(f));
}
template <class T>
T __hip_atomic_fetch_add(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_add(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
T __hip_atomic_fetch_and(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_and(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
T __hip_atomic_fetch_or(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_or(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
T __hip_atomic_fetch_xor(T* p, T v, int o, int) {
  return std::atomic_ref<T>(*p).fetch_xor(v, ki::detail::gpu::emu::hip_order(o));
}
template <class T>
T __hip_atomic_fetch_min(T* p, T v, int o, int) {
  return ki::detail::gpu::emu::update(p, v, ki::detail::gpu::emu::hip_order(o), ki::detail::gpu::emu::min_op);
}
template <class T>
T __hip_atomic_fetch_max(T* p, T v, int o, int) {
  return ki::detail::gpu::emu::update(p, v, ki::detail::gpu::emu::hip_order(o), ki::detail::gpu::emu::max_op);
}
#endif
