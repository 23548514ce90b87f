// Host-side queries that the launch rules need.
#pragma once
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>
#include <ki/launch.hpp>

namespace ki {

/// The largest work-group on the active device of b.
template <backend B>
std::int64_t max_work_group_size(const B& b) {
  return backend_traits<B>::max_work_group_size(b);
}

/// The largest work-group for launches of k (may be lower than the device's; its launch hints
/// lower it too).
template <backend B, class F>
std::int64_t max_work_group_size(const kernel<B, F>& k) {
  return detail::kernel_limit(k);
}

template <backend B>
std::array<std::int64_t, 3> max_work_group_dims(const B& b) {
  return backend_traits<B>::max_work_group_dims(b);
}

template <backend B>
std::array<std::int64_t, 3> max_num_groups(const B& b) {
  return backend_traits<B>::max_num_groups(b);
}

/// The sub-group width of kernels compiled for the active device of b.
template <backend B>
std::int64_t sub_group_size(const B& b) {
  return backend_traits<B>::sub_group_size(b);
}

template <backend B>
bool supports_unified(const B& b) {
  return backend_traits<B>::supports_unified(b);
}

/// Sub-group capabilities of the active device of b (see the spec's Sub-groups section).
template <backend B>
bool supports_subgroups(const B& b) {
  return backend_traits<B>::supports_subgroups(b);
}
template <backend B>
bool supports_linear_subgroups(const B& b) {
  return backend_traits<B>::supports_linear_subgroups(b);
}
template <backend B>
bool supports_independent_subgroups(const B& b) {
  return backend_traits<B>::supports_independent_subgroups(b);
}
template <backend B>
bool supports_partitionable_subgroups(const B& b) {
  return backend_traits<B>::supports_partitionable_subgroups(b);
}
template <backend B>
bool supports_float64(const B& b) {
  return backend_traits<B>::supports_float64(b);
}
/// Atomics on the active device: at least add and compare-exchange on 32-bit integers and float
/// in global memory (ki::atomic_* on int32/uint32/float); supports_atomics64: also on 64-bit
/// integers and double.
template <backend B>
bool supports_atomics(const B& b) {
  return backend_traits<B>::supports_atomics(b);
}
template <backend B>
bool supports_atomics64(const B& b) {
  return backend_traits<B>::supports_atomics64(b);
}
/// Whether values of type T can be shuffled on the active device of b.
template <class T, backend B>
bool supports_shuffle(const B& b) {
  return backend_traits<B>::template supports_shuffle<T>(b);
}

struct launch_configuration_result {
  std::int64_t workgroupsize;
};

/// The recommended work-group size for k over nitems work-items (empty: unknown), at most
/// max_work_group_size. Both must be positive.
template <backend B, class F>
launch_configuration_result launch_configuration(
    const kernel<B, F>& k, std::optional<std::int64_t> nitems = std::nullopt,
    std::int64_t max_work_group_size = std::numeric_limits<std::int64_t>::max()) {
  if (nitems && *nitems <= 0)
    throw std::invalid_argument("ki::launch_configuration: nitems = " + std::to_string(*nitems) + " must be positive");
  if (max_work_group_size <= 0)
    throw std::invalid_argument(
        "ki::launch_configuration: max_work_group_size = " + std::to_string(max_work_group_size) + " must be positive");
  const std::int64_t kmax = detail::kernel_limit(k);
  const std::int64_t bound = max_work_group_size < kmax ? max_work_group_size : kmax;
  if constexpr (kernel<B, F>::hints.has_required()) {  // the only size it can be launched with
    constexpr std::int64_t r = kernel<B, F>::hints.required_items();
    if (r > bound)
      throw std::invalid_argument("ki::launch_configuration: the kernel's required work-group size has " +
                                  std::to_string(r) +
                                  " work-items, more than max_work_group_size = " + std::to_string(bound));
    return launch_configuration_result{r};
  }
  // Named type, not `return {...}`: nvcc 13 (its host pass) rejects the braced form here.
  return launch_configuration_result{backend_traits<B>::launch_configuration(k, nitems, bound)};
}

}  // namespace ki
