// Sub-groups (spec: get_sub_group_size ... sub_group_exclusive_scan), 0-based.
//
// The work-items of a work-group are split into sub-groups of at most the device's width W
// (warp / wavefront size); a work-item's lane is its index in its sub-group. Which work-items
// form a sub-group is unspecified unless supports_linear_subgroups(backend) promises the
// linear layout (1-D work-groups, or x extent a multiple of W): then the item with linear local
// id lin (x fastest) is in sub-group lin / W at lane lin % W.
//
// Communication functions must be executed by all work-items of the sub-group together (with a
// width: of the caller's segment of `width` consecutive lanes, where the device supports
// partitionable sub-groups). They do not synchronize memory (sub_group_barrier does). Values of
// any trivially copyable type can be exchanged. Lanes without a work-item (in a partial
// sub-group) read as unspecified values; the reference backend returns a poison pattern and
// warns. Misuse (divergence, different offsets, a bad width) is an error at synchronize.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <concepts>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <cstring>
#include <functional>
#include <new>
#include <tuple>
#include <utility>

#include <ki/detail/integer.hpp>
#include <ki/detail/shuffleable.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#if KI_GPU_CODE
#include <ki/detail/gpu/sub_group.hpp>
#endif
#if !KI_GPU_PASS
#include <ki/detail/cpu/executor.hpp>
#include <ki/detail/type_name.hpp>
#endif

namespace ki {
namespace detail {
#if !KI_GPU_PASS
inline const cpu::item_state& sub_group_item(const char* what, const source_location& where) {
  return cpu::here(what, where);
}
#endif
}  // namespace detail

// --- queries --------------------------------------------------------------------------------

/// The number of work-items in the caller's sub-group (at most the width).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_size([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    const std::int64_t w = warpSize, id = detail::gpu::local_linear() / w, rest = detail::gpu::local_count() - id * w;
    return static_cast<T>(rest < w ? rest : w);
  }
#endif
#if !KI_GPU_PASS
  return static_cast<T>(detail::sub_group_item("get_sub_group_size", where).sub_group_size);
#endif
}

/// The sub-group width (warp / wavefront size); sub_group_size(backend) on the host.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_max_sub_group_size([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return static_cast<T>(warpSize); }
#endif
#if !KI_GPU_PASS
  return static_cast<T>(detail::sub_group_item("get_max_sub_group_size", where).group->sub_group_width);
#endif
}

/// The number of sub-groups in the work-group: at least cld(items, width), and larger where
/// several sub-groups are partial.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_num_sub_groups([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return static_cast<T>((detail::gpu::local_count() + warpSize - 1) / warpSize); }
#endif
#if !KI_GPU_PASS
  return static_cast<T>(detail::sub_group_item("get_num_sub_groups", where).group->num_sub_groups);
#endif
}

/// The index of the caller's sub-group within the work-group (0-based).
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_id([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return static_cast<T>(detail::gpu::local_linear() / warpSize); }
#endif
#if !KI_GPU_PASS
  return static_cast<T>(detail::sub_group_item("get_sub_group_id", where).sub_group_id);
#endif
}

/// The caller's lane within its sub-group (0-based). It does not depend on which work-items
/// are active.
template <detail::query_integer T = std::int64_t>
KI_DEVICE inline T get_sub_group_local_id([[maybe_unused]] source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH { return static_cast<T>(detail::gpu::local_linear() % warpSize); }
#endif
#if !KI_GPU_PASS
  return static_cast<T>(detail::sub_group_item("get_sub_group_local_id", where).sub_group_lane);
#endif
}

// --- communication functions ----------------------------------------------------------------

namespace detail {
template <class T>
inline constexpr bool always_false_v = false;

template <class T>
concept shuffle_value = std::is_trivially_copyable_v<T>;

template <class I>
concept lane_integer = std::integral<I> && !std::same_as<std::remove_cv_t<I>, bool>;

#if !KI_GPU_PASS
/// Runs one communication function on the CPU executor. The integer argument is kept exactly
/// (offsets are compared before any narrowing: 2^32 + 1 is not 1).
template <class I>
inline void set_arg(cpu::collective& c, I v) {
  if constexpr (std::is_unsigned_v<I> && sizeof(I) >= sizeof(std::int64_t)) {
    c.arg_huge = v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  }
  c.arg = static_cast<std::int64_t>(v);
}
/// A width as passed (checked by the executor): none, or its value, exactly.
struct width_arg {
  std::int64_t value = 0;
  bool given = false;
  bool huge = false;  ///< an unsigned value beyond int64 (its bits are in value)
};
template <class W>
inline width_arg width_value(W w) {
  if constexpr (std::is_unsigned_v<W> && sizeof(W) >= sizeof(std::int64_t))
    if (w > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
      return {static_cast<std::int64_t>(w), true, true};
  return {static_cast<std::int64_t>(w), true, false};
}
inline void set_width(cpu::collective& c, width_arg w) {
  c.width = w.value;
  c.width_given = w.given;
  c.width_huge = w.huge;
}
/// Hands the call to the running work-item's executor (outside a kernel: the logic_error names
/// the function, from its row of the table).
inline void run(cpu::collective& c) { cpu::exec(cpu::op(c.kind).name, c.where).collective(c); }

template <class T, class Op>
void combine(const void* op, const void* a, const void* b, void* out) {
  alignas(T) unsigned char x[sizeof(T)], y[sizeof(T)];
  std::memcpy(x, a, sizeof(T));
  std::memcpy(y, b, sizeof(T));
  const T r = (*static_cast<const Op*>(op))(*std::launder(reinterpret_cast<const T*>(x)),
                                            *std::launder(reinterpret_cast<const T*>(y)));
  std::memcpy(out, &r, sizeof(T));
}

/// Whether two values of T (as bytes) are the same value. Bytes that differ can be padding:
/// then T's operator== decides, and without one the values count as the same (an init that
/// differs only there must not be reported; one that differs elsewhere then goes unnoticed).
template <class T>
bool same_value(const void* a, const void* b) {
  if (std::memcmp(a, b, sizeof(T)) == 0) return true;
  if constexpr (std::has_unique_object_representations_v<T>) {
    return false;  // every byte belongs to the value
  } else if constexpr (std::equality_comparable<T>) {
    alignas(T) unsigned char x[sizeof(T)], y[sizeof(T)];
    std::memcpy(x, a, sizeof(T));
    std::memcpy(y, b, sizeof(T));
    return *std::launder(reinterpret_cast<const T*>(x)) == *std::launder(reinterpret_cast<const T*>(y));
  } else {
    return true;
  }
}

/// Whether two operators of type Op passed by different work-items have the same state: empty
/// ones always; with an operator== by it; an aggregate (a plain struct of values) by its value.
/// Anything else (a closure: its by-reference captures differ per work-item even when its
/// behaviour does not) is not compared.
template <class Op>
bool same_op(const void* a, const void* b) {
  if constexpr (std::is_empty_v<Op>) {
    return true;
  } else if constexpr (std::equality_comparable<Op>) {
    return *static_cast<const Op*>(a) == *static_cast<const Op*>(b);
  } else if constexpr (std::is_aggregate_v<Op> && std::is_trivially_copyable_v<Op>) {
    return same_value<Op>(a, b);
  } else {
    return true;
  }
}

template <class T, class I>
inline T shuffle(cpu::collective_kind k, const T& v, I arg, width_arg width, const source_location& where) {
  alignas(T) unsigned char out[sizeof(T)];
  cpu::collective c{k, where};
  set_arg(c, arg);
  set_width(c, width);
  c.size = sizeof(T);
  c.value = &v;
  c.result = out;
  c.type_name = type_name<T>();  // not typeid: typeid(_Float16) does not link with GCC 12
  run(c);
  return *std::launder(reinterpret_cast<T*>(out));
}

inline bool vote(cpu::collective_kind k, bool pred, width_arg width, const source_location& where) {
  bool out = false;
  cpu::collective c{k, where};
  set_width(c, width);
  c.size = sizeof(bool);
  c.value = &pred;
  c.result = &out;
  c.type_name = "bool";
  run(c);
  return out;
}

inline std::uint64_t ballot(bool pred, width_arg width, const source_location& where) {
  std::uint64_t out = 0;
  cpu::collective c{cpu::collective_kind::ballot, where};
  set_width(c, width);
  c.size = sizeof(bool);
  c.value = &pred;
  c.result = &out;
  c.type_name = "bool";
  run(c);
  return out;
}

template <class T, class Op>
inline T fold(cpu::collective_kind k, const Op& op, const T& v, const T* init, width_arg width,
              const source_location& where) {
  static_assert(std::is_convertible_v<std::invoke_result_t<const Op&, const T&, const T&>, T>,
                "ki::sub_group_reduce/scan: op(a, b) must accept two values of the type and return one");
  alignas(T) unsigned char out[sizeof(T)];
  cpu::collective c{k, where};
  set_width(c, width);
  c.size = sizeof(T);
  c.value = &v;
  c.result = out;
  c.combine = &combine<T, Op>;
  c.op = &op;
  c.init = init;
  c.same_init = &same_value<T>;
  c.type_name = type_name<T>();  // not typeid: typeid(_Float16) does not link with GCC 12
  c.op_name = type_name<Op>();
  c.same_op = &same_op<Op>;
  run(c);
  return *std::launder(reinterpret_cast<T*>(out));
}

inline void sub_group_sync(width_arg width, const source_location& where) {
  cpu::collective c{cpu::collective_kind::sub_group_barrier, where};
  set_width(c, width);
  c.type_name = "";
  run(c);
}
#endif
}  // namespace detail

// Each function body is one expression per pass: the GPU one (detail/gpu/sub_group.hpp) or
// the CPU executor's.
#if KI_GPU_PASS
#define KI_DETAIL_SUB_GROUP_BODY(gpu_expr, cpu_expr) return gpu_expr;
#elif KI_GPU_EMULATION
#define KI_DETAIL_SUB_GROUP_BODY(gpu_expr, cpu_expr) \
  KI_GPU_BRANCH {                                    \
    KI_GPU_USER_CALL(where);                         \
    return gpu_expr;                                 \
  }                                                  \
  return cpu_expr;
#else
#define KI_DETAIL_SUB_GROUP_BODY(gpu_expr, cpu_expr) return cpu_expr;
#endif

// Shuffles. Without a width: `lane` is a lane of the sub-group (no wrap); shfl_down/shfl_up
// return the caller's own value where the source lane is past the sub-group width (or before
// lane 0); shfl_xor's mask must be in [0, width). With a width (a power of two <= the sub-group
// width): within the caller's segment of `width` lanes, CUDA's rules: shfl reads lane
// `lane mod width` of the segment, shfl_down/up return the caller's own value where the source
// is outside the segment, shfl_xor's mask must be in [0, width). offset and mask must be the
// same for all work-items that execute the call together; lane may differ.

template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T shfl(T v, I lane, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::shfl(v, lane, 0),
                           detail::shuffle(detail::cpu::collective_kind::shfl, v, lane, {}, where))
}
template <detail::shuffle_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl(T v, I lane, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::shfl(v, lane, detail::gpu::width_of(width)),
      detail::shuffle(detail::cpu::collective_kind::shfl, v, lane, detail::width_value(width), where))
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T shfl_down(T v, I offset, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::shfl_down(v, offset, 0),
                           detail::shuffle(detail::cpu::collective_kind::shfl_down, v, offset, {}, where))
}
template <detail::shuffle_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_down(T v, I offset, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::shfl_down(v, offset, detail::gpu::width_of(width)),
      detail::shuffle(detail::cpu::collective_kind::shfl_down, v, offset, detail::width_value(width), where))
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T shfl_up(T v, I offset, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::shfl_up(v, offset, 0),
                           detail::shuffle(detail::cpu::collective_kind::shfl_up, v, offset, {}, where))
}
template <detail::shuffle_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_up(T v, I offset, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::shfl_up(v, offset, detail::gpu::width_of(width)),
      detail::shuffle(detail::cpu::collective_kind::shfl_up, v, offset, detail::width_value(width), where))
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T shfl_xor(T v, I mask, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::shfl_xor(v, mask, 0),
                           detail::shuffle(detail::cpu::collective_kind::shfl_xor, v, mask, {}, where))
}
template <detail::shuffle_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_xor(T v, I mask, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::shfl_xor(v, mask, detail::gpu::width_of(width)),
      detail::shuffle(detail::cpu::collective_kind::shfl_xor, v, mask, detail::width_value(width), where))
}

// Shuffles of std::pair / std::tuple (not trivially copyable): element by element, in order,
// each a shuffle at the caller's site with the same lane / offset / mask and width (nested
// tuples recursively). The result is the tuple of the elements' results.
namespace detail {
template <class T, class F>
KI_DEVICE T element_wise(const T& v, const F& f) {
  // Braced: the elements' shuffles run in order (all work-items in the same order).
  return [&]<std::size_t... K>(std::index_sequence<K...>) { return T{f(std::get<K>(v))...}; }
  (std::make_index_sequence<std::tuple_size_v<T>>{});
}
}  // namespace detail

template <detail::element_wise_value T, detail::lane_integer I>
KI_DEVICE T shfl(const T& v, I lane, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl(e, lane, where); });
}
template <detail::element_wise_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl(const T& v, I lane, W width, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl(e, lane, width, where); });
}
template <detail::element_wise_value T, detail::lane_integer I>
KI_DEVICE T shfl_down(const T& v, I offset, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_down(e, offset, where); });
}
template <detail::element_wise_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_down(const T& v, I offset, W width, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_down(e, offset, width, where); });
}
template <detail::element_wise_value T, detail::lane_integer I>
KI_DEVICE T shfl_up(const T& v, I offset, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_up(e, offset, where); });
}
template <detail::element_wise_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_up(const T& v, I offset, W width, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_up(e, offset, width, where); });
}
template <detail::element_wise_value T, detail::lane_integer I>
KI_DEVICE T shfl_xor(const T& v, I mask, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_xor(e, mask, where); });
}
template <detail::element_wise_value T, detail::lane_integer I, detail::lane_integer W>
KI_DEVICE T shfl_xor(const T& v, I mask, W width, source_location where = source_location::current()) {
  return detail::element_wise(v, [&](const auto& e) { return shfl_xor(e, mask, width, where); });
}

// Votes: the same result for every work-item of the sub-group (or segment). Ballot bit i is
// lane i (relative to the segment with a width); lanes without a work-item are 0.

template <std::same_as<bool> P>
KI_DEVICE bool sub_group_any(P pred, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::any(pred, 0), detail::vote(detail::cpu::collective_kind::any, pred, {}, where))
}
template <std::same_as<bool> P, detail::lane_integer W>
KI_DEVICE bool sub_group_any(P pred, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::any(pred, detail::gpu::width_of(width)),
                           detail::vote(detail::cpu::collective_kind::any, pred, detail::width_value(width), where))
}
template <std::same_as<bool> P>
KI_DEVICE bool sub_group_all(P pred, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::all(pred, 0), detail::vote(detail::cpu::collective_kind::all, pred, {}, where))
}
template <std::same_as<bool> P, detail::lane_integer W>
KI_DEVICE bool sub_group_all(P pred, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::all(pred, detail::gpu::width_of(width)),
                           detail::vote(detail::cpu::collective_kind::all, pred, detail::width_value(width), where))
}
template <std::same_as<bool> P>
KI_DEVICE std::uint64_t sub_group_ballot(P pred, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::ballot(pred, 0), detail::ballot(pred, {}, where))
}
template <std::same_as<bool> P, detail::lane_integer W>
KI_DEVICE std::uint64_t sub_group_ballot(P pred, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::ballot(pred, detail::gpu::width_of(width)),
                           detail::ballot(pred, detail::width_value(width), where))
}

// Collectives with an associative operator op(a, b), evaluated in lane order (op needn't be
// commutative). reduce: every work-item gets op(...op(v0, v1)..., vn-1); scan: lane i gets the
// reduction of lanes 0..i; exclusive_scan: lane 0 gets init, lane i > 0 gets op(init, r) for the
// reduction r of lanes 0..i-1. op (and init) must be the same for the participants.

template <class Op, detail::shuffle_value T>
KI_DEVICE T sub_group_reduce(Op op, T v, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::reduce(op, v, 0),
                           detail::fold<T>(detail::cpu::collective_kind::reduce, op, v, nullptr, {}, where))
}
template <class Op, detail::shuffle_value T, detail::lane_integer W>
KI_DEVICE T sub_group_reduce(Op op, T v, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::reduce(op, v, detail::gpu::width_of(width)),
      detail::fold<T>(detail::cpu::collective_kind::reduce, op, v, nullptr, detail::width_value(width), where))
}
template <class Op, detail::shuffle_value T>
KI_DEVICE T sub_group_scan(Op op, T v, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::scan(op, v, 0),
                           detail::fold<T>(detail::cpu::collective_kind::scan, op, v, nullptr, {}, where))
}
template <class Op, detail::shuffle_value T, detail::lane_integer W>
KI_DEVICE T sub_group_scan(Op op, T v, W width, source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::scan(op, v, detail::gpu::width_of(width)),
      detail::fold<T>(detail::cpu::collective_kind::scan, op, v, nullptr, detail::width_value(width), where))
}
template <class Op, detail::shuffle_value T>
KI_DEVICE T sub_group_exclusive_scan(Op op, T v, std::type_identity_t<T> init,
                                     source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(detail::gpu::exclusive_scan(op, v, static_cast<T>(init), 0),
                           detail::fold<T>(detail::cpu::collective_kind::exclusive_scan, op, v, &init, {}, where))
}
template <class Op, detail::shuffle_value T, detail::lane_integer W>
KI_DEVICE T sub_group_exclusive_scan(Op op, T v, std::type_identity_t<T> init, W width,
                                     source_location where = source_location::current()) {
  KI_DETAIL_SUB_GROUP_BODY(
      detail::gpu::exclusive_scan(op, v, static_cast<T>(init), detail::gpu::width_of(width)),
      detail::fold<T>(detail::cpu::collective_kind::exclusive_scan, op, v, &init, detail::width_value(width), where))
}

/// Wait until every work-item of the sub-group (with a width: of the caller's segment) has
/// reached this barrier; their global and local memory writes before it are then visible to
/// the sub-group (segment). It does not order memory with other sub-groups (segments).
template <class Tag = void>
KI_DEVICE void sub_group_barrier(source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    KI_GPU_USER_CALL(where);
    detail::gpu::sub_group_barrier(0);
    return;
  }
#endif
#if !KI_GPU_PASS
  detail::sub_group_sync({}, where);
#endif
}
template <detail::lane_integer W>
KI_DEVICE void sub_group_barrier(W width, source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    KI_GPU_USER_CALL(where);
    detail::gpu::sub_group_barrier(detail::gpu::width_of(width));
    return;
  }
#endif
#if !KI_GPU_PASS
  detail::sub_group_sync(detail::width_value(width), where);
#endif
}

#undef KI_DETAIL_SUB_GROUP_BODY

}  // namespace ki

#include <ki/detail/public_end.hpp>
