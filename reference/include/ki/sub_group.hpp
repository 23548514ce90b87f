// Sub-group queries (spec: get_sub_group_size ... get_sub_group_local_id), 0-based.
//
// The work-items of a work-group are split into sub-groups of at most the device's width
// (warp / wavefront size). This header has the queries; the communication functions (shuffles,
// votes, collectives) come with the sub-group issue. The layout is linear on every backend so
// far: the item with linear local id lin (x fastest) is in sub-group lin / W at lane lin % W,
// and only the last sub-group can be partial.
#pragma once
#include <cstdint>

#include <ki/detail/integer.hpp>
#include <ki/macros.hpp>
#if KI_GPU_PASS
#include <ki/detail/gpu.hpp>
#else
#include <ki/detail/cpu.hpp>
#endif

namespace ki {
namespace detail {
struct sub_group_position {
  std::int64_t width, id, lane, size, count;
};
KI_DEVICE inline sub_group_position sub_group_here(const char* what) {
#if KI_GPU_PASS
  (void)what;
  const std::int64_t w = warpSize, lin = gpu::local_linear(), n = gpu::local_count();
#else
  const auto& it = cpu::here(what);
  const std::int64_t w = it.group->sub_group_width, lin = it.local_linear, n = it.group->items;
#endif
  const std::int64_t id = lin / w;
  const std::int64_t rest = n - id * w;
  return {w, id, lin % w, rest < w ? rest : w, (n + w - 1) / w};
}
}  // namespace detail

/// The number of work-items in the caller's sub-group (at most the width).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_size() {
  return static_cast<T>(detail::sub_group_here("get_sub_group_size").size);
}

/// The sub-group width (warp / wavefront size); sub_group_size(backend) on the host.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_max_sub_group_size() {
#if KI_GPU_PASS
  return static_cast<T>(warpSize);
#else
  return static_cast<T>(detail::cpu::here("get_max_sub_group_size").group->sub_group_width);
#endif
}

/// The number of sub-groups in the work-group.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_num_sub_groups() {
  return static_cast<T>(detail::sub_group_here("get_num_sub_groups").count);
}

/// The index of the caller's sub-group within the work-group (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_id() {
  return static_cast<T>(detail::sub_group_here("get_sub_group_id").id);
}

/// The caller's lane within its sub-group (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_local_id() {
  return static_cast<T>(detail::sub_group_here("get_sub_group_local_id").lane);
}

}  // namespace ki
