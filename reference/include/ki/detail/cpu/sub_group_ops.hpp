// Private: the sub-group operations as the CPU backends see them, in one table.
//
// Each operation is one enumerator of collective_kind and one row of `ops`, next to each other
// in this file. The row says everything the CPU runtime needs to check and perform the
// operation on both CPU backends (ki/cpu/sub_group.hpp): its user-facing name, what its integer
// argument is, and how it is computed once every participant of its scope (a sub-group, or a
// segment of `width` lanes of it) has arrived. A static_assert below fails when a row is
// missing or out of place, so adding an operation cannot forget it; nothing else switches over
// the kinds. docs/adding-an-op.md walks through the other places (the public entry point in
// ki/sub_group.hpp, the GPU mapping in ki/detail/gpu/sub_group.hpp, the spec test).
//
// Semantics, 0-based (spec: shfl ... sub_group_exclusive_scan), for the lane `lane` of a
// segment of width w starting at lane `seg` of a sub-group of width W:
//   shfl(v, lane)            lane `lane` of the sub-group; none there: unspecified
//   shfl(v, lane, w)         lane `lane mod w` of the caller's segment
//   shfl_down(v, d[, w])     lane + d; past the sub-group width (or outside the segment): the
//                            caller's own value; within it but without a work-item: unspecified
//   shfl_up(v, d[, w])       lane - d; before lane 0 (or the segment): the caller's own value
//   shfl_xor(v, m[, w])      position (lane in segment) xor m, m in [0, w)
//   any/all/ballot           over the work-items of the segment; ballot bit i = i-th lane of it
//   reduce/scan/excl. scan   left folds in lane order over the segment's work-items
//   sub_group_barrier        nothing to compute; orders memory within the segment
#pragma once
#include <ki/detail/private.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

#include <ki/source_location.hpp>

namespace ki::detail::cpu {

/// The sub-group communication functions (one row of `ops` each, in this order).
enum class collective_kind : std::uint8_t {
  shfl,
  shfl_down,
  shfl_up,
  shfl_xor,
  any,
  all,
  ballot,
  reduce,
  scan,
  exclusive_scan,
  sub_group_barrier,
  // The emulated GPU's masked rendezvous (CUDA's *_sync intrinsics, ki/detail/gpu/emulated.hpp):
  // the participants are the lanes of `lane_mask`, not a sub-group or segment.
  lanes_read,    ///< __shfl*_sync: read lane `arg` (absolute in the warp; own_value: the caller's)
  lanes_ballot,  ///< __ballot_sync: bit i = lane i of the mask's pred
  lanes_sync,    ///< __syncwarp
  count_         ///< (not an operation: the number of them)
};

/// One work-item's part in a sub-group communication function. It lives on the caller's stack
/// while the caller waits; the executor reads `value` and writes `result` of every participant.
struct collective {
  collective_kind kind;
  source_location where;
  std::int64_t width = 0;       ///< 0: no width given (the whole sub-group)
  bool width_given = false;     ///< a width was passed (width holds it, also 0 or negative ones)
  bool width_huge = false;      ///< the width was an unsigned value beyond int64 (its bits are in width)
  std::int64_t arg = 0;         ///< lane (shfl), offset (shfl_down/up) or mask (shfl_xor)
  bool arg_huge = false;        ///< arg was an unsigned value beyond int64 (its bits are in arg)
  std::size_t size = 0;         ///< sizeof the value type
  std::uint64_t lane_mask = 0;  ///< lanes_* kinds: the lanes that meet (bit i = lane i of the warp)
  const void* value = nullptr;  ///< the caller's value (bool for votes)
  void* result = nullptr;       ///< T, bool (any/all) or std::uint64_t (ballot)
  /// reduce/scans: out = op(a, b) on values of `size` bytes; `op` is the caller's operator.
  void (*combine)(const void* op, const void* a, const void* b, void* out) = nullptr;
  const void* op = nullptr;
  const void* init = nullptr;  ///< exclusive_scan
  /// exclusive_scan: whether two inits are the same value (bytes of padding aside).
  bool (*same_init)(const void* a, const void* b) = nullptr;
  const char* type_name = "";  ///< for messages
  const char* op_name = "";    ///< reduce/scans: the operator's type, as the compiler spells it (messages)
  /// reduce/scans: whether two operators of the caller's type have the same state (null: not compared).
  bool (*same_op)(const void* a, const void* b) = nullptr;
};

/// What an operation's integer argument is. An offset or a mask must be the same for every
/// participant (and is checked on arrival); a lane may differ from lane to lane.
enum class arg_role : std::uint8_t { none, lane, offset, mask };

/// How an operation is computed once its scope has arrived.
enum class op_shape : std::uint8_t {
  read,  ///< each participant reads one lane's value (`source`)
  vote,  ///< one result per segment from the participants' bools (`segment`)
  fold,  ///< a left fold of the values in lane order, through `combine` (`segment`); fast
         ///< backends may compute (type, operator) pairs they recognise their own way
  sync,  ///< nothing to compute
};

/// What a fold computes (op_shape::fold rows; none for the others). Every computation of a fold
/// switches on it exhaustively: a new fold-shaped operation must say what it is, and each
/// implementation (the exact fold here, simd_cpu's vector folds) must handle it.
enum class fold_kind : std::uint8_t {
  none,
  reduce,          ///< op(...op(v_0, v_1)..., v_n-1) to every lane
  inclusive_scan,  ///< lane l: op(...(v_0, ...), v_l)
  exclusive_scan,  ///< lane 0: init; lane l: op(init, v_0 ... v_l-1)
};

/// `source`'s answers besides a lane: the caller's own value, or an unspecified one.
inline constexpr std::int64_t own_value = -1, no_lane = -2;

struct op_row {
  collective_kind kind;
  const char* name;  ///< as the user wrote it
  arg_role arg;
  op_shape shape;
  bool orders_memory;  ///< the participants' accesses before it happen before those after it
  /// read: the lane whose value the participant at `lane` reads (its segment: [seg, seg + w)
  /// of a sub-group of width W), own_value or no_lane. A lane without a work-item, or one
  /// outside the sub-group, is the caller's to treat as unspecified.
  std::int64_t (*source)(const collective& c, std::int64_t lane, std::int64_t seg, std::int64_t w, std::int64_t W);
  /// vote, fold: writes the results of one segment's participants at[0 .. n), n >= 1.
  void (*segment)(collective* const* at, std::int64_t n);
  /// fold: what it computes (the fast folds of a backend switch on it).
  fold_kind fold = fold_kind::none;
};

namespace ops_detail {
using i64 = std::int64_t;

inline void vote(collective* const* at, i64 n, bool all) {
  bool r = all;
  for (i64 l = 0; l < n; ++l)
    r = all ? (r && *static_cast<const bool*>(at[l]->value)) : (r || *static_cast<const bool*>(at[l]->value));
  for (i64 l = 0; l < n; ++l) *static_cast<bool*>(at[l]->result) = r;
}

/// The exact fold of any type and operator, in lane order, through the type-erased combine.
inline void fold(collective* const* at, i64 n, fold_kind kind) {
  const collective& c0 = *at[0];
  const std::size_t sz = c0.size;
  alignas(64) unsigned char small[2][256];  // large values (any trivially copyable type) on the heap
  std::vector<unsigned char> big;
  unsigned char *acc = small[0], *tmp = small[1];
  if (sz > sizeof small[0]) {
    big.resize(2 * sz);
    acc = big.data();
    tmp = big.data() + sz;
  }
  const auto step = [&](const void* v) {
    c0.combine(c0.op, acc, v, tmp);
    unsigned char* t = acc;
    acc = tmp, tmp = t;
  };
  switch (kind) {
    case fold_kind::reduce:
      std::memcpy(acc, at[0]->value, sz);
      for (i64 l = 1; l < n; ++l) step(at[l]->value);
      for (i64 l = 0; l < n; ++l) std::memcpy(at[l]->result, acc, sz);
      return;
    case fold_kind::inclusive_scan:
      std::memcpy(acc, at[0]->value, sz);
      std::memcpy(at[0]->result, acc, sz);
      for (i64 l = 1; l < n; ++l) {
        step(at[l]->value);
        std::memcpy(at[l]->result, acc, sz);
      }
      return;
    case fold_kind::exclusive_scan:
      std::memcpy(acc, at[0]->init, sz);
      for (i64 l = 0; l < n; ++l) {
        std::memcpy(at[l]->result, acc, sz);
        if (l + 1 < n) step(at[l]->value);
      }
      return;
    case fold_kind::none: break;
  }
  throw std::logic_error("ki: internal error: a fold without a fold_kind");
}
}  // namespace ops_detail

/// The table: row k is the operation collective_kind(k).
inline constexpr op_row ops[] = {
    {collective_kind::shfl, "shfl", arg_role::lane, op_shape::read, false,
     [](const collective& c, std::int64_t, std::int64_t seg, std::int64_t w, std::int64_t W) -> std::int64_t {
       if (c.width > 0) return seg + (c.arg & (w - 1));                 // lane mod width, also negative lanes
       return c.arg_huge || c.arg < 0 || c.arg >= W ? no_lane : c.arg;  // no such lane: unspecified
     },
     nullptr},
    {collective_kind::shfl_down, "shfl_down", arg_role::offset, op_shape::read, false,
     [](const collective& c, std::int64_t lane, std::int64_t seg, std::int64_t w, std::int64_t) -> std::int64_t {
       return c.arg_huge || c.arg >= seg + w - lane ? own_value : lane + c.arg;
     },
     nullptr},
    {collective_kind::shfl_up, "shfl_up", arg_role::offset, op_shape::read, false,
     [](const collective& c, std::int64_t lane, std::int64_t seg, std::int64_t, std::int64_t) -> std::int64_t {
       return c.arg_huge || c.arg > lane - seg ? own_value : lane - c.arg;
     },
     nullptr},
    {collective_kind::shfl_xor, "shfl_xor", arg_role::mask, op_shape::read, false,
     [](const collective& c, std::int64_t lane, std::int64_t seg, std::int64_t, std::int64_t) -> std::int64_t {
       return seg + ((lane - seg) ^ c.arg);
     },
     nullptr},
    {collective_kind::any, "sub_group_any", arg_role::none, op_shape::vote, false, nullptr,
     [](collective* const* at, std::int64_t n) { ops_detail::vote(at, n, false); }},
    {collective_kind::all, "sub_group_all", arg_role::none, op_shape::vote, false, nullptr,
     [](collective* const* at, std::int64_t n) { ops_detail::vote(at, n, true); }},
    {collective_kind::ballot, "sub_group_ballot", arg_role::none, op_shape::vote, false, nullptr,
     [](collective* const* at, std::int64_t n) {
       std::uint64_t m = 0;
       for (std::int64_t l = 0; l < n; ++l) m |= std::uint64_t{*static_cast<const bool*>(at[l]->value)} << l;
       for (std::int64_t l = 0; l < n; ++l) *static_cast<std::uint64_t*>(at[l]->result) = m;
     }},
    {collective_kind::reduce, "sub_group_reduce", arg_role::none, op_shape::fold, false, nullptr,
     [](collective* const* at, std::int64_t n) { ops_detail::fold(at, n, fold_kind::reduce); }, fold_kind::reduce},
    {collective_kind::scan, "sub_group_scan", arg_role::none, op_shape::fold, false, nullptr,
     [](collective* const* at, std::int64_t n) { ops_detail::fold(at, n, fold_kind::inclusive_scan); },
     fold_kind::inclusive_scan},
    {collective_kind::exclusive_scan, "sub_group_exclusive_scan", arg_role::none, op_shape::fold, false, nullptr,
     [](collective* const* at, std::int64_t n) { ops_detail::fold(at, n, fold_kind::exclusive_scan); },
     fold_kind::exclusive_scan},
    {collective_kind::sub_group_barrier, "sub_group_barrier", arg_role::none, op_shape::sync, true, nullptr, nullptr},
    {collective_kind::lanes_read, "__shfl_sync", arg_role::lane, op_shape::read, false,
     [](const collective& c, std::int64_t, std::int64_t, std::int64_t, std::int64_t W) -> std::int64_t {
       return c.arg < 0 ? own_value : c.arg < W ? c.arg : no_lane;
     },
     nullptr},
    {collective_kind::lanes_ballot, "__ballot_sync", arg_role::none, op_shape::vote, false, nullptr,
     [](collective* const* at, std::int64_t n) {  // at[l]: lane l of the warp, null where not in the mask
       std::uint64_t m = 0;
       for (std::int64_t l = 0; l < n; ++l)
         if (at[l] != nullptr && *static_cast<const bool*>(at[l]->value)) m |= std::uint64_t{1} << l;
       for (std::int64_t l = 0; l < n; ++l)
         if (at[l] != nullptr) *static_cast<std::uint64_t*>(at[l]->result) = m;
     }},
    {collective_kind::lanes_sync, "__syncwarp", arg_role::none, op_shape::sync, true, nullptr, nullptr},
};

namespace ops_detail {
/// Every kind has its row, in enumerator order (checked at compile time, below).
constexpr bool rows_in_order() {
  if (sizeof ops / sizeof ops[0] != static_cast<std::size_t>(collective_kind::count_)) return false;
  for (std::size_t k = 0; k < sizeof ops / sizeof ops[0]; ++k)
    if (static_cast<std::size_t>(ops[k].kind) != k) return false;
  return true;
}
/// Exactly the fold rows say what they compute.
constexpr bool folds_have_their_kind() {
  for (const op_row& r : ops)
    if ((r.shape == op_shape::fold) != (r.fold != fold_kind::none)) return false;
  return true;
}
/// Every row has the functions its shape uses. Not a static_assert: under GCC's
/// -fsanitize=undefined (which implies -fno-delete-null-pointer-checks) a function pointer's
/// comparison with null is not a constant expression; the oracle's tests check it (oracle.cpp).
inline bool rows_have_their_functions() {
  for (const op_row& r : ops) {
    if ((r.shape == op_shape::read) != (r.source != nullptr)) return false;
    if ((r.shape == op_shape::vote || r.shape == op_shape::fold) != (r.segment != nullptr)) return false;
  }
  return true;
}
}  // namespace ops_detail
static_assert(ops_detail::rows_in_order(), "ki: every collective_kind needs its row in `ops`, in enumerator order");
static_assert(ops_detail::folds_have_their_kind(), "ki: a fold row needs its fold_kind (and only a fold row has one)");

/// Whether k is one of the emulated GPU's masked rendezvous (scope: lane_mask).
constexpr bool masked(collective_kind k) {
  return k == collective_kind::lanes_read || k == collective_kind::lanes_ballot || k == collective_kind::lanes_sync;
}

/// The row of operation k.
constexpr const op_row& op(collective_kind k) { return ops[static_cast<std::size_t>(k)]; }

}  // namespace ki::detail::cpu
