// Launch hints (Metal's maxthreads= and minthreads=(x, y, z) of @metal): what a kernel tells the
// device compiler about the work-groups it will be launched with.
//
//   struct blur {
//     static constexpr ki::launch_hints hints{.maxthreads = 256};
//     KI_DEVICE void operator()(...) const;
//   };
//   auto k = ki::kernel_function(b, ki::with_hints<ki::launch_hints{.required_size = {16, 16, 1}}>(f));
//
// - maxthreads = n: work-groups have at most n work-items. On CUDA and HIP the kernel's entry is
//   compiled with __launch_bounds__(n) (the compiler may then give each thread more registers);
//   everywhere max_work_group_size(kernel) is at most n, and a launch with more is rejected.
// - required_size = {x, y, z}: every launch has exactly that work-group size (Metal's
//   required_threads_per_threadgroup). A launch that gives no workgroupsize gets it; one that
//   gives another is rejected with std::invalid_argument naming both, on every backend, before
//   anything runs. On CUDA and HIP the entry gets __launch_bounds__(x * y * z).
// Hints are part of the kernel's type (the device compiler needs them), so a lambda takes them
// through ki::with_hints. The compiler option "maxthreads" (kernel_function's options) is the
// run-time bound of the same name; both apply.
#pragma once
#include <array>
#include <cstdint>
#include <type_traits>
#include <utility>

#include <ki/argconvert.hpp>
#include <ki/macros.hpp>

namespace ki {

/// What a kernel promises about its work-groups; zeros mean "no hint".
struct launch_hints {
  /// At most this many work-items per work-group (0: no bound).
  std::int64_t maxthreads = 0;
  /// Exactly this work-group size, x, y, z ({0, 0, 0}: any).
  std::array<std::int64_t, 3> required_size{};

  constexpr bool has_required() const { return required_size[0] != 0; }
  /// Whether any hint is given.
  constexpr bool any() const { return maxthreads != 0 || has_required(); }
  friend constexpr bool operator==(const launch_hints&, const launch_hints&) = default;
  constexpr std::int64_t required_items() const { return required_size[0] * required_size[1] * required_size[2]; }
  /// The bound the device compiler is given: the smaller of maxthreads and the required size's
  /// work-items (0: none).
  constexpr std::int64_t bound() const {
    const std::int64_t r = has_required() ? required_items() : 0;
    if (maxthreads == 0) return r;
    return r == 0 || maxthreads < r ? maxthreads : r;
  }
};

namespace detail {
/// A hint set that makes sense, checked at compile time (a static_assert names the field).
consteval bool valid_hints(const launch_hints& h) {
  if (h.maxthreads < 0) return false;
  const auto& r = h.required_size;
  const bool none = r[0] == 0 && r[1] == 0 && r[2] == 0;
  return none || (r[0] > 0 && r[1] > 0 && r[2] > 0);
}
template <class F>
consteval launch_hints hints_of_type() {
  if constexpr (requires { F::hints; }) {
    constexpr launch_hints h = F::hints;
    static_assert(valid_hints(h),
                  "ki::launch_hints: maxthreads must be >= 0 and required_size all positive (or all 0)");
    static_assert(h.maxthreads == 0 || !h.has_required() || h.required_items() <= h.maxthreads,
                  "ki::launch_hints: required_size has more work-items than maxthreads");
    return h;
  } else {
    return launch_hints{};
  }
}
}  // namespace detail

/// The hints of kernel type F: F::hints where it declares them, none otherwise.
template <class F>
inline constexpr launch_hints hints_of = detail::hints_of_type<std::remove_cvref_t<F>>();

/// F with the hints (maxthreads, required x, y, z) (for kernels that cannot declare a static
/// member, e.g. lambdas): ki::with_hints<ki::launch_hints{...}>(f). A kernel like any other:
/// trivially copyable when F is, called as F. (Integers, not a launch_hints, as template
/// arguments: nvcc's generated host code cannot spell a class-type template argument.)
template <std::int64_t MaxThreads, std::int64_t X, std::int64_t Y, std::int64_t Z, class F>
struct hinted {
  static constexpr launch_hints hints{MaxThreads, {X, Y, Z}};
  F f;
  template <class... A>
  KI_DEVICE decltype(auto) operator()(A&&... a) const {
    return f(std::forward<A>(a)...);
  }
  /// The device form (ki::argconvert, as for the kernel callable): F's device form with the same
  /// hints, where F has a conversion of its own (else hinted passes on as it is). (A member: a
  /// friend function named argconvert would clash with the ki::argconvert object.)
  template <class B>
  requires detail::custom_argconvert<B, F&>
  auto argconvert(const B& b) & {
    return hinted<MaxThreads, X, Y, Z, std::remove_cvref_t<decltype(ki::argconvert(b, f))>>{ki::argconvert(b, f)};
  }
  template <class B>
  requires detail::custom_argconvert<B, const F&>
  auto argconvert(const B& b) const& {
    return hinted<MaxThreads, X, Y, Z, std::remove_cvref_t<decltype(ki::argconvert(b, f))>>{ki::argconvert(b, f)};
  }
};

template <launch_hints H, class F>
constexpr auto with_hints(F&& f) {
  return hinted<H.maxthreads, H.required_size[0], H.required_size[1], H.required_size[2], std::decay_t<F>>{
      std::forward<F>(f)};
}

}  // namespace ki
