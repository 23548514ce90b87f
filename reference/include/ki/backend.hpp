// The backend customisation point.
//
// A backend is a cheap value type (e.g. ki::reference::backend{}) that carries its
// configuration. The portable API (ki::allocate, ki::kernel_function, ki::synchronize ...) calls
// ki::backend_traits<B>, which is declared here and never defined: each backend specialises it
// in its own folder (reference/include/ki/reference/backend.hpp is the model).
//
// A specialisation provides (B is the backend type, K a ki::kernel<B, F>). "Active device" and
// "queue" are the calling host thread's (the spec's task-local state); device ids are 0-based.
//   static constexpr const char* name;
//   -- devices (ki/device.hpp) --
//   static int ndevices(const B&);
//   static int device(const B&);                 // the calling thread's active device
//   static void set_device(const B&, int id);    // id is in [0, ndevices), checked by ki::set_device
//   static std::optional<bool> functional(const B&);   // empty: not implemented (the spec's missing)
//   static void versioninfo(std::ostream&, const B&);
//   static std::int64_t multiprocessor_count(const B&);  // 0: unknown
//   -- memory (ki/memory.hpp) --
//   static void* allocate(const B&, std::size_t bytes, bool unified);  // uninitialised, on the active device
//   static void free(const B&, int device, void*) noexcept;
//       // may be deferred: the memory stays valid for work the calling thread queued before
//   static void copy(const B&, void* dst, const void* src, std::size_t bytes, copy_kind);
//       // queued on the calling thread's queue of the active device; a host source has been
//       // read when it returns, a host destination is written when the queue reaches the copy
//   static std::optional<std::monostate> pagelock(const B&, const void*, std::size_t bytes);
//   -- queues (ki/queue.hpp) --
//   static void synchronize(const B&);           // rethrows failed launches
//   using event = ...;                           // copyable
//   static event record_event(const B&);
//   static void wait_event(const B&, const event&);
//   static void set_priority(const B&, priority);  // a valid enumerator, checked by ki::set_priority
//   -- queries (ki/queries.hpp) --
//   static bool supports_unified(const B&);
//   static bool supports_atomics(const B&), supports_atomics64(const B&), supports_float64(const B&);
//   static bool supports_subgroups(const B&), supports_linear_subgroups(const B&),
//               supports_independent_subgroups(const B&), supports_partitionable_subgroups(const B&);
//   template <class T> static bool supports_shuffle(const B&);
//   static std::int64_t max_work_group_size(const B&);
//   static std::array<std::int64_t, 3> max_work_group_dims(const B&);
//   static std::array<std::int64_t, 3> max_num_groups(const B&);
//   static std::int64_t sub_group_size(const B&);
//   -- kernels (ki/launch.hpp) --
//   static void check_compile_options(const B&, const kwargs&);  // throws for unknown ones
//   static std::int64_t kernel_max_work_group_size(const K&);
//   static std::int64_t launch_configuration(const K&, std::optional<std::int64_t> nitems,
//                                            std::int64_t max_work_group_size);
//   static std::int64_t max_local_memory(const B&);  // bytes per work-group, static + dynamic
//   static void launch(const K&, std::array<std::int64_t, 3> groups,
//                      std::array<std::int64_t, 3> items, const launch_extras&, DeviceArgs... args);
//       // queued on the calling thread's queue of the active device
//   -- optional --
//   template <class F> static auto native(const K&);   // the kernel object, for ki::native (ki/native.hpp)
//   auto B::argconvert(Arg&) const;   // a member of the backend value: arguments the backend itself
//                                     // converts (ki/argconvert.hpp, route 3; CPU backends: host vectors)
#pragma once
#include <any>
#include <optional>
#include <variant>
#include <string>
#include <type_traits>
#include <vector>

namespace ki {

/// Specialised by each backend; see above for what it provides.
template <class B>
struct backend_traits;

template <class B>
concept backend = std::is_copy_constructible_v<B> && requires {
  { backend_traits<B>::name } -> std::convertible_to<const char*>;
};

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

}  // namespace ki
