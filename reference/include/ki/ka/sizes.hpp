// Static work-group sizes, and the options of the group collectives (the KA layer).
//
// A kernel constructed with a static work-group size as a type,
//   ki::ka::kernel k(backend, my_kernel{}, ki::ka::groupsize<16, 16>);
// runs on a group type G that knows the size at compile time: G::static_size (a ki::xyz) and
// G::static_size_linear give the spec's `N = prod(@groupsize())` as a constant, so that
// `g.localmem<T, G::static_size_linear>` is the spec's `@localmem T (N,)`, and the CPU
// backends' phase loops of whole groups have constant trip counts. A kernel without one has
// G::static_size_linear == 0 (a localmem of size 0 does not compile).
#pragma once
#include <cstdint>

#include <ki/xyz.hpp>

namespace ki::ka {

/// A work-group size known at compile time: 1 to 3 extents, x first, each at least 1.
template <std::int64_t... D>
requires(sizeof...(D) >= 1 && sizeof...(D) <= 3 && ((D >= 1) && ...)) struct static_size {
  static constexpr bool is_static = true;
  static constexpr int rank = static_cast<int>(sizeof...(D));
  static constexpr std::int64_t extents[3] = {D...};
  static constexpr xyz<std::int64_t> value{extents[0], rank > 1 ? extents[1] : 1, rank > 2 ? extents[2] : 1};
  static constexpr std::int64_t linear = (D * ...);
};

/// No static work-group size: the size comes at launch (or is the kernel's run-time static one).
struct dynamic_size {
  static constexpr bool is_static = false;
  static constexpr int rank = 0;
  static constexpr xyz<std::int64_t> value{0, 0, 0};
  static constexpr std::int64_t linear = 0;
};

/// ki::ka::groupsize<16, 16>: the static work-group size argument of ki::ka::kernel.
template <std::int64_t... D>
inline constexpr static_size<D...> groupsize{};

/// The keyword arguments of @groupreduce and @groupscan (designated initialisers):
/// g.scan(op, neutral, f, {.inclusive = false}), g.reduce(op, neutral, f, {.groupsize = 256}).
struct collective_options {
  /// The spec's `groupsize`: an upper bound on the work-items per work-group, for kernels
  /// without a static size (0: none). ki needs no bound (its collectives use sub-group shuffles
  /// and one value per sub-group of local memory); where one is given, a larger work-group is
  /// an error naming both.
  std::int64_t groupsize = 0;
  /// @groupscan only: inclusive (the default) or exclusive.
  bool inclusive = true;
};

/// g.items(ki::ka::local_ids{...}, f): a phase over the work-items whose local linear id is
/// first + k * stride for 0 <= k < count (and that are inside the ndrange), in local linear
/// order. The masked phases real kernels write, as a loop over just those work-items on the CPU
/// and one guarded statement on a GPU:
///   if (lo <= t && t <= hi)      local_ids{.first = lo, .count = hi - lo + 1}
///   if (t > i)                   local_ids{.first = i + 1}
///   if (t >= n / 2)              local_ids{.first = n / 2}      (the second half)
///   if (t % p == 0)              local_ids{.stride = p}
/// g.items(count, f) is local_ids{.count = count}. first >= 0, count >= 0 and stride >= 1, else
/// the CPU backends report the phase's call as an invalid argument naming the value (a GPU
/// does not check).
struct local_ids {
  std::int64_t first = 0;
  std::int64_t count = INT64_MAX;  ///< (at most; the group ends first)
  std::int64_t stride = 1;
};

/// g.items(ki::ka::unchecked, f), ki::ka::foreach_index(b, space, f, ki::ka::unchecked): a phase
/// that simd_cpu runs as SIMD lanes: no bounds check of its ki::span and local memory accesses (a
/// check may throw: a loop with one is not vectorised), and its loop declared free of
/// dependences between work-items (the model's rule for a phase: no two touch one element where
/// one writes, atomics excepted), so that the compiler vectorises it. An explicit choice, never
/// made for the kernel: the reference backend keeps every check (run the kernel there, or under
/// ki-check, to find a bad index or a race), and a GPU checks none either way.
struct unchecked_t {
  explicit unchecked_t() = default;
};
inline constexpr unchecked_t unchecked{};

namespace detail {
/// g.localmem<T>(key, extents): the most call sites a kernel may have (a GPU thread keeps each
/// one's place in the launch's dynamic local memory in a table of this size; the CPU backends
/// refuse one more).
inline constexpr int max_dynamic_localmem_sites = 8;
}  // namespace detail

}  // namespace ki::ka
