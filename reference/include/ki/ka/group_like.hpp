// What a KA kernel may call on its group and on a work-item: the concepts ki::ka::group_like and
// ki::ka::item_like (docs/ka-layer.md, "The constructs").
//
// A KA kernel is `template <class G> void operator()(G& g, args...) const`; the G a backend
// passes is its own type (ki::ka::basic_cpu_group on the CPU backends, ki/ka/group.hpp;
// ki::ka::gpu_group on CUDA and HIP, ki/ka/gpu_group.hpp), each asserted to model group_like
// where it is defined, so that the two cannot drift apart: a kernel written against these
// operations compiles for every backend. A kernel may constrain its G with the concept
// (`template <ki::ka::group_like G>`); nothing requires it.
//
// The concepts state the form of each call (its arguments and result), not its behaviour, which
// the group types' comments and the spec tests (spec_tests/15_ka_*.cpp) state. The checks are
// unevaluated: no body of the group types is instantiated with the probe callables below.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <functional>

#include <ki/ka/local_array.hpp>
#include <ki/ka/sizes.hpp>
#include <ki/macros.hpp>
#include <ki/span.hpp>
#include <ki/xyz.hpp>

namespace ki::ka {

/// A work-item inside a phase (the `i` of g.items([&](auto i) { ... })): @index in every form.
template <class I>
concept item_like = requires(const I& i) {
  { i.local() } -> std::same_as<xyz<std::int64_t>>;                  // @index(Local, Cartesian)
  { i.local_linear() } -> std::same_as<std::int64_t>;                // @index(Local, Linear)
  { i.local_tuple() } -> std::same_as<std::array<std::int64_t, 3>>;  // @index(Local, NTuple)
  { i.global() } -> std::same_as<xyz<std::int64_t>>;                 // @index(Global, Cartesian)
  { i.global_linear() } -> std::same_as<std::int64_t>;               // @index(Global, Linear)
  { i.global_tuple() } -> std::same_as<std::array<std::int64_t, 3>>;
  { i.group() } -> std::same_as<xyz<std::int64_t>>;  // @index(Group, ...)
  { i.group_linear() } -> std::same_as<std::int64_t>;
  { i.group_tuple() } -> std::same_as<std::array<std::int64_t, 3>>;
};

namespace detail {
/// The probes group_like passes for a kernel's callables and keys (never called: the concept's
/// checks are unevaluated). I is the group's item type.
template <class I>
struct phase_probe {  // g.items(..., f): f(i)
  KI_DEVICE void operator()(const I&) const {}
};
template <class I>
struct stride_probe {  // g.grid_stride(n, f): f(i, k)
  KI_DEVICE void operator()(const I&, std::int64_t) const {}
};
template <class I>
struct value_probe {  // g.reduce / g.scan(op, neutral, f): f(i) is the work-item's value
  KI_DEVICE std::int64_t operator()(const I&) const { return 0; }
};
struct key_probe {};  // g.localmem's call-site key (a class type: a fresh lambda in a kernel)
}  // namespace detail

/// The group of a KA kernel (the `g` of its operator()): every operation a kernel may call on
/// it. Per KA construct:
///   a static work-group size      G::static_size (xyz), G::static_size_linear ((0, 0, 0) and 0
///                                 for a kernel without one)
///   @groupsize(), @ndrange()      g.groupsize(), g.groupsize_linear(), g.ndrange_extents()
///   @index(Group, ...)            g.group(), g.group_linear(); g.num_groups(), g.active()
///   the work-item statements      g.items(f); g.items(count, f); g.items(local_ids, f); each
///                                 also as g.items(ki::ka::unchecked, ...); g.grid_stride(n, f),
///                                 f(i, k); the item type G::item_type models item_like
///   @synchronize                  g.synchronize(), g.synchronize(cond)
///   @groupreduce, @groupscan      g.reduce(op, neutral, f[, collective_options]) -> T;
///                                 g.scan(op, neutral, f[, collective_options]) -> s, s(i) a T
///   @localmem                     g.localmem<T, Dims...>(key) -> ki::ka::local_array<T, Dims...>;
///                                 g.localmem<T>(key, nx[, ny[, nz]]) -> ki::span<T>
///   @private                      g.private_<T, N>() -> p; p[i] a ki::span<T> of N, p(i) a T&
template <class G>
concept group_like = item_like<typename G::item_type> &&
    requires(G& g, const typename G::item_type& i, std::int64_t n, const local_ids& ids, bool cond,
             const collective_options& o) {
  { G::static_size } -> std::convertible_to<xyz<std::int64_t>>;
  { G::static_size_linear } -> std::convertible_to<std::int64_t>;
  // Group-level queries.
  { g.groupsize() } -> std::same_as<xyz<std::int64_t>>;
  { g.groupsize_linear() } -> std::same_as<std::int64_t>;
  { g.ndrange_extents() } -> std::same_as<xyz<std::int64_t>>;
  { g.group() } -> std::same_as<xyz<std::int64_t>>;
  { g.group_linear() } -> std::same_as<std::int64_t>;
  { g.num_groups() } -> std::same_as<xyz<std::int64_t>>;
  { g.active() } -> std::same_as<xyz<std::int64_t>>;
  // Phases.
  g.items(detail::phase_probe<typename G::item_type>{});
  g.items(unchecked, detail::phase_probe<typename G::item_type>{});
  g.items(n, detail::phase_probe<typename G::item_type>{});
  g.items(unchecked, n, detail::phase_probe<typename G::item_type>{});
  g.items(ids, detail::phase_probe<typename G::item_type>{});
  g.items(unchecked, ids, detail::phase_probe<typename G::item_type>{});
  g.grid_stride(n, detail::stride_probe<typename G::item_type>{});
  // Synchronisation.
  g.synchronize();
  g.synchronize(cond);
  // Collectives.
  {
    g.reduce(std::plus<>{}, std::int64_t{0}, detail::value_probe<typename G::item_type>{})
    } -> std::same_as<std::int64_t>;
  {
    g.reduce(std::plus<>{}, std::int64_t{0}, detail::value_probe<typename G::item_type>{}, o)
    } -> std::same_as<std::int64_t>;
  {
    g.scan(std::plus<>{}, std::int64_t{0}, detail::value_probe<typename G::item_type>{})(i)
    } -> std::convertible_to<std::int64_t>;
  {
    g.scan(std::plus<>{}, std::int64_t{0}, detail::value_probe<typename G::item_type>{}, o)(i)
    } -> std::convertible_to<std::int64_t>;
  // Memory.
  { g.template localmem<int, 4>(detail::key_probe{}) } -> std::same_as<local_array<int, 4>>;
  { g.template localmem<int, 4, 2>(detail::key_probe{}) } -> std::same_as<local_array<int, 4, 2>>;
  { g.template localmem<int>(detail::key_probe{}, n) } -> std::same_as<ki::span<int>>;
  { g.template localmem<int>(detail::key_probe{}, n, n, n) } -> std::same_as<ki::span<int>>;
  { g.template private_<int, 2>()[i] } -> std::same_as<ki::span<int>>;
  { g.template private_<int, 2>()(i) } -> std::same_as<int&>;
  { g.template private_<int>()(i) } -> std::same_as<int&>;
};

}  // namespace ki::ka
