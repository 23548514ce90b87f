// ki::reference::backend: the oracle. A fiber-based emulator of work-groups with exact barrier
// semantics, every misuse reported with work-item coordinates and source lines.
//
// Configuration travels in the backend value: ki::reference::backend{.threads = 1}.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <any>
#include <array>
#include <complex>
#include <memory>
#include <ostream>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <ranges>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ki/backend.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/detail/launch_policy.hpp>
#include <ki/ka/cpu_launch.hpp>
#include <ki/ka/kernel.hpp>
#include <ki/detail/shuffleable.hpp>
#include <ki/detail/type_name.hpp>
#include <ki/launch.hpp>
#include <ki/memory.hpp>
#include <ki/reference/schedule.hpp>

#ifndef KI_CHECKED_HOOKS
#define KI_CHECKED_HOOKS 0  // (as ki/detail/cpu/checked.hpp says; GPU passes do not include it)
#endif

namespace ki::reference {

/// Where the linear sub-group layout is not promised, which layout the oracle uses.
enum class layout : std::uint8_t {
  linear,       ///< consecutive work-items anyway (what CUDA does)
  adversarial,  ///< lanes scattered by a seed, several partial sub-groups
};

/// What the emulated device looks like. The defaults are the `cuda` preset.
struct profile {
  std::int64_t sub_group_width = 32;  ///< 1, 2, 4, ... 64
  std::int64_t max_work_group_size = 1024;
  std::array<std::int64_t, 3> max_work_group_dims{1024, 1024, 64};
  std::array<std::int64_t, 3> max_num_groups{2147483647, 65535, 65535};
  /// Bytes of local memory a work-group may use (all localmemory call sites together).
  std::size_t max_local_memory = 48 * 1024;
  /// supports_linear_subgroups: the promise of the linear layout for 1-D work-groups and those
  /// whose x extent is a multiple of the width. false: every work-group gets an adversarial one.
  bool linear_subgroups = true;
  /// The layout of work-group shapes that the promise does not cover.
  ki::reference::layout unpromised_layout = ki::reference::layout::linear;
  /// supports_independent_subgroups: sub-groups may execute different communication functions.
  bool independent_subgroups = true;
  /// supports_partitionable_subgroups: segments of a width may diverge (implies independent).
  bool partitionable_subgroups = true;
  bool float64 = true;
  /// supports_unified: allocate(..., {.unified = true}) works (host memory either way here).
  bool unified = true;
  /// supports_atomics (32-bit integers and float) and supports_atomics64 (64-bit types).
  bool atomics = true;
  bool atomics64 = true;
  /// Seeds the adversarial layouts.
  std::uint64_t layout_seed = 1;
  /// 0: unspecified values read as the fixed poison word 0xFFBADBAD; otherwise seeded random.
  std::uint64_t poison_seed = 0;
  /// Emulated devices (ki::ndevices), each with its own memory and per-thread queues.
  int devices = 1;
  /// ki::multiprocessor_count; 0: the host's hardware threads.
  std::int64_t multiprocessor_count = 0;
  const char* name = "cuda";
  /// The emulated GPU (docs/offload.md, "The emulated GPU"): 1 (CUDA) or 2 (HIP) where the
  /// device runs the GPU pass of kernels compiled with KI_GPU_EMULATION (ki::emulated_cuda,
  /// ki::emulated_hip), whose runtime sets it; 0 (the CPU pass) everywhere else.
  int gpu_dialect = 0;
  /// The emulated GPU's plain CUDA kernels (ki/emulated/cuda.hpp): the program's `__shared__`
  /// variables, one copy in one section, which every work-group takes as its local memory
  /// (poisoned at its start, its accesses checked; the runtime then runs one group at a time).
  /// Empty elsewhere.
  void* shared_section = nullptr;
  std::size_t shared_section_bytes = 0;

  /// The presets, each defined once, in their one table (reference/src/profile.cpp; described in
  /// docs/sub-groups.md, "Device profiles"): `cuda`, the defaults (profile{}), first. Each
  /// entry's `name` is the preset's name. What lists or iterates over the presets (preset's
  /// names, ki-info --profiles, the CTests per preset, the tests over all of them) reads it.
  static std::span<const profile> presets();
  /// The preset of that name, a copy of its entry of presets(). Throws std::invalid_argument
  /// naming an unknown name and the known ones.
  static profile preset(std::string_view name);
  /// The preset named by KI_REFERENCE_PROFILE, or `cuda` when it is not set.
  static profile from_environment();
};

/// When queued work (launches, copies, frees) runs.
enum class queue_mode : std::uint8_t {
  /// As on a GPU: a worker per (host thread, device) queue runs it in order, concurrently with
  /// the host thread, as soon as the events it waits for allow.
  async,
  /// The delaying mode: queued work runs only when the host needs it: at synchronize (of that
  /// queue), or when a queue being run waits for one of its events. A program that misses a
  /// synchronize or a wait_event sees stale data every time instead of passing by luck.
  delayed,
  /// Each launch or copy runs on the calling thread before the call returns (after the work
  /// queued before it): handy in a debugger. Synchronous, which the spec allows.
  immediate,
};

struct backend {
  /// The emulated device (default: KI_REFERENCE_PROFILE, else the cuda preset).
  profile device = profile::from_environment();
  /// Host threads running work-groups: 0 means KI_REFERENCE_THREADS if set, else all cores.
  /// 1 gives a deterministic run: groups in order, on the calling thread.
  int threads = 0;
  /// Fiber stack size per work-item in bytes: 0 means KI_REFERENCE_STACK_SIZE if set, else
  /// 256 KiB. Each stack has a guard region; overflowing it is reported, not a crash.
  std::size_t stack_size = 0;
  /// Print the oracle's warnings to stderr at synchronize.
  bool print_warnings = true;
  /// When queued work runs (default: KI_REFERENCE_QUEUE = async | delayed | immediate, else async).
  queue_mode queue = queue_mode_from_environment();
  /// Which legal execution to run (schedule exploration; see schedule.hpp). Default:
  /// KI_REFERENCE_SEED / KI_REFERENCE_SCHEDULE, else seed 0 (forward).
  ki::reference::schedule schedule = ki::reference::schedule::from_environment();
  /// Checked-access mode only (kernels compiled with KI_CHECKED_ACCESS=1): the policy for writes
  /// of an unchanged value. Default: KI_REFERENCE_SAME_VALUE_WRITES = race | allowed, else race.
  ki::reference::same_value_writes same_value_writes = same_value_writes_from_environment();
  /// Checked-access mode only: whether a launch stops at its first work-group with races, or
  /// runs on and reports every race. Default: KI_REFERENCE_RACES = first | all, else first.
  ki::reference::race_reports races = race_reports_from_environment();
  /// Spin-waits (docs/debugging.md, "Spin-waits"): a work-item that performs this many atomic
  /// operations in a row that all see the same value (on one atomic, or a few polled in turn),
  /// with no sync point between, is reported as kernel_error::kind::no_progress, once nothing
  /// else that runs can change the value. 0 means KI_REFERENCE_SPIN_LIMIT if set, else 1 << 20.
  std::uint64_t spin_limit = 0;
  /// Checked-access mode only: the most elements of global memory one launch may touch (its
  /// record for races between work-groups keeps one entry, a few hundred bytes, per element);
  /// beyond, the launch fails with a `resource` error naming the limit, instead of exhausting
  /// memory. 0 means KI_REFERENCE_CHECKED_ELEMENTS if set, else 1 << 24.
  std::uint64_t checked_elements = 0;
  /// When stores become visible to other work-items (schedule.hpp: memory_model; weak needs the
  /// kernels compiled with ki::reference_checked). Default: KI_REFERENCE_MEMORY = sequential |
  /// weak, else sequential.
  ki::reference::memory_model memory = memory_model_from_environment();
  /// What local memory holds before a work-group writes it (schedule.hpp: local_memory_start).
  /// Default: KI_REFERENCE_LOCAL_MEMORY = poison | leftovers, else poison.
  ki::reference::local_memory_start local_memory = local_memory_from_environment();

  /// One profile per emulated device, where given: device d emulates device_profiles[d], and
  /// ki::ndevices is their number (`device`, and its `devices`, are then unused; so is each
  /// entry's `devices`). Empty: every device emulates `device`. Queries (sub_group_size, the
  /// limits, supports_*) answer for the calling thread's active device, and a launch runs with
  /// its device's profile. Default: the presets KI_REFERENCE_PROFILE names where it names
  /// several, separated by commas ("cuda,amd-wave64": device 0 a CUDA GPU, device 1 a
  /// wave64 AMD GPU), else empty.
  std::vector<profile> device_profiles = device_profiles_from_environment();

  static queue_mode queue_mode_from_environment();
  static ki::reference::same_value_writes same_value_writes_from_environment();
  static ki::reference::race_reports race_reports_from_environment();
  static ki::reference::memory_model memory_model_from_environment();
  static ki::reference::local_memory_start local_memory_from_environment();
  static std::vector<profile> device_profiles_from_environment();

  /// Host arrays as kernel arguments (argconvert's backend route): the backend runs on the
  /// host, so a std::vector (ki::detail::host_array) becomes a ki::span over its elements. The
  /// vector must outlive the launch, and stay unresized until it has run.
  template <ki::detail::host_array R>
  auto argconvert(R& host) const {
    return ki::detail::host_span(host);
  }
};

/// Handle returned by ki::record_event: a point in one queue.
struct event {
  std::shared_ptr<void> queue;  ///< the queue it was recorded on (kept alive)
  std::uint64_t position = 0;   ///< the number of operations queued before it
};

/// The priority set with ki::set_priority on the calling thread's queue of the active device
/// (the reference backend records it; its workers run at the same OS priority).
priority get_priority(const backend& b);

namespace detail {
/// One launch, type-erased: the library's executor calls run_items on a fiber; it runs the
/// group's unstarted work-items one after another (a work-item that blocks keeps the fiber,
/// and the executor continues the loop on a new one).
void validate(const profile& p);  // std::invalid_argument for impossible profiles

/// The executor's queue of unstarted work-items of one group, run by the launch's own loop
/// (so that the kernel call is inlined into it).
struct item_loop {
  std::int64_t next = 0;   ///< the next unstarted work-item
  std::int64_t count = 0;  ///< work-items in the group
  ki::detail::cpu::item_state* const* items = nullptr;
  /// While a trace hook watches (ki/reference/events.hpp): called as each work-item starts
  /// (true) and returns from the kernel (false); else null.
  void (*watch)(void* ctx, const ki::detail::cpu::item_state& it, bool starts) = nullptr;
  void* watch_ctx = nullptr;
};

/// Queues the launch on the calling thread's queue of its active device; ctx is kept alive
/// until the launch has run. `instrumented`: the kernel's translation unit has the checked-access
/// hooks (KI_CHECKED_HOOKS), which memory_model::weak needs (else std::invalid_argument, here).
/// The memory a launch's ki::span arguments point into (`index`: the argument's position), which
/// the queue keeps from being released before the launch has run and checks against memory
/// already released (queue.cpp: a span made before ki::unsafe_free, or before its ki::array
/// was destroyed, is std::invalid_argument naming the argument).
struct argument_memory {
  const void* p;
  std::size_t bytes;
  int index;
};
template <class T>
struct is_span_argument : std::false_type {};
template <class T>
struct is_span_argument<ki::span<T>> : std::true_type {};
template <class... A>
std::vector<argument_memory> argument_memory_of(const A&... args) {
  std::vector<argument_memory> v;
  int k = 0;
  const auto one = [&](const auto& a) {
    if constexpr (is_span_argument<std::remove_cvref_t<decltype(a)>>::value)
      if (a.data() != nullptr && a.size() > 0)
        v.push_back({a.data(), static_cast<std::size_t>(a.size()) * sizeof(*a.data()), k});
    ++k;
  };
  (one(args), ...);
  (void)one;  // (a kernel without arguments)
  return v;
}
void submit(const backend& b, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
            void (*run_items)(const void*, item_loop&), std::shared_ptr<const void> ctx, std::string name,
            bool instrumented, std::vector<argument_memory> memory = {}, std::size_t dynamic_local_memory = 0);
/// Queues a KA launch (ki/ka/kernel.hpp): its groups run without fibers, each phase in the
/// order the schedule picks (CPU runtime, ki/cpu/ka.hpp); ctx is kept alive until it has run.
void submit_ka(const backend& b, const ki::ka::detail::cpu_launch_desc& d, std::shared_ptr<const void> ctx,
               std::string name, std::vector<argument_memory> memory = {});
void synchronize(const backend& b);                   // rethrows the queue's first failed launch
void* allocate(const backend& b, std::size_t bytes);  // poisoned
void free(const backend& b, int device, void* p) noexcept;
void copy(const backend& b, void* dst, const void* src, std::size_t bytes, copy_kind kind);
int active_device();
void set_active_device(int id);
event record_event(const backend& b);
void wait_event(const backend& b, const event& e);
void set_priority(const backend& b, priority p);
void versioninfo(std::ostream& os, const backend& b);
std::int64_t host_threads(const backend& b);

/// ki::ndevices(b): one per entry of device_profiles, else the profile's `devices`.
inline int device_count(const backend& b) {
  return b.device_profiles.empty() ? b.device.devices : static_cast<int>(b.device_profiles.size());
}
}  // namespace detail

/// The profile that device d of b emulates (`device` where b has no per-device profiles, or d
/// has none).
inline const profile& device_profile(const backend& b, int d) {
  if (b.device_profiles.empty() || d < 0 || d >= static_cast<int>(b.device_profiles.size())) return b.device;
  return b.device_profiles[static_cast<std::size_t>(d)];
}

namespace detail {
/// The profile of the calling thread's active device.
inline const profile& active_profile(const backend& b) { return device_profile(b, active_device()); }
/// b as a launch on the active device runs it: `device` is that device's profile (its
/// `devices` the backend's count, for the device checks), without per-device profiles.
inline backend on_active_device(const backend& b) {
  if (b.device_profiles.empty()) return b;
  backend r = b;
  r.device = active_profile(b);
  r.device.devices = device_count(b);
  r.device_profiles.clear();
  return r;
}
}  // namespace detail

/// A warning of the oracle: something legal whose result the spec leaves unspecified happened
/// (e.g. a shuffle read a lane without a work-item). Warnings never stop a kernel.
struct warning {
  std::string kind;    ///< e.g. "unspecified-lane-read"
  std::string where;   ///< file:line of the call
  std::int64_t count;  ///< how many times, in the launch
  std::string message;
};
/// Takes the calling thread's warnings so far (ki::synchronize also prints them to stderr
/// unless backend::print_warnings is false).
std::vector<warning> take_warnings();

namespace detail {

template <class F, class... A>
struct bound_kernel {
  F f;
  std::tuple<A...> args;
  static void run_items(const void* ctx, item_loop& loop) {
    // (Chosen once per call, not per item: the plain loop stays exactly the call. The executor
    // sets loop.watch per work-group, so every fiber of a group runs the same loop.)
    if (loop.watch != nullptr) [[unlikely]]
      return run_watched(ctx, loop);
    const auto& self = *static_cast<const bound_kernel*>(ctx);
    // Nothing per item but the call: the executor infers who has exited (see group_runner.hpp).
    while (loop.next < loop.count) {
      ki::detail::cpu::current = loop.items[loop.next++];
      // Each work-item gets its own copies of the kernel and of the arguments, as kernel
      // parameters on a GPU: a kernel may take them by (mutable) reference to its copy.
      F fc = self.f;
      std::apply([&](A... a) { fc(a...); }, self.args);
    }
  }
  /// The same loop while a trace hook watches: it is told of each work-item's start and return.
  [[gnu::noinline]] static void run_watched(const void* ctx, item_loop& loop) {
    const auto& self = *static_cast<const bound_kernel*>(ctx);
    while (loop.next < loop.count) {
      ki::detail::cpu::item_state* const me = loop.items[loop.next++];
      ki::detail::cpu::current = me;
      loop.watch(loop.watch_ctx, *me, true);
      F fc = self.f;
      std::apply([&](A... a) { fc(a...); }, self.args);
      loop.watch(loop.watch_ctx, *me, false);
    }
  }
};

/// Whether a kernel argument of type T is (or holds by value) a float64 value: double or long
/// double, alone or in a std::array or std::complex (user structs are not looked into). Spans and
/// pointers of double are not: the spec lets a device without float64 store and load such values
/// as words, and what it lacks is arithmetic, which a by-value argument is there for.
template <class T>
struct holds_float64 : std::bool_constant<std::is_floating_point_v<T> && (sizeof(T) >= 8)> {};
template <class T, std::size_t N>
struct holds_float64<std::array<T, N>> : holds_float64<T> {};
template <class T>
struct holds_float64<std::complex<T>> : holds_float64<T> {};

/// A launch's host-side check of what the emulated device lacks: a float64 argument (by value)
/// on a profile without float64 is std::invalid_argument naming the kernel, the argument's
/// position (from 0) and type, before anything runs.
template <class... A>
void check_float64_arguments(const profile& p, const std::string& kernel) {
  if (p.float64) return;
  std::size_t i = 0;
  const auto one = [&]<class T>() {
    if (holds_float64<std::remove_cv_t<T>>::value)
      throw std::invalid_argument("ki::reference: kernel '" + kernel + "': argument " + std::to_string(i) +
                                  " (from 0) is a " + ki::detail::type_name<T>() +
                                  ", a float64 value, which profile '" + p.name +
                                  "' does not support (supports_float64 is false): check "
                                  "ki::supports_float64(backend) and pass float instead, or move the value "
                                  "as std::uint64_t words (std::bit_cast), as the spec allows");
    ++i;
  };
  (one.template operator()<A>(), ...);
  (void)one;  // (no arguments)
}

}  // namespace detail
}  // namespace ki::reference

namespace ki {
/// The backend of a host array (the spec's get_backend(::Array) = CPU()): any contiguous range of
/// the host (std::vector, std::array, std::span, a C array) belongs to the reference backend, a
/// default ki::reference::backend{} (its profile from KI_REFERENCE_PROFILE). The answer is the
/// reference backend whichever other backends the program includes: every build has it, and the
/// same call means the same everywhere. Its kernels take a std::vector as an argument (a span
/// over it); the simd_cpu backend's kernels take one too, for a program that wants that backend
/// for host arrays (pass ki::simd_cpu::backend{} explicitly).
template <std::ranges::contiguous_range R>
ki::reference::backend get_backend(const R&) {
  return ki::reference::backend{};
}
}  // namespace ki

/// The kernel members check_compile_options, kernel_max_work_group_size and launch_configuration
/// are the shared launch policy's (ki/detail/launch_policy.hpp), from the active profile.
template <>
struct ki::backend_traits<ki::reference::backend> : ki::detail::launch_policy<ki::reference::backend> {
  using B = ki::reference::backend;
  static constexpr const char* name = "reference";
  static const reference::profile& active(const B& b) { return reference::detail::active_profile(b); }

  // Devices
  static int ndevices(const B& b) { return reference::detail::device_count(b); }
  static int device(const B&) { return reference::detail::active_device(); }
  static void set_device(const B&, int id) { reference::detail::set_active_device(id); }
  static std::optional<bool> functional(const B&) { return true; }
  static void versioninfo(std::ostream& os, const B& b) { reference::detail::versioninfo(os, b); }
  static std::int64_t multiprocessor_count(const B& b) {
    const std::int64_t n = reference::detail::active_profile(b).multiprocessor_count;
    return n > 0 ? n : reference::detail::host_threads(b);
  }
  // Memory
  static void* allocate(const B& b, std::size_t bytes, bool) { return reference::detail::allocate(b, bytes); }
  static void free(const B& b, int device, void* p) noexcept { reference::detail::free(b, device, p); }
  static void copy(const B& b, void* dst, const void* src, std::size_t bytes, copy_kind kind) {
    reference::detail::copy(b, dst, src, bytes, kind);
  }
  /// Host memory needs no pinning for the emulated devices: nothing to do.
  static std::optional<std::monostate> pagelock(const B&, const void*, std::size_t) { return std::monostate{}; }
  // Queues
  static void synchronize(const B& b) { reference::detail::synchronize(b); }
  using event = reference::event;
  static event record_event(const B& b) { return reference::detail::record_event(b); }
  static void wait_event(const B& b, const event& e) { reference::detail::wait_event(b, e); }
  static void set_priority(const B& b, priority p) { reference::detail::set_priority(b, p); }
  // Queries
  // (each for the active device: device_profile(b, ki::device(b)))
  static bool supports_unified(const B& b) { return active(b).unified; }
  static std::int64_t max_work_group_size(const B& b) { return active(b).max_work_group_size; }
  static std::array<std::int64_t, 3> max_work_group_dims(const B& b) { return active(b).max_work_group_dims; }
  static std::int64_t max_local_memory(const B& b) { return static_cast<std::int64_t>(active(b).max_local_memory); }
  static std::array<std::int64_t, 3> max_num_groups(const B& b) { return active(b).max_num_groups; }
  static std::int64_t sub_group_size(const B& b) { return active(b).sub_group_width; }
  static bool supports_subgroups(const B&) { return true; }
  static bool supports_linear_subgroups(const B& b) { return active(b).linear_subgroups; }
  static bool supports_independent_subgroups(const B& b) { return active(b).independent_subgroups; }
  static bool supports_partitionable_subgroups(const B& b) { return active(b).partitionable_subgroups; }
  static bool supports_float64(const B& b) { return active(b).float64; }
  static bool supports_atomics(const B& b) { return active(b).atomics; }
  static bool supports_atomics64(const B& b) { return active(b).atomics64; }
  /// Any trivially copyable type is moved as bytes (the spec's word-wise fallback).
  template <class T>
  static bool supports_shuffle(const B&) {
    return ki::detail::shuffleable_v<T>;  // trivially copyable, or a std::pair / std::tuple of such
  }

  /// No backend-specific launch options.
  template <class F, class... A>
  static void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
                     const launch_extras& x, A... args) {
    ki::detail::check_launch_options(x.options, name);
    const B on = reference::detail::on_active_device(k.backend);  // the active device's profile
    reference::detail::validate(on.device);
    ki::detail::check_num_groups(groups, on.device.max_num_groups, name);
    std::string shown = ki::detail::kernel_display_name<F>(k.name);
    reference::detail::check_float64_arguments<A...>(on.device, shown);
    using bound = reference::detail::bound_kernel<F, A...>;
    reference::detail::submit(on, groups, items, &bound::run_items,
                              std::make_shared<const bound>(bound{k.f, std::tuple<A...>(args...)}), std::move(shown),
                              KI_CHECKED_HOOKS != 0, reference::detail::argument_memory_of(args...),
                              static_cast<std::size_t>(x.dynamic_local_memory));
  }

  /// A KA launch (ki/ka/kernel.hpp), geometry checked; queued like a KI launch.
  template <class S, class F, class... A>
  static void ka_launch(const B& given, const ki::ka::geometry& g, const F& f, const char* name, A... args) {
    const B b = reference::detail::on_active_device(given);  // the active device's profile
    reference::detail::validate(b.device);
    std::string shown = name != nullptr ? std::string(name) : ki::detail::kernel_display_name<F>({});
    reference::detail::check_float64_arguments<A...>(b.device, shown);
    using bound = ki::ka::detail::cpu_bound<S, F, A...>;
    auto ctx = std::make_shared<const bound>(bound{f, std::tuple<A...>(args...)});
    // The seed is drawn in queue order on the launching thread, as for KI launches.
    const ki::ka::detail::cpu_launch_desc d{g.range,
                                            g.groupsize,
                                            g.groups,
                                            &bound::run_groups,
                                            ctx.get(),
                                            nullptr,
                                            static_cast<std::size_t>(g.dynamic_local_memory),
                                            ki::detail::next_launch_seed(backend_traits<B>::name)};
    reference::detail::submit_ka(b, d, std::move(ctx), std::move(shown),
                                 reference::detail::argument_memory_of(args...));
  }
};

#include <ki/detail/public_end.hpp>
