// Private: the spec's launch-geometry rules, shared by every backend.
//
// Turns the launch keywords into (groups, items) per dimension, or "launch nothing", and throws
// std::invalid_argument naming the bad value for everything the spec calls an ArgumentError.
// Backends then validate the number of groups themselves (max_num_groups).
#pragma once
#include <ki/detail/private.hpp>
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>

#include <ki/dims.hpp>

namespace ki::detail {

struct geometry {
  std::array<std::int64_t, 3> groups{1, 1, 1};
  std::array<std::int64_t, 3> items{1, 1, 1};
  bool empty = false;  ///< a zero in ndrange or numgroups: launch nothing
};

inline constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

[[noreturn]] inline void bad_launch(const std::string& what) { throw std::invalid_argument("ki: launch: " + what); }

inline void check_non_negative(const dims& d, const char* name) {
  for (int i = 0; i < d.rank(); ++i)
    if (d.too_large(i) || d[i] < 0)
      bad_launch(std::string(name) + "[" + std::to_string(i) + "] = " + d.value_str(i) +
                 (d.too_large(i) ? " does not fit std::int64_t" : " is negative"));
}

/// Checks a work-group size against the device and kernel limits.
inline void check_group_size(const std::array<std::int64_t, 3>& items, const char* what, std::int64_t kernel_max,
                             const std::array<std::int64_t, 3>& max_dims) {
  std::int64_t total = 1;
  for (int i = 0; i < 3; ++i) {
    if (items[i] > max_dims[i])
      bad_launch(std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(items[i]) +
                 " exceeds max_work_group_dims[" + std::to_string(i) + "] = " + std::to_string(max_dims[i]));
    total *= items[i];  // cannot overflow: each is at most max_dims[i]
  }
  if (total > kernel_max)
    bad_launch(std::string(what) + " has " + std::to_string(total) +
               " work-items, more than max_work_group_size(kernel) = " + std::to_string(kernel_max));
}

/// `config(nitems, bound)` is the backend's launch_configuration; nitems is empty when unknown.
template <class Config>
geometry resolve_geometry(const dims& numgroups, const dims& workgroupsize, const dims& ndrange,
                          std::int64_t max_work_group_size, std::int64_t kernel_max,
                          const std::array<std::int64_t, 3>& max_dims, Config&& config) {
  if (ndrange.given() && numgroups.given())
    bad_launch("ndrange = " + ndrange.str() + " and numgroups = " + numgroups.str() + " are mutually exclusive");
  if (max_work_group_size <= 0)
    bad_launch("max_work_group_size = " + std::to_string(max_work_group_size) + " must be positive");
  check_non_negative(numgroups, "numgroups");
  check_non_negative(ndrange, "ndrange");
  for (int i = 0; i < workgroupsize.rank(); ++i)
    if (workgroupsize.too_large(i) || workgroupsize[i] <= 0)
      bad_launch("workgroupsize[" + std::to_string(i) + "] = " + workgroupsize.value_str(i) +
                 (workgroupsize.too_large(i) ? " does not fit std::int64_t" : " must be positive"));

  geometry g;
  const dims& extent = ndrange.given() ? ndrange : numgroups;
  for (int i = 0; i < 3; ++i)
    if (extent[i] == 0) g.empty = true;

  if (workgroupsize.given() || !ndrange.given()) {
    for (int i = 0; i < 3; ++i) g.items[i] = workgroupsize[i];
    check_group_size(g.items, "workgroupsize", kernel_max, max_dims);
  } else if (!g.empty) {
    // ndrange alone: ask the backend for a total size, then fill x first, then y, then z.
    std::int64_t nitems = 1;
    for (int i = 0; i < 3; ++i)
      nitems = (nitems > int64_max / ndrange[i]) ? int64_max : nitems * ndrange[i];  // saturate
    const std::int64_t bound = max_work_group_size < kernel_max ? max_work_group_size : kernel_max;
    const std::int64_t s = config(std::optional<std::int64_t>(nitems), bound);
    if (s <= 0 || s > bound)
      throw std::logic_error("ki: the backend's launch_configuration returned " + std::to_string(s) + ", outside 1.." +
                             std::to_string(bound));
    std::int64_t left = s;
    for (int i = 0; i < 3; ++i) {
      std::int64_t e = left;
      if (e > ndrange[i]) e = ndrange[i];
      if (e > max_dims[i]) e = max_dims[i];
      g.items[i] = e;
      left /= e;
    }
  }

  for (int i = 0; i < 3; ++i) {
    if (ndrange.given()) {
      const std::int64_t n = ndrange[i], w = g.items[i];
      g.groups[i] = n / w + (n % w != 0);  // cld without overflow
    } else {
      g.groups[i] = numgroups[i];
    }
    if (g.groups[i] != 0 && g.items[i] > int64_max / g.groups[i])
      bad_launch("dimension " + std::to_string(i) + " has " + std::to_string(g.groups[i]) + " work-groups of " +
                 std::to_string(g.items[i]) + " work-items: the number of work-items does not fit std::int64_t");
  }
  // And all of them together: the runtimes count a launch's work-groups and work-items in one
  // std::int64_t (max_num_groups bounds each dimension, not their product: simd_cpu's limits do
  // not keep it below 2^63).
  std::int64_t total = 1;
  for (int i = 0; i < 3 && !g.empty; ++i)
    if (__builtin_mul_overflow(total, g.groups[i] * g.items[i], &total))
      bad_launch(std::to_string(g.groups[0]) + " x " + std::to_string(g.groups[1]) + " x " +
                 std::to_string(g.groups[2]) + " work-groups of " + std::to_string(g.items[0]) + " x " +
                 std::to_string(g.items[1]) + " x " + std::to_string(g.items[2]) +
                 " work-items: the launch's number of work-items does not fit std::int64_t");
  return g;
}

}  // namespace ki::detail
