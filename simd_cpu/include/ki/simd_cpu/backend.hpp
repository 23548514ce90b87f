// ki::simd_cpu::backend: the fast CPU backend. Same kernels as the oracle, run for speed:
// work-groups in parallel (oneTBB, or OpenMP with KI_SIMD_CPU_SCHEDULER=openmp), each group's
// work-items as a plain loop until one reaches a synchronisation point (lazy fibers, the
// reference backend's fiber core), sub-group collectives over the lanes' values with xsimd.
//
// The host side is deliberately simple: one device (the host), and every launch and copy runs
// on the calling thread before the call returns (the spec allows synchronous execution), so
// events are satisfied as soon as they are recorded. A failed launch is kept, as on every
// backend, and rethrown by the next ki::synchronize as ki::kernel_error.
//
// Configuration travels in the value: ki::simd_cpu::backend{.threads = 1, .sub_group_width = 8}.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>

#include <ki/backend.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/detail/launch_policy.hpp>
#include <ki/ka/cpu_launch.hpp>
#include <ki/ka/kernel.hpp>
#include <ki/detail/shuffleable.hpp>
#include <ki/launch.hpp>
#include <ki/memory.hpp>

namespace ki::simd_cpu {

/// What runs the work-groups of a launch in parallel.
enum class scheduler : std::uint8_t { tbb, openmp };

struct backend {
  /// Host threads running work-groups: 0 means KI_SIMD_CPU_THREADS if set, else all cores.
  /// 1 runs the groups in order on the calling thread.
  int threads = 0;
  /// Fiber stack per work-item that reaches a synchronisation point, in bytes: 0 means
  /// KI_SIMD_CPU_STACK_SIZE if set, else 256 KiB. Overflowing it is reported, not a crash.
  std::size_t stack_size = 0;
  /// The spin watch (docs/debugging.md, "Spin-waits"): a work-item that polls an atomic, seeing
  /// the same value, this many times in a row with no sync point between (and, while other
  /// work-groups run, for a second without any of them ending) is reported as no-progress
  /// instead of hanging. 0 means KI_SIMD_CPU_SPIN_LIMIT if set, else 2^20. Atomics are sampled
  /// (one in 1021 is looked at until one repeats): the watch costs a decrement per atomic.
  std::uint64_t spin_limit = 0;
  /// The sub-group width W (a power of two, 1 to 64). Sub-groups are always linear: work-item
  /// lin (x fastest) is in sub-group lin / W at lane lin % W. The default, 32, is CUDA's warp:
  /// a collective costs one fiber switch per work-item whatever W (> 1) is, and the lanes'
  /// values are combined with W / batch-width vector operations, so a wider sub-group only
  /// halves the per-sub-group work (atomics, leader branches) that kernels do; see
  /// docs/choosing-a-backend.md.
  std::int64_t sub_group_width = 32;
  /// Default: KI_SIMD_CPU_SCHEDULER = tbb | openmp (read once), else tbb.
  ki::simd_cpu::scheduler scheduler = scheduler_from_environment();

  static ki::simd_cpu::scheduler scheduler_from_environment();

  /// Host arrays as kernel arguments (argconvert's backend route): a std::vector
  /// (ki::detail::host_array) becomes a ki::span over its elements, as on the reference backend.
  template <ki::detail::host_array R>
  auto argconvert(R& host) const {
    return ki::detail::host_span(host);
  }
};

/// Handle returned by ki::record_event. Work is done when its call returns, so an event is
/// satisfied when it is recorded; it only remembers where (for versioninfo-style debugging).
struct event {
  std::uint64_t position = 0;  ///< launches and copies this thread had run before it
};

namespace detail {

/// The unstarted work-items of the current group, run by the launch's own loop (so that the
/// kernel call is inlined into it): per work-item, one store (`current`) and the call. The
/// work-items' states are prepared once per launch; work-item k's is `items + k * stride`
/// bytes. At its first synchronisation point a work-item moves `next` past itself (it may be
/// suspended there and another fiber go on with the loop); the loop notices and goes on from
/// `next`. Few stores per work-item matter: on memory-bound kernels the kernel's own stores
/// compete with the loop's for the store buffer.
struct item_loop {
  std::int64_t next = 0;   ///< first unstarted work-item (up to date between runs and at sync points)
  std::int64_t count = 0;  ///< work-items in the group
  char* items = nullptr;   ///< work-item 0's ki::detail::cpu::item_state
  std::size_t stride = 0;  ///< bytes from one work-item's state to the next
};

using run_items_fn = void (*)(const void* ctx, item_loop& loop);
/// Runs one work-item, the current one, from its start (on a fiber of its own).
using run_one_fn = void (*)(const void* ctx);

/// Runs the launch on the calling thread and the scheduler's workers before it returns; a
/// failure is kept for synchronize.
void launch(const backend& b, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items, run_items_fn run,
            run_one_fn one, const void* ctx, const std::string& name, std::size_t dynamic_local_memory = 0);
/// Runs a KA launch (ki/ka/kernel.hpp) before it returns: its groups in parallel, each phase a
/// plain loop over the work-items (CPU runtime, ki/cpu/ka.hpp); a failure is kept for synchronize.
void launch_ka(const backend& b, const ki::ka::detail::cpu_launch_desc& d);
void synchronize(const backend& b);
void* allocate(const backend& b, std::size_t bytes);
void free(void* p) noexcept;
void copy(const backend& b, void* dst, const void* src, std::size_t bytes);
event record_event(const backend& b);
void set_priority(const backend& b, priority p);
void versioninfo(std::ostream& os, const backend& b);
std::int64_t host_threads(const backend& b);
void validate(const backend& b);  // std::invalid_argument for an impossible configuration

template <class F, class... A>
struct bound_kernel {
  F f;
  std::tuple<A...> args;
  static void run_items(const void* ctx, item_loop& loop) {
    namespace cpu = ki::detail::cpu;
    const auto& self = *static_cast<const bound_kernel*>(ctx);
    char* const items = loop.items;
    const std::size_t stride = loop.stride;
    const std::int64_t n = loop.count;
    std::int64_t k = loop.next, known = k;
    char* p = items + k * stride;
    while (k < n) {
      cpu::current = reinterpret_cast<cpu::item_state*>(p);
      // Each work-item gets its own copies of the kernel and of the arguments, as kernel
      // parameters on a GPU (a kernel may take them by mutable reference).
      F fc = self.f;
      std::apply([&](A... a) { fc(a...); }, self.args);
      if (loop.next != known) [[unlikely]] {  // it reached a sync point: the executor moved `next`
        k = known = loop.next;                // past it (this fiber may be another's now)
        p = items + k * stride;
        continue;
      }
      ++k;
      p += stride;
    }
    loop.next = n;
  }
  // A second call site of the kernel: GCC then inlines a big kernel at neither (the tiled
  // matrix product's: ~5% slower), but running one work-item through run_items instead cost
  // ~50 instructions more per work-item and was 15-25% slower on the tree reduction and the
  // histogram.
  static void run_one(const void* ctx) {
    const auto& self = *static_cast<const bound_kernel*>(ctx);
    F fc = self.f;
    std::apply([&](A... a) { fc(a...); }, self.args);
  }
};
}  // namespace detail

/// The fixed profile of the host device.
inline constexpr std::int64_t max_work_group_size = 1024;
inline constexpr std::size_t max_local_memory = 64 * 1024;

}  // namespace ki::simd_cpu

/// The kernel members check_compile_options, kernel_max_work_group_size and launch_configuration
/// are the shared launch policy's (ki/detail/launch_policy.hpp), from the fixed profile.
template <>
struct ki::backend_traits<ki::simd_cpu::backend> : ki::detail::launch_policy<ki::simd_cpu::backend> {
  using B = ki::simd_cpu::backend;
  static constexpr const char* name = "simd_cpu";

  // Devices: one, the host.
  static int ndevices(const B&) { return 1; }
  static int device(const B&) { return 0; }
  static void set_device(const B&, int) {}
  static std::optional<bool> functional(const B&) { return true; }
  static void versioninfo(std::ostream& os, const B& b) { simd_cpu::detail::versioninfo(os, b); }
  static std::int64_t multiprocessor_count(const B& b) { return simd_cpu::detail::host_threads(b); }
  // Memory: host memory, 64-byte aligned.
  static void* allocate(const B& b, std::size_t bytes, bool) { return simd_cpu::detail::allocate(b, bytes); }
  static void free(const B&, int, void* p) noexcept { simd_cpu::detail::free(p); }
  /// Synchronous: done when it returns.
  static void copy(const B& b, void* dst, const void* src, std::size_t bytes, copy_kind) {
    simd_cpu::detail::copy(b, dst, src, bytes);
  }
  static std::optional<std::monostate> pagelock(const B&, const void*, std::size_t) { return std::monostate{}; }
  // Queues: work has run when its call returned.
  static void synchronize(const B& b) { simd_cpu::detail::synchronize(b); }
  using event = simd_cpu::event;
  static event record_event(const B& b) { return simd_cpu::detail::record_event(b); }
  static void wait_event(const B&, const event&) {}  // already satisfied
  static void set_priority(const B& b, priority p) { simd_cpu::detail::set_priority(b, p); }
  // Queries: the fixed CPU profile.
  static bool supports_unified(const B&) { return true; }
  static std::int64_t max_work_group_size(const B&) { return simd_cpu::max_work_group_size; }
  static std::array<std::int64_t, 3> max_work_group_dims(const B&) { return {1024, 1024, 1024}; }
  static std::int64_t max_local_memory(const B&) { return static_cast<std::int64_t>(simd_cpu::max_local_memory); }
  /// The CPU's own limit, not a GPU's (CUDA's 65535 in y and z would refuse sizes OpenCL runs
  /// on the same CPU): 2^31 - 1 work-groups in each dimension; a launch whose work-items in total
  /// do not fit std::int64_t is refused at launch (ki/detail/geometry.hpp, ki/ka/kernel.hpp).
  static std::array<std::int64_t, 3> max_num_groups(const B&) { return {2147483647, 2147483647, 2147483647}; }
  static std::int64_t sub_group_size(const B& b) { return b.sub_group_width; }
  static bool supports_subgroups(const B&) { return true; }
  /// Always linear, for every work-group shape.
  static bool supports_linear_subgroups(const B&) { return true; }
  /// Each sub-group (each segment of a width) performs a function as soon as its own
  /// work-items have arrived, independently of the others.
  static bool supports_independent_subgroups(const B&) { return true; }
  static bool supports_partitionable_subgroups(const B&) { return true; }
  static bool supports_float64(const B&) { return true; }
  static bool supports_atomics(const B&) { return true; }
  static bool supports_atomics64(const B&) { return true; }
  template <class T>
  static bool supports_shuffle(const B&) {
    return ki::detail::shuffleable_v<T>;  // trivially copyable, or a std::pair / std::tuple of such
  }

  /// No backend-specific launch options. Runs before it returns.
  template <class F, class... A>
  static void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
                     const launch_extras& x, A... args) {
    ki::detail::check_launch_options(x.options, name);
    simd_cpu::detail::validate(k.backend);
    ki::detail::check_num_groups(groups, max_num_groups(k.backend), name);
    using bound = simd_cpu::detail::bound_kernel<F, A...>;
    const bound ctx{k.f, std::tuple<A...>(args...)};
    simd_cpu::detail::launch(k.backend, groups, items, &bound::run_items, &bound::run_one, &ctx,
                             ki::detail::kernel_display_name<F>(k.name),
                             static_cast<std::size_t>(x.dynamic_local_memory));
  }

  /// A KA launch (ki/ka/kernel.hpp), geometry checked. Runs before it returns.
  template <class S, class F, class... A>
  static void ka_launch(const B& b, const ki::ka::geometry& g, const F& f, const char* name, A... args) {
    simd_cpu::detail::validate(b);
    using bound = ki::ka::detail::cpu_bound<S, F, A...>;
    const bound ctx{f, std::tuple<A...>(args...)};
    const std::string shown = name != nullptr ? std::string(name) : ki::detail::kernel_display_name<F>({});
    simd_cpu::detail::launch_ka(
        b, {g.range, g.groupsize, g.groups, &bound::run_groups, &ctx, shown.c_str(),
            static_cast<std::size_t>(g.dynamic_local_memory), ki::detail::next_launch_seed(backend_traits<B>::name)});
  }
};

#include <ki/detail/public_end.hpp>
