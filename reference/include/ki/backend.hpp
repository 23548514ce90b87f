// The backend customisation point.
//
// A backend is a cheap value type (e.g. ki::reference::backend{}) that carries its
// configuration. The portable API (ki::allocate, ki::kernel_function, ki::synchronize ...) calls
// ki::backend_traits<B>, which is declared here and never defined: each backend specialises it
// in its own folder (reference/include/ki/reference/backend.hpp is the model).
//
// A specialisation provides (B is the backend type, K a ki::kernel<B, F>):
//   static constexpr const char* name;
//   static void* allocate(const B&, std::size_t bytes, bool unified);  // uninitialised
//   static void free(const B&, void*) noexcept;
//   static void copy(const B&, void* dst, const void* src, std::size_t bytes);
//       // queued in order; a host source has been read when it returns
//   static void synchronize(const B&);                       // rethrows failed launches
//   static bool supports_unified(const B&);
//   static bool supports_atomics(const B&), supports_atomics64(const B&), supports_float64(const B&);
//   static bool supports_subgroups(const B&), supports_linear_subgroups(const B&),
//               supports_independent_subgroups(const B&), supports_partitionable_subgroups(const B&);
//   template <class T> static bool supports_shuffle(const B&);
//   static std::int64_t max_work_group_size(const B&);
//   static std::array<std::int64_t, 3> max_work_group_dims(const B&);
//   static std::array<std::int64_t, 3> max_num_groups(const B&);
//   static std::int64_t sub_group_size(const B&);
//   static void check_compile_options(const B&, const kwargs&);  // throws for unknown ones
//   static std::int64_t kernel_max_work_group_size(const K&);
//   static std::int64_t launch_configuration(const K&, std::optional<std::int64_t> nitems,
//                                            std::int64_t max_work_group_size);
//   static void launch(const K&, std::array<std::int64_t, 3> groups,
//                      std::array<std::int64_t, 3> items, const kwargs&, DeviceArgs... args);
#pragma once
#include <any>
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

}  // namespace ki
