// Index queries (spec: get_local_id ... get_global_size), 0-based.
//
// Each takes the integer type T (default std::int64_t) and returns the exact value modulo T:
// the value is computed in 64 bits and converted, and C++20 integer conversion is modular.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <cstdint>

#include <ki/detail/integer.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/xyz.hpp>
#if KI_GPU_CODE
#include <ki/detail/gpu/intrinsics.hpp>
#endif
#if !KI_GPU_PASS
#include <ki/detail/cpu/executor.hpp>
#endif

namespace ki {
namespace detail {
template <class T>
KI_DEVICE constexpr xyz<T> narrow(std::int64_t x, std::int64_t y, std::int64_t z) {
  return {static_cast<T>(x), static_cast<T>(y), static_cast<T>(z)};
}
}  // namespace detail

/// The index of the work-item within its work-group (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_local_id([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::narrow<T>(threadIdx.x, threadIdx.y, threadIdx.z); }
#endif
#if !KI_GPU_PASS
  const auto& l = detail::cpu::here("get_local_id", where).local_id;
  return detail::narrow<T>(l.x, l.y, l.z);
#endif
}

/// The index of the work-group within the launch (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_group_id([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::narrow<T>(blockIdx.x, blockIdx.y, blockIdx.z); }
#endif
#if !KI_GPU_PASS
  (void)detail::cpu::here("get_group_id", where);
  const auto& g = detail::cpu::current_group->group_id;
  return detail::narrow<T>(g.x, g.y, g.z);
#endif
}

/// The number of work-items in a work-group.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_local_size([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::narrow<T>(blockDim.x, blockDim.y, blockDim.z); }
#endif
#if !KI_GPU_PASS
  (void)detail::cpu::here("get_local_size", where);
  const auto& s = detail::cpu::current_group->local_size;
  return detail::narrow<T>(s.x, s.y, s.z);
#endif
}

/// The number of work-groups in the launch.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_num_groups([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return detail::narrow<T>(gridDim.x, gridDim.y, gridDim.z); }
#endif
#if !KI_GPU_PASS
  (void)detail::cpu::here("get_num_groups", where);
  const auto& n = detail::cpu::current_group->num_groups;
  return detail::narrow<T>(n.x, n.y, n.z);
#endif
}

/// group_id * local_size + local_id per dimension (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_global_id([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    return detail::narrow<T>(std::int64_t(blockIdx.x) * blockDim.x + threadIdx.x,
                             std::int64_t(blockIdx.y) * blockDim.y + threadIdx.y,
                             std::int64_t(blockIdx.z) * blockDim.z + threadIdx.z);
  }
#endif
#if !KI_GPU_PASS
  const auto& it = detail::cpu::here("get_global_id", where);
  const auto& base = detail::cpu::current_group->global_base;  // group_id * local_size
  return detail::narrow<T>(base.x + it.local_id.x, base.y + it.local_id.y, base.z + it.local_id.z);
#endif
}

/// local_size * num_groups per dimension: for an ndrange launch, the ndrange padded to whole
/// work-groups.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline xyz<T> get_global_size([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    return detail::narrow<T>(std::int64_t(gridDim.x) * blockDim.x, std::int64_t(gridDim.y) * blockDim.y,
                             std::int64_t(gridDim.z) * blockDim.z);
  }
#endif
#if !KI_GPU_PASS
  (void)detail::cpu::here("get_global_size", where);
  const auto& g = *detail::cpu::current_group;
  return detail::narrow<T>(g.num_groups.x * g.local_size.x, g.num_groups.y * g.local_size.y,
                           g.num_groups.z * g.local_size.z);
#endif
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
