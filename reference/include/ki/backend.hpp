// The backend customisation point.
//
// A backend is a cheap value type (e.g. ki::reference::backend{}) that carries its
// configuration. The portable API (ki::allocate, ki::kernel_function, ki::synchronize ...) calls
// ki::backend_traits<B>, which is declared here and never defined: each backend specialises it
// in its own folder (reference/include/ki/reference/backend.hpp is the model).
//
// The concept ki::backend below is the whole contract: every member of backend_traits<B> that
// the portable code calls, with its signature, so that a backend missing one (or giving it
// another signature) is refused at the concept, naming the requirement, not deep in a template
// of the portable code. It is checked in groups (ki::detail::backend_devices, ..._memory,
// ..._queues, ..._queries, ..._kernels), one per header of the portable API that calls them;
// docs/adding-a-backend.md lists the same members. "Active device" and "queue" are the calling
// host thread's (the spec's task-local state); device ids are 0-based. K is a ki::kernel<B, F>.
//
// Optional, outside the concept (the portable code asks for them with its own requires-clause):
//   template <class F> static auto native(const K&);   // the kernel object, for ki::native (ki/native.hpp)
//   auto B::argconvert(Arg&) const;   // a member of the backend value: arguments the backend itself
//                                     // converts (ki/argconvert.hpp, route 3; CPU backends: host vectors)
//
// The launch policy the backends share (the "maxthreads" compiler option, no launch options,
// the advised work-group size of 256, the max_num_groups check) is ki/detail/launch_policy.hpp.
#pragma once
#include <any>
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <optional>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

namespace ki {

/// Specialised by each backend; the concept ki::backend says what it provides.
template <class B>
struct backend_traits;

/// A backend-specific keyword argument (compiler or launch option), e.g. {"maxthreads", 256}.
/// Backends reject names they do not know, naming them.
struct kwarg {
  std::string name;
  std::any value;
};
using kwargs = std::vector<kwarg>;

/// What a launch gives its backend besides the geometry and the arguments.
struct launch_extras {
  /// launch_options::dynamic_local_memory: bytes, checked against max_local_memory already.
  std::int64_t dynamic_local_memory = 0;
  /// launch_options::options.
  const kwargs& options;
};

/// Queue priorities (the spec's priority!(backend, :high | :normal | :low)).
enum class priority : int { high, normal, low };

/// Which sides of a copy are device memory; ki::copyto works it out from the argument types.
enum class copy_kind : int { host_to_host, host_to_device, device_to_host, device_to_device };

/// A compiled kernel of backend B (ki/launch.hpp). Not constrained by ki::backend: the concept
/// names kernel<B, F> in its own requirements.
template <class B, class F>
class kernel;

namespace ka {
struct geometry;      // a KA launch's resolved geometry (ki/ka/kernel.hpp)
struct dynamic_size;  // no static work-group size (ki/ka/sizes.hpp)
}  // namespace ka

namespace detail {

/// The callable the concept's kernel requirements are asked with (never called).
struct contract_kernel {
  void operator()() const {}
};

/// The backend value and its name, for messages ("ki::<name>: ...") and the launch seeds.
template <class B>
concept backend_named = std::is_copy_constructible_v<B> && requires {
  { backend_traits<B>::name } -> std::convertible_to<const char*>;
};

/// Devices (ki/device.hpp).
template <class B>
concept backend_devices = requires(const B& b, int id, std::ostream& os) {
  { backend_traits<B>::ndevices(b) } -> std::same_as<int>;
  /// The calling thread's active device.
  { backend_traits<B>::device(b) } -> std::same_as<int>;
  /// id is in [0, ndevices), checked by ki::set_device.
  { backend_traits<B>::set_device(b, id) } -> std::same_as<void>;
  /// Empty: not implemented (the spec's `missing`).
  { backend_traits<B>::functional(b) } -> std::same_as<std::optional<bool>>;
  { backend_traits<B>::versioninfo(os, b) } -> std::same_as<void>;
  /// 0: unknown.
  { backend_traits<B>::multiprocessor_count(b) } -> std::same_as<std::int64_t>;
};

/// Memory (ki/memory.hpp).
template <class B>
concept backend_memory = requires(const B& b, std::size_t bytes, bool unified, int device, void* p, const void* q,
                                  copy_kind kind) {
  /// Uninitialised, on the active device.
  { backend_traits<B>::allocate(b, bytes, unified) } -> std::same_as<void*>;
  /// May be deferred: the memory stays valid for the work the calling thread queued before.
  { backend_traits<B>::free(b, device, p) }
  noexcept->std::same_as<void>;
  /// Queued on the calling thread's queue of the active device; a host source has been read when
  /// it returns, a host destination is written when the queue reaches the copy.
  { backend_traits<B>::copy(b, p, q, bytes, kind) } -> std::same_as<void>;
  { backend_traits<B>::pagelock(b, q, bytes) } -> std::same_as<std::optional<std::monostate>>;
  /// ki::allocate(..., {.unified = true}) is refused where it is false.
  { backend_traits<B>::supports_unified(b) } -> std::same_as<bool>;
};

/// Queues (ki/queue.hpp).
template <class B>
concept backend_queues = std::is_copy_constructible_v<typename backend_traits<B>::event> &&
    requires(const B& b, const typename backend_traits<B>::event& e, priority p) {
  /// Waits for the calling thread's queue of the active device; rethrows failed launches.
  { backend_traits<B>::synchronize(b) } -> std::same_as<void>;
  { backend_traits<B>::record_event(b) } -> std::same_as<typename backend_traits<B>::event>;
  { backend_traits<B>::wait_event(b, e) } -> std::same_as<void>;
  /// p is a valid enumerator, checked by ki::set_priority.
  { backend_traits<B>::set_priority(b, p) } -> std::same_as<void>;
};

/// Queries of the active device (ki/queries.hpp; the limits also by ki/launch.hpp and
/// ki/ka/kernel.hpp).
template <class B>
concept backend_queries = requires(const B& b) {
  { backend_traits<B>::supports_atomics(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_atomics64(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_float64(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_subgroups(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_linear_subgroups(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_independent_subgroups(b) } -> std::same_as<bool>;
  { backend_traits<B>::supports_partitionable_subgroups(b) } -> std::same_as<bool>;
  /// A template on the element type T (asked here with int and double).
  { backend_traits<B>::template supports_shuffle<int>(b) } -> std::same_as<bool>;
  { backend_traits<B>::template supports_shuffle<double>(b) } -> std::same_as<bool>;
  { backend_traits<B>::max_work_group_size(b) } -> std::same_as<std::int64_t>;
  { backend_traits<B>::max_work_group_dims(b) } -> std::same_as<std::array<std::int64_t, 3>>;
  { backend_traits<B>::max_num_groups(b) } -> std::same_as<std::array<std::int64_t, 3>>;
  { backend_traits<B>::sub_group_size(b) } -> std::same_as<std::int64_t>;
  /// Bytes per work-group, static and dynamic together.
  { backend_traits<B>::max_local_memory(b) } -> std::same_as<std::int64_t>;
};

/// Kernels and launches (ki/launch.hpp, ki/queries.hpp, ki/ka/kernel.hpp). The kernel members are
/// templates on the kernel's callable F (asked here with contract_kernel), launch and ka_launch
/// also on the converted arguments' types A... (taken by value; asked with none and with an int).
template <class B>
concept backend_kernels = requires(const B& b, const kwargs& o, const kernel<B, contract_kernel>& k,
                                   std::optional<std::int64_t> nitems, std::int64_t bound,
                                   std::array<std::int64_t, 3> groups, const launch_extras& x, const ka::geometry& g,
                                   const contract_kernel& f, const char* name) {
  /// kernel_function's compiler options: throws std::invalid_argument for names it does not know.
  { backend_traits<B>::check_compile_options(b, o) } -> std::same_as<void>;
  /// The largest work-group for launches of k on the active device (its compiler options
  /// included); ki::max_work_group_size(k) lowers it further by the kernel's launch hints.
  { backend_traits<B>::kernel_max_work_group_size(k) } -> std::same_as<std::int64_t>;
  /// The advised work-group size for nitems work-items (empty: unknown), in [1, bound].
  { backend_traits<B>::launch_configuration(k, nitems, bound) } -> std::same_as<std::int64_t>;
  /// launch(k, groups, items, extras, args...): exactly groups x items work-items, the geometry
  /// checked by ki/launch.hpp; queued on the calling thread's queue of the active device.
  /// Throws std::invalid_argument for launch options it does not know.
  { backend_traits<B>::launch(k, groups, groups, x) } -> std::same_as<void>;
  { backend_traits<B>::launch(k, groups, groups, x, 0) } -> std::same_as<void>;
  /// ka_launch<S>(b, geometry, f, name, args...): a KA launch, its geometry checked by
  /// ki::ka::kernel; S is the static work-group size (ki::ka::groupsize<...>) or
  /// ki::ka::dynamic_size; name may be null (then the kernel's type names it).
  { backend_traits<B>::template ka_launch<ka::dynamic_size>(b, g, f, name) } -> std::same_as<void>;
  { backend_traits<B>::template ka_launch<ka::dynamic_size>(b, g, f, name, 0) } -> std::same_as<void>;
};

}  // namespace detail

/// A backend: a copyable value B whose ki::backend_traits<B> provides the whole contract above.
template <class B>
concept backend = detail::backend_named<B> && detail::backend_devices<B> && detail::backend_memory<B> &&
    detail::backend_queues<B> && detail::backend_queries<B> && detail::backend_kernels<B>;

}  // namespace ki
