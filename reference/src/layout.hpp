// Private: which work-items form which sub-group (the layout), per work-group shape.
#pragma once
#include <cstdint>
#include <vector>

#include <ki/reference/backend.hpp>
#include <ki/xyz.hpp>

namespace ki::reference::detail {

struct sub_group_layout {
  std::int64_t width = 1;  ///< W
  std::int64_t count = 1;  ///< number of sub-groups
  bool linear = true;
  std::vector<std::int32_t> sub_group;  ///< per work-item (linear local id)
  std::vector<std::int32_t> lane;       ///< per work-item
  std::vector<std::int32_t> size;       ///< per sub-group: its work-items, lanes 0..size-1
  std::vector<std::int32_t> item;       ///< [sub_group * W + lane] -> work-item, or -1

  std::int32_t item_at(std::int64_t sg, std::int64_t l) const { return item[static_cast<std::size_t>(sg * width + l)]; }
};

/// The layout the profile gives a work-group of this shape: linear where the profile promises
/// it (1-D work-groups, or x extent a multiple of W), else the profile's unpromised layout; an
/// adversarial layout scatters the lanes with a seed and has several partial sub-groups.
sub_group_layout make_layout(const profile& p, xyz<std::int64_t> local_size);

}  // namespace ki::reference::detail
