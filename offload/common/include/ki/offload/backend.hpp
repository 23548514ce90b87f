// The offload backends' implementation, written once for CUDA and HIP: ki::backend_traits of
// ki::cuda::backend / ki::hip::backend. <ki/cuda.hpp> and <ki/hip.hpp> define the API prefix
// (KI_OFFLOAD_API(Malloc) is cudaMalloc or hipMalloc), the namespace, and the few types and
// calls that differ (ki::<backend>::api), then include this file.
//
// Model (the reference backend's contract, ki/backend.hpp):
//   devices     the runtime's current device of the calling thread (0 until set_device);
//   queues      per thread and device: the streams of queue.hpp (priorities, events);
//   memory      cudaMalloc / cudaMallocManaged (unified) on the active device; copies are
//               cudaMemcpyAsync on the thread's stream; a host source that the DMA engine could
//               still read after the call returns (pinned or managed memory) is waited for;
//   queries     the device's properties; the kernel's limits from its function attributes;
//   launch      validated by ki::launch's common rules, then by max_num_groups here; errors of
//               the launch itself are thrown at once, errors while running at synchronize.
// Every failed runtime call throws ki::<backend>::error naming the call and the error.
#pragma once
#include <any>
#include <array>
#include <atomic>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <variant>

#include <ki/backend.hpp>
#include <ki/ka/gpu_group.hpp>
#include <ki/ka/kernel.hpp>
#include <ki/launch.hpp>
#include <ki/detail/public_begin.hpp>  // (private headers)
#include <ki/detail/launch_policy.hpp>
#include <ki/detail/shuffleable.hpp>
#include <ki/detail/public_end.hpp>
#include <ki/offload/device.hpp>
#include <ki/offload/errors.hpp>
#include <ki/offload/launch.hpp>
#include <ki/offload/queue.hpp>

namespace ki::KI_OFFLOAD_NAMESPACE::detail {

/// The entry's maxThreadsPerBlock on device d, cached per kernel type (launches ask every time).
template <class F>
std::int64_t entry_limit(int d) {
  const void* f = known_entry<F>();
  if (!f) return properties(d).maxThreadsPerBlock;
  static std::atomic<std::int64_t> cache[16]{};
  if (d < 0 || d >= 16) return entry_max_threads(f, d);
  std::int64_t v = cache[d].load(std::memory_order_relaxed);
  if (v == 0) cache[d].store(v = entry_max_threads(f, d), std::memory_order_relaxed);
  return v;
}

inline void describe_device(std::ostream& os, int d) {
  const auto& p = properties(d);
  os << "  device " << d << ": " << p.name << ", " << api::arch(p) << ", " << p.multiProcessorCount
     << " multiprocessors, " << (p.totalGlobalMem >> 20) << " MiB, sub-group width " << p.warpSize
     << ", max work-group " << p.maxThreadsPerBlock << ", " << (p.sharedMemPerBlock >> 10) << " KiB local memory\n";
}

}  // namespace ki::KI_OFFLOAD_NAMESPACE::detail

/// check_compile_options is the shared launch policy's (ki/detail/launch_policy.hpp); the
/// kernel's limit and advised size are the device's own, on that policy.
template <>
struct ki::backend_traits<ki::KI_OFFLOAD_NAMESPACE::backend>
    : ki::detail::launch_policy<ki::KI_OFFLOAD_NAMESPACE::backend> {
  using B = ki::KI_OFFLOAD_NAMESPACE::backend;
  static constexpr const char* name = ki::KI_OFFLOAD_NAMESPACE::api::name;

  // Devices
  static int ndevices(const B&) { return KI_OFFLOAD_NAMESPACE::detail::ndevices(); }
  static int device(const B&) { return KI_OFFLOAD_NAMESPACE::detail::current_device(); }
  static void set_device(const B&, int id) { KI_OFFLOAD_CHECK(SetDevice, id); }
  static std::optional<bool> functional(const B&) { return KI_OFFLOAD_NAMESPACE::available(); }
  /// The runtime and driver versions, and every device (the active one marked).
  static void versioninfo(std::ostream& os, const B& b) {
    int driver = 0, runtime = 0;
    (void)KI_OFFLOAD_API(DriverGetVersion)(&driver);
    (void)KI_OFFLOAD_API(RuntimeGetVersion)(&runtime);
    os << "backend " << name << ": runtime " << KI_OFFLOAD_NAMESPACE::api::version(runtime) << ", driver "
       << KI_OFFLOAD_NAMESPACE::api::version(driver) << "\n";
    std::string why;
    if (!KI_OFFLOAD_NAMESPACE::available(&why)) {
      os << "  no device: " << why << "\n";
      return;
    }
    const int n = ndevices(b), active = device(b);
    for (int d = 0; d < n; ++d) {
      KI_OFFLOAD_NAMESPACE::detail::describe_device(os, d);
      if (d == active) os << "    (active)\n";
    }
  }
  static std::int64_t multiprocessor_count(const B&) {
    return KI_OFFLOAD_NAMESPACE::detail::properties().multiProcessorCount;
  }

  // Memory
  static void* allocate(const B&, std::size_t bytes, bool unified) {
    void* p = nullptr;
    if (bytes == 0) bytes = 1;  // a unique, freeable pointer
    if (unified) KI_OFFLOAD_CHECK(MallocManaged, &p, bytes);
    else KI_OFFLOAD_CHECK(Malloc, &p, bytes);
    return p;
  }
  /// Waits for the calling thread's work on the owning device (the memory stays valid for it),
  /// then frees. Errors are dropped (noexcept; a sticky error is reported by synchronize).
  static void free(const B&, int device, void* p) noexcept {
    KI_OFFLOAD_NAMESPACE::detail::queues().each_stream(device,
                                                       [](auto s) { (void)KI_OFFLOAD_API(StreamSynchronize)(s); });
    (void)KI_OFFLOAD_API(Free)(p);
    (void)KI_OFFLOAD_API(GetLastError)();
  }
  static void copy(const B&, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    if (bytes == 0) return;
    const auto s = KI_OFFLOAD_NAMESPACE::detail::queues().stream();
    KI_OFFLOAD_CHECK(MemcpyAsync, dst, src, bytes, KI_OFFLOAD_API(MemcpyDefault), s);
    // From pageable memory the runtime has staged the source when MemcpyAsync returns; from
    // pinned or managed memory the copy reads it later, so wait: the contract says a host
    // source has been read when copy returns.
    if ((kind == copy_kind::host_to_device || kind == copy_kind::host_to_host) &&
        KI_OFFLOAD_NAMESPACE::api::read_later(src))
      KI_OFFLOAD_CHECK(StreamSynchronize, s);
  }
  /// Pins host memory (already pinned memory is fine).
  static std::optional<std::monostate> pagelock(const B&, const void* p, std::size_t bytes) {
    const auto e = KI_OFFLOAD_API(HostRegister)(const_cast<void*>(p), bytes, KI_OFFLOAD_API(HostRegisterDefault));
    if (e == KI_OFFLOAD_API(ErrorHostMemoryAlreadyRegistered)) (void)KI_OFFLOAD_API(GetLastError)();
    else KI_OFFLOAD_NAMESPACE::detail::check(e, KI_OFFLOAD_STR(KI_OFFLOAD_API(HostRegister)));
    return std::monostate{};
  }

  // Queues
  /// Waits for the calling thread's queue on the active device; an error of a kernel that ran
  /// there (a trap, a bad address) is thrown as ki::<backend>::error.
  static void synchronize(const B&) {
    KI_OFFLOAD_CHECK(StreamSynchronize, KI_OFFLOAD_NAMESPACE::detail::queues().stream());
  }
  using event = KI_OFFLOAD_NAMESPACE::event;
  static event record_event(const B&) {
    KI_OFFLOAD_NAMESPACE::api::event_t e = nullptr;
    KI_OFFLOAD_CHECK(EventCreateWithFlags, &e, KI_OFFLOAD_API(EventDisableTiming));
    event r{{e, [](KI_OFFLOAD_NAMESPACE::api::event_t x) { (void)KI_OFFLOAD_API(EventDestroy)(x); }}};
    KI_OFFLOAD_CHECK(EventRecord, e, KI_OFFLOAD_NAMESPACE::detail::queues().stream());
    return r;
  }
  static void wait_event(const B&, const event& e) {
    KI_OFFLOAD_CHECK(StreamWaitEvent, KI_OFFLOAD_NAMESPACE::detail::queues().stream(), e.e.get(), 0);
  }
  static void set_priority(const B&, priority p) { KI_OFFLOAD_NAMESPACE::detail::queues().set_priority(p); }

  // Queries (the active device's properties)
  static bool supports_unified(const B&) { return KI_OFFLOAD_NAMESPACE::detail::properties().managedMemory != 0; }
  static bool supports_atomics(const B&) { return true; }
  static bool supports_atomics64(const B&) { return true; }
  static bool supports_float64(const B&) { return true; }
  static bool supports_subgroups(const B&) { return true; }
  /// Warps / wavefronts hold consecutive linear local ids (x fastest), for every shape.
  static bool supports_linear_subgroups(const B&) { return true; }
  static bool supports_independent_subgroups(const B&) { return true; }
  /// CUDA sm_70+ (independent thread scheduling, per-segment masks); not HIP's lockstep wavefronts.
  static bool supports_partitionable_subgroups(const B&) {
    return KI_OFFLOAD_NAMESPACE::api::partitionable(KI_OFFLOAD_NAMESPACE::detail::properties());
  }
  /// Any trivially copyable type, moved as 32-bit words.
  template <class T>
  static bool supports_shuffle(const B&) {
    return ki::detail::shuffleable_v<T>;  // trivially copyable, or a std::pair / std::tuple of such
  }
  static std::int64_t max_work_group_size(const B&) {
    return KI_OFFLOAD_NAMESPACE::detail::properties().maxThreadsPerBlock;
  }
  static std::array<std::int64_t, 3> max_work_group_dims(const B&) {
    const auto& p = KI_OFFLOAD_NAMESPACE::detail::properties();
    return {p.maxThreadsDim[0], p.maxThreadsDim[1], p.maxThreadsDim[2]};
  }
  static std::array<std::int64_t, 3> max_num_groups(const B&) {
    const auto& p = KI_OFFLOAD_NAMESPACE::detail::properties();
    return {p.maxGridSize[0], p.maxGridSize[1], p.maxGridSize[2]};
  }
  static std::int64_t sub_group_size(const B&) { return KI_OFFLOAD_NAMESPACE::detail::properties().warpSize; }
  /// Shared memory per block without the opt-in beyond it (cudaFuncAttributeMaxDynamicSharedMemorySize).
  static std::int64_t max_local_memory(const B&) {
    return static_cast<std::int64_t>(KI_OFFLOAD_NAMESPACE::detail::properties().sharedMemPerBlock);
  }

  // Kernels (check_compile_options: ki::detail::launch_policy, "maxthreads" only)
  /// The smallest of the device's limit, the entry's maxThreadsPerBlock (its registers and
  /// local memory) and maxthreads.
  template <class F>
  static std::int64_t kernel_max_work_group_size(const kernel<B, F>& k) {
    const int d = device(k.backend);
    const std::int64_t r = KI_OFFLOAD_NAMESPACE::detail::properties(d).maxThreadsPerBlock;
    const std::int64_t e = KI_OFFLOAD_NAMESPACE::detail::entry_limit<F>(d);
    return ki::detail::lowered_by_maxthreads(e < r ? e : r, k.options, name);
  }
  /// The occupancy API's block size for the entry (whole sub-groups) where the entry is known,
  /// else the shared policy's 256, at most bound; for fewer work-items, nitems rounded up to
  /// whole sub-groups.
  template <class F>
  static std::int64_t launch_configuration(const kernel<B, F>& k, std::optional<std::int64_t> nitems,
                                           std::int64_t bound) {
    const int d = device(k.backend);
    std::int64_t s = ki::detail::advised_work_group_size;
    if (const void* f = KI_OFFLOAD_NAMESPACE::detail::known_entry<F>()) {
      const int limit = bound < INT_MAX ? static_cast<int>(bound) : 0;  // 0: no limit
      s = KI_OFFLOAD_NAMESPACE::api::max_potential_block_size(f, limit);
    }
    return ki::detail::advise_work_group_size(nitems, bound, KI_OFFLOAD_NAMESPACE::detail::properties(d).warpSize, s);
  }
  /// The kernel object (ki::native, ki/native.hpp): the entry and its attributes on the active
  /// device, where the entry is known from F alone (an operator() that is not a template; a
  /// generic one has an entry per launch's argument types, and the optional is empty).
  template <class F>
  static std::optional<KI_OFFLOAD_NAMESPACE::native_kernel> native(const kernel<B, F>&) {
    const void* f = KI_OFFLOAD_NAMESPACE::detail::known_entry<F>();
    if (f == nullptr) return std::nullopt;
    KI_OFFLOAD_NAMESPACE::native_kernel n;
    n.function = f;
    KI_OFFLOAD_CHECK(FuncGetAttributes, &n.attributes, f);
    return n;
  }

  /// No backend-specific launch options. The launch call is named for profilers by the kernel's
  /// name (api::launch_range: an NVTX range on CUDA). dynamic_local_memory: the launch's dynamic
  /// shared memory, checked with the entry's static shared memory (where the entry is known
  /// before the launch) against the device's.
  template <class F, class... A>
  static void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
                     const launch_extras& x, A... args) {
    ki::detail::check_launch_options(x.options, name);
    const auto dynamic = static_cast<std::uint32_t>(x.dynamic_local_memory);
    if (dynamic > 0)
      if (const void* f = KI_OFFLOAD_NAMESPACE::detail::known_entry<F>()) {
        KI_OFFLOAD_NAMESPACE::api::func_attributes a{};
        KI_OFFLOAD_CHECK(FuncGetAttributes, &a, f);
        const std::int64_t max = max_local_memory(k.backend);
        if (static_cast<std::int64_t>(a.sharedSizeBytes) + x.dynamic_local_memory > max)
          throw std::invalid_argument(std::string("ki::") + name +
                                      ": launch: dynamic_local_memory = " + std::to_string(x.dynamic_local_memory) +
                                      " bytes and the kernel's " + std::to_string(a.sharedSizeBytes) +
                                      " bytes of static shared memory exceed the device's " + std::to_string(max));
      }
    const KI_OFFLOAD_NAMESPACE::api::launch_range named(ki::detail::kernel_display_name<F>(k.name));
    ki::detail::check_num_groups(groups, max_num_groups(k.backend), name);
    const dim3 grid{unsigned(groups[0]), unsigned(groups[1]), unsigned(groups[2])};
    const dim3 block{unsigned(items[0]), unsigned(items[1]), unsigned(items[2])};
    const auto s = KI_OFFLOAD_NAMESPACE::detail::queues().stream();
    using params = KI_OFFLOAD_NAMESPACE::detail::kernel_params<F>;
    if constexpr (params::known) {
      launch_with(k.f, grid, block, dynamic, s, static_cast<typename params::type*>(nullptr), args...);
    } else {
      KI_OFFLOAD_NAMESPACE::detail::launch_entry<F, A...>(grid, block, dynamic, s, ki::detail::next_launch_seed(name),
                                                          k.f, args...);
    }
    const auto e = KI_OFFLOAD_API(GetLastError)();
    if (e != KI_OFFLOAD_API(Success))
      KI_OFFLOAD_NAMESPACE::detail::check(
          e, (std::string("the launch of kernel '") + (k.name.empty() ? "kernel" : k.name) + "' (" +
              std::to_string(groups[0] * groups[1] * groups[2]) + " work-groups of " +
              std::to_string(items[0] * items[1] * items[2]) + ")")
                 .c_str());
  }

  /// A KA launch (ki/ka/kernel.hpp, geometry checked there): one block per work-group, every
  /// thread running the group-level code on its ki::ka::gpu_group (ki/ka/gpu_group.hpp).
  template <class S, class F, class... A>
  static void ka_launch(const B&, const ki::ka::geometry& g, const F& f, const char* name, A... args) {
    if (g.range.count() == 0) return;  // an empty index space runs nothing (a grid of 0 is an error)
    const KI_OFFLOAD_NAMESPACE::api::launch_range named(name != nullptr ? std::string(name)
                                                                        : ki::detail::kernel_display_name<F>({}));
    const dim3 grid{unsigned(g.groups.x), unsigned(g.groups.y), unsigned(g.groups.z)};
    const dim3 block{unsigned(g.groupsize.x), unsigned(g.groupsize.y), unsigned(g.groupsize.z)};
    const auto dynamic = static_cast<std::uint32_t>(g.dynamic_local_memory);
    const ki::ka::detail::gpu_geometry geo{g.range.extents(), g.range.firsts(), g.groups, dynamic,
                                           ki::detail::next_launch_seed(backend_traits<B>::name)};
    const auto s = KI_OFFLOAD_NAMESPACE::detail::queues().stream();
    KI_OFFLOAD_LAUNCH((ki::ka::detail::ka_entry<S, F, A...>), grid, block, dynamic, s, geo, f, args...);
    const auto e = KI_OFFLOAD_API(GetLastError)();
    if (e != KI_OFFLOAD_API(Success))
      KI_OFFLOAD_NAMESPACE::detail::check(
          e, (std::string("the launch of KA kernel '") + (name != nullptr ? name : "kernel") + "' (" +
              std::to_string(g.groups.x * g.groups.y * g.groups.z) + " work-groups of " +
              std::to_string(g.groupsize.x * g.groupsize.y * g.groupsize.z) + ")")
                 .c_str());
  }

 private:
  /// The known entry: arguments converted to the parameter types (as calling F would).
  template <class F, class... P, class... A>
  static void launch_with(const F& f, dim3 grid, dim3 block, std::uint32_t dynamic,
                          KI_OFFLOAD_NAMESPACE::api::stream_t s, std::tuple<P...>*, A... args) {
    static_assert(sizeof...(P) == sizeof...(A), "ki::launch: the kernel takes a different number of arguments");
    KI_OFFLOAD_NAMESPACE::detail::launch_entry<F, P...>(grid, block, dynamic, s, ki::detail::next_launch_seed(name), f,
                                                        static_cast<P>(args)...);
  }
};
