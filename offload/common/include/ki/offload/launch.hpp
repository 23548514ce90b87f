// Private to the offload backends: the kernel entry point and what the runtime knows about it.
//
// A kernel F runs as entry<F, P...>, one __global__ function per kernel type and parameter list.
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

#include <ki/offload/device.hpp>

namespace ki::KI_OFFLOAD_NAMESPACE::detail {

template <class F, class... A>
__global__ void entry(F f, A... args) {
  f(args...);
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

template <class F, class Tuple>
struct entry_of;
template <class F, class... P>
struct entry_of<F, std::tuple<P...>> {
  static const void* get() { return reinterpret_cast<const void*>(&entry<F, P...>); }
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
