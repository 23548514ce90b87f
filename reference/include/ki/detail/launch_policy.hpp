// Private: the launch policy the backends share, written once: the "maxthreads" compiler
// option, no launch options, the advised work-group size (256 work-items, whole sub-groups for
// fewer), the max_num_groups check of a launch. Portable, header-only (also compiled as host
// code by nvcc and hipcc). Messages name the backend as its other messages do
// ("ki::<backend>: ..."), backend being backend_traits<B>::name.
//
// ki::detail::launch_policy<B> gives a backend's traits the three kernel members of the
// contract (ki/backend.hpp: check_compile_options, kernel_max_work_group_size,
// launch_configuration) from its device queries; a backend inherits it, and declares its own of
// a member where its device knows better (the offload backends: the entry's limit, the
// occupancy API), built from the functions here.
#pragma once
#include <ki/detail/private.hpp>
#include <any>
#include <array>
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>

namespace ki::detail {

/// The work-group size the backends advise (launch_configuration) when nothing lowers it.
inline constexpr std::int64_t advised_work_group_size = 256;

/// An option the backend does not know: std::invalid_argument "ki::<backend>: unknown <what>
/// '<name>'" (what: "compiler option", "launch option").
[[noreturn]] inline void unknown_option(const char* backend, const char* what, const std::string& name) {
  throw std::invalid_argument(std::string("ki::") + backend + ": unknown " + what + " '" + name + "'");
}

/// The "maxthreads" compiler option (an integer >= 1), 0 when not given; the last one given
/// wins. A value that is not an integer, or not positive, throws std::invalid_argument naming
/// the backend ("ki::<backend>: compiler option ...").
inline std::int64_t maxthreads_of(const kwargs& o, const char* backend) {
  std::int64_t r = 0;
  for (const auto& kw : o) {
    if (kw.name != "maxthreads") continue;
    std::int64_t v = 0;
    if (const auto* i = std::any_cast<int>(&kw.value)) v = *i;
    else if (const auto* l = std::any_cast<long>(&kw.value)) v = *l;
    else if (const auto* ll = std::any_cast<long long>(&kw.value)) v = *ll;
    else
      throw std::invalid_argument(std::string("ki::") + backend + ": compiler option 'maxthreads' must be an integer");
    if (v < 1)
      throw std::invalid_argument(std::string("ki::") + backend +
                                  ": compiler option maxthreads = " + std::to_string(v) + " must be positive");
    r = v;
  }
  return r;
}

/// The compiler options every backend takes: "maxthreads" only (as CUDA.jl's: a bound on the
/// kernel's work-groups). In order, the first option that is not "maxthreads" is unknown_option;
/// from the first "maxthreads" on, every maxthreads value is checked (maxthreads_of).
inline void check_compile_options(const kwargs& o, const char* backend) {
  for (const auto& kw : o) {
    if (kw.name != "maxthreads") unknown_option(backend, "compiler option", kw.name);
    (void)maxthreads_of(o, backend);
  }
}

/// No backend takes launch options: the first one given is unknown_option.
inline void check_launch_options(const kwargs& o, const char* backend) {
  if (!o.empty()) unknown_option(backend, "launch option", o.front().name);
}

/// A kernel's largest work-group: `limit` (the device's, or the kernel's entry's), lowered by
/// its "maxthreads" compiler option where given.
inline std::int64_t lowered_by_maxthreads(std::int64_t limit, const kwargs& options, const char* backend) {
  const std::int64_t m = maxthreads_of(options, backend);
  return m > 0 && m < limit ? m : limit;
}

/// The advised work-group size: `preferred` work-items, or for fewer work-items (nitems) that
/// many rounded up to whole sub-groups of `sub_group_width`; at most bound.
inline std::int64_t advise_work_group_size(std::optional<std::int64_t> nitems, std::int64_t bound,
                                           std::int64_t sub_group_width,
                                           std::int64_t preferred = advised_work_group_size) {
  std::int64_t s = preferred;
  const std::int64_t w = sub_group_width;
  if (nitems && *nitems < s) s = (*nitems + w - 1) / w * w;
  return s < bound ? s : bound;
}

/// A launch's work-groups against the device's max_num_groups: std::invalid_argument
/// "ki::<backend>: launch: ..." naming the dimension and both numbers.
inline void check_num_groups(const std::array<std::int64_t, 3>& groups, const std::array<std::int64_t, 3>& max,
                             const char* backend) {
  for (int i = 0; i < 3; ++i)
    if (groups[i] > max[i])
      throw std::invalid_argument(std::string("ki::") + backend + ": launch: " + std::to_string(groups[i]) +
                                  " work-groups in dimension " + std::to_string(i) + " exceed max_num_groups[" +
                                  std::to_string(i) + "] = " + std::to_string(max[i]));
}

/// The kernel members of backend_traits<B> that follow from the shared policy and B's device
/// queries (backend_traits<B>::max_work_group_size, sub_group_size, name): a base of the traits.
template <class B>
struct launch_policy {
  /// One compiler option, "maxthreads" (check_compile_options above).
  static void check_compile_options(const B&, const kwargs& o) {
    ki::detail::check_compile_options(o, backend_traits<B>::name);
  }
  /// The active device's max_work_group_size, lowered by "maxthreads".
  template <class F>
  static std::int64_t kernel_max_work_group_size(const kernel<B, F>& k) {
    return lowered_by_maxthreads(backend_traits<B>::max_work_group_size(k.backend), k.options, backend_traits<B>::name);
  }
  /// 256 work-items, or fewer for a small launch (rounded up to whole sub-groups); at most bound.
  template <class F>
  static std::int64_t launch_configuration(const kernel<B, F>& k, std::optional<std::int64_t> nitems,
                                           std::int64_t bound) {
    return advise_work_group_size(nitems, bound, backend_traits<B>::sub_group_size(k.backend));
  }
};

}  // namespace ki::detail
