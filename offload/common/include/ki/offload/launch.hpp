// Private to the offload backends: the kernel entry point and what the runtime knows about it.
//
// A kernel F runs as entry<F, P...>, one __global__ function per kernel type and parameter list
// (bounded_entry<F, P...>, with __launch_bounds__, where F has launch hints: ki/hints.hpp).
// Where F has one non-template operator() (functor structs, KI_LAMBDAs), P... are its parameter
// types (decayed) and the entry exists before the first launch: max_work_group_size(kernel)
// comes from its function attributes (registers, local memory) and launch_configuration from
// the occupancy API. A generic F (a template operator()) gets entry<F, A...> with the argument
// types at launch, and the device's limits until then.
#pragma once
#include <atomic>
#include <climits>
#include <mutex>
#include <vector>
#include <cstdint>
#include <tuple>
#include <type_traits>

#include <ki/hints.hpp>
#include <ki/local_memory.hpp>
#include <ki/rand.hpp>
#include <ki/offload/device.hpp>

/// The one seam between the GPU pass's launches and the runtime: kernel<<<grid, block, shmem,
/// stream>>>(args...) for nvcc and hipcc (shmem: the dynamic shared memory's bytes); the emulated runtime's launch for a host compiler
/// (KI_GPU_EMULATION, ki/emulated/runtime.hpp), which queues the entry on the stream to run on
/// the oracle.
#if KI_GPU_EMULATION
#define KI_OFFLOAD_LAUNCH(kernel, grid, block, shmem, stream, ...) \
  ::ki::emulated::launch(kernel, grid, block, shmem, stream, __VA_ARGS__)
#else
#define KI_OFFLOAD_LAUNCH(kernel, grid, block, shmem, stream, ...) kernel<<<grid, block, shmem, stream>>>(__VA_ARGS__)
#endif

namespace ki::KI_OFFLOAD_NAMESPACE::detail {

/// What every entry stores in shared memory before the kernel runs: the launch's seed for
/// ki::rand (ki/rand.hpp, 8 bytes per block) and its dynamic_local_memory's size (ki/local_memory.hpp,
/// 4 bytes; the emulated GPU's oracle knows it).
__device__ inline void set_launch_constants(std::uint64_t rand_seed, std::uint32_t dynamic_local) {
#if KI_GPU_CODE
  ki::detail::gpu::rand_launch_seed() = rand_seed;
#if !KI_GPU_EMULATION
  ki::detail::dynamic_local_bytes() = dynamic_local;
#else
  (void)dynamic_local;
#endif
#else
  (void)rand_seed, (void)dynamic_local;  // (the host pass's stub)
#endif
}

template <class F, class... A>
__global__ void entry(std::uint64_t rand_seed, std::uint32_t dynamic_local, F f, A... args) {
  set_launch_constants(rand_seed, dynamic_local);
  f(args...);
}

/// The bound a kernel's launch hints give its entry (ki/hints.hpp), 0 for none.
template <class F>
inline constexpr int entry_bound = static_cast<int>(hints_of<F>.bound());

/// The entry of a kernel with launch hints: the device compiler is told the largest block it
/// will run (registers per thread are chosen for it).
template <class F, class... A>
__global__ void __launch_bounds__(entry_bound<F>)
    bounded_entry(std::uint64_t rand_seed, std::uint32_t dynamic_local, F f, A... args) {
  set_launch_constants(rand_seed, dynamic_local);
  f(args...);
}

/// Launches F's entry (bounded where F has hints) with the parameters A..., with `dynamic_local`
/// bytes of dynamic shared memory.
template <class F, class... A>
void launch_entry(dim3 grid, dim3 block, std::uint32_t dynamic_local, api::stream_t s, std::uint64_t rand_seed,
                  const F& f, A... args) {
  if constexpr (entry_bound < F >> 0)
    KI_OFFLOAD_LAUNCH((bounded_entry<F, A...>), grid, block, dynamic_local, s, rand_seed, dynamic_local, f, args...);
  else KI_OFFLOAD_LAUNCH((entry<F, A...>), grid, block, dynamic_local, s, rand_seed, dynamic_local, f, args...);
}

template <class M>
struct member_params {
  static constexpr bool known = false;
};
#define KI_OFFLOAD_MEMBER_PARAMS(quals)          \
  template <class C, class R, class... P>        \
  struct member_params<R (C::*)(P...) quals> {   \
    static constexpr bool known = true;          \
    using type = std::tuple<std::decay_t<P>...>; \
  };
KI_OFFLOAD_MEMBER_PARAMS()
KI_OFFLOAD_MEMBER_PARAMS(const)
KI_OFFLOAD_MEMBER_PARAMS(noexcept)
KI_OFFLOAD_MEMBER_PARAMS(const noexcept)
#undef KI_OFFLOAD_MEMBER_PARAMS

template <class F, class = void>
struct kernel_params {
  static constexpr bool known = false;
};
template <class F>
struct kernel_params<F, std::void_t<decltype(&F::operator())>> : member_params<decltype(&F::operator())> {};
/// A kernel with hints takes its callable's parameters.
template <std::int64_t M, std::int64_t X, std::int64_t Y, std::int64_t Z, class F>
struct kernel_params<hinted<M, X, Y, Z, F>, void> : kernel_params<F> {};

template <class F, class Tuple>
struct entry_of;
template <class F, class... P>
struct entry_of<F, std::tuple<P...>> {
  static const void* get() {
    if constexpr (entry_bound < F >> 0) return reinterpret_cast<const void*>(&bounded_entry<F, P...>);
    else return reinterpret_cast<const void*>(&entry<F, P...>);
  }
};

/// The entry of F known before launch, or nullptr.
template <class F>
const void* known_entry() {
  if constexpr (kernel_params<F>::known) return entry_of<F, typename kernel_params<F>::type>::get();
  else return nullptr;
}

/// maxThreadsPerBlock of an entry on device d, from its function attributes (cached per entry
/// and device: launches ask for it every time).
inline std::int64_t entry_max_threads(const void* f, int d) {
  struct slot {
    const void* f;
    int d;
    std::int64_t v;
  };
  static std::mutex m;
  static std::vector<slot> cache;
  {
    std::lock_guard lock(m);
    for (const auto& s : cache)
      if (s.f == f && s.d == d) return s.v;
  }
  api::func_attributes a{};
  KI_OFFLOAD_CHECK(FuncGetAttributes, &a, f);
  std::lock_guard lock(m);
  cache.push_back({f, d, a.maxThreadsPerBlock});
  return a.maxThreadsPerBlock;
}

}  // namespace ki::KI_OFFLOAD_NAMESPACE::detail
