#include "layout.hpp"

#include <algorithm>
#include <numeric>

namespace ki::reference::detail {
namespace {

std::uint64_t splitmix64(std::uint64_t& s) {
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

}  // namespace

sub_group_layout make_layout(const profile& p, xyz<std::int64_t> local) {
  sub_group_layout l;
  const std::int64_t n = local.x * local.y * local.z, w = p.sub_group_width;
  l.width = w;
  const bool promised = p.linear_subgroups && ((local.y == 1 && local.z == 1) || local.x % w == 0);
  l.linear = promised || (p.linear_subgroups && p.unpromised_layout == layout::linear);
  l.sub_group.assign(static_cast<std::size_t>(n), 0);
  l.lane.assign(static_cast<std::size_t>(n), 0);

  std::vector<std::int64_t> order(static_cast<std::size_t>(n));  // work-items in slot order
  std::iota(order.begin(), order.end(), 0);
  if (l.linear) {
    l.count = (n + w - 1) / w;
    l.size.assign(static_cast<std::size_t>(l.count), static_cast<std::int32_t>(w));
    l.size.back() = static_cast<std::int32_t>(n - (l.count - 1) * w);
  } else {
    // Adversarial: more sub-groups than needed (so several are partial), random sizes, and
    // work-items assigned to slots in a random order. Deterministic in (seed, shape, width).
    std::uint64_t s = p.layout_seed ^ (static_cast<std::uint64_t>(local.x) * 0x100000001B3ull) ^
                      (static_cast<std::uint64_t>(local.y) << 20) ^ (static_cast<std::uint64_t>(local.z) << 40) ^
                      (static_cast<std::uint64_t>(w) << 56);
    const std::int64_t minimum = (n + w - 1) / w;
    const std::int64_t extra = n > minimum ? 1 + static_cast<std::int64_t>(splitmix64(s) % 2) : 0;
    l.count = std::min(n, minimum + extra);
    l.size.assign(static_cast<std::size_t>(l.count), 1);
    for (std::int64_t left = n - l.count; left > 0;) {
      auto& sz = l.size[static_cast<std::size_t>(splitmix64(s) % static_cast<std::uint64_t>(l.count))];
      if (sz < w) ++sz, --left;
    }
    for (std::int64_t i = n - 1; i > 0; --i)
      std::swap(order[static_cast<std::size_t>(i)],
                order[static_cast<std::size_t>(splitmix64(s) % static_cast<std::uint64_t>(i + 1))]);
  }
  l.item.assign(static_cast<std::size_t>(l.count * w), -1);
  std::size_t k = 0;
  for (std::int64_t sg = 0; sg < l.count; ++sg)
    for (std::int32_t lane = 0; lane < l.size[static_cast<std::size_t>(sg)]; ++lane) {
      const std::int64_t it = order[k++];
      l.sub_group[static_cast<std::size_t>(it)] = static_cast<std::int32_t>(sg);
      l.lane[static_cast<std::size_t>(it)] = lane;
      l.item[static_cast<std::size_t>(sg * w + lane)] = static_cast<std::int32_t>(it);
    }
  return l;
}

}  // namespace ki::reference::detail
