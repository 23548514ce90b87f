// The sub-group communication functions of simd_cpu (semantics: reference/src/sub_group.cpp,
// which is the oracle; 0-based lanes):
//   shfl(v, lane)            lane `lane` of the sub-group; none there: unspecified
//   shfl(v, lane, w)         lane `lane mod w` of the caller's segment
//   shfl_down(v, d[, w])     lane + d; past the sub-group width (or outside the segment): the
//                            caller's own value; within it but without a work-item: unspecified
//   shfl_up(v, d[, w])       lane - d; before lane 0 (or the segment): the caller's own value
//   shfl_xor(v, m[, w])      position (lane in segment) xor m, m in [0, w)
//   any/all/ballot           over the work-items of the segment; ballot bit i = i-th lane of it
//   reduce/scan/excl. scan   left folds in lane order over the segment's work-items
//
// Where the value type is an arithmetic type and the operator one of the standard function
// objects (std::plus, std::multiplies, std::bit_and/or/xor, typed or transparent), the values
// are gathered into one array and reduced with xsimd batches: those operators are associative
// and commutative on integers (exact, modular), and the spec assumes op associative, so a
// floating-point sum may be regrouped like on a GPU (results within rounding of the lane-order
// fold). Every other operator is folded exactly in lane order through the type-erased combine.
#include <ki/cpu/support.hpp>
#include "sub_group.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>

#include <ki/sub_group.hpp>

namespace ki::simd_cpu::detail {
using ki::detail::cpu::collective;
using ki::detail::cpu::collective_kind;
using i64 = std::int64_t;

const char* name_of(collective_kind k) { return ki::detail::cpu::collective_name(k); }

namespace {

using ki::detail::cpu::arg_text;
using ki::detail::cpu::call_difference;
using ki::detail::cpu::first_difference;
using ki::detail::cpu::uses_offset;

using ki::detail::cpu::segment_width;

// --- vector folds ----------------------------------------------------------------------------

constexpr i64 max_lanes = 64;

/// One segment of a fold whose (T, Op) has a vector form: gathered, folded, scattered.
using fast_fold = void (*)(collective* const* at, i64 n, collective_kind kind);

/// The transparent form of a standard function object, which also applies to xsimd batches.
template <class Op> struct transparent { using type = Op; };
template <class T> struct transparent<std::plus<T>> { using type = std::plus<>; };
template <class T> struct transparent<std::multiplies<T>> { using type = std::multiplies<>; };
template <class T> struct transparent<std::bit_and<T>> { using type = std::bit_and<>; };
template <class T> struct transparent<std::bit_or<T>> { using type = std::bit_or<>; };
template <class T> struct transparent<std::bit_xor<T>> { using type = std::bit_xor<>; };

// n >= 1 lanes are gathered before any is read; GCC cannot see it through the memcpy loop.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class T, class Op>
void fold_vector(collective* const* at, i64 n, collective_kind kind) {
  alignas(64) T v[max_lanes];
  for (i64 l = 0; l < n; ++l) std::memcpy(&v[l], at[l]->value, sizeof(T));
  const Op op{};
  if (kind == collective_kind::reduce) {
    using batch = xsimd::batch<T>;
    constexpr i64 B = static_cast<i64>(batch::size);
    T r;
    i64 l = 0;
    if (n >= B) {
      batch acc = batch::load_aligned(&v[0]);
      const typename transparent<Op>::type vop{};
      for (l = B; l + B <= n; l += B) acc = vop(acc, batch::load_aligned(&v[l]));
      if constexpr (std::is_same_v<Op, std::plus<T>> || std::is_same_v<Op, std::plus<>>) {
        r = xsimd::hadd(acc);
      } else {
        alignas(64) T lanes[B];
        acc.store_aligned(lanes);
        r = lanes[0];
        for (i64 k = 1; k < B; ++k) r = op(r, lanes[k]);
      }
    } else {
      r = v[0];
      l = 1;
    }
    for (; l < n; ++l) r = op(r, v[l]);
    for (i64 k = 0; k < n; ++k) std::memcpy(at[k]->result, &r, sizeof(T));
    return;
  }
  // Scans: a prefix in lane order (exclusive: starting from init).
  T acc;
  if (kind == collective_kind::scan) {
    acc = v[0];
    std::memcpy(at[0]->result, &acc, sizeof(T));
    for (i64 l = 1; l < n; ++l) {
      acc = op(acc, v[l]);
      std::memcpy(at[l]->result, &acc, sizeof(T));
    }
  } else {
    std::memcpy(&acc, at[0]->init, sizeof(T));
    for (i64 l = 0; l < n; ++l) {
      std::memcpy(at[l]->result, &acc, sizeof(T));
      acc = op(acc, v[l]);
    }
  }
}

struct fast_entry {
  void (*combine)(const void*, const void*, const void*, void*);
  fast_fold fold;
};

template <class T, class Op>
fast_entry entry() {
  return {&ki::detail::combine<T, Op>, &fold_vector<T, Op>};
}

template <class T>
void add_arith(std::vector<fast_entry>& t) {
  t.push_back(entry<T, std::plus<T>>());
  t.push_back(entry<T, std::plus<>>());
  t.push_back(entry<T, std::multiplies<T>>());
  t.push_back(entry<T, std::multiplies<>>());
  if constexpr (std::is_integral_v<T>) {
    t.push_back(entry<T, std::bit_and<T>>());
    t.push_back(entry<T, std::bit_and<>>());
    t.push_back(entry<T, std::bit_or<T>>());
    t.push_back(entry<T, std::bit_or<>>());
    t.push_back(entry<T, std::bit_xor<T>>());
    t.push_back(entry<T, std::bit_xor<>>());
  }
}

/// The (type, operator) pairs with a vector form, recognised by the address of the combine
/// function the device side instantiated for them (the same function in every translation
/// unit of a program; where it is not, e.g. across shared libraries, the exact fold runs).
const std::vector<fast_entry>& fast_table() {
  static const std::vector<fast_entry> t = [] {
    std::vector<fast_entry> v;
    add_arith<float>(v);
    add_arith<double>(v);
    add_arith<std::int32_t>(v);
    add_arith<std::uint32_t>(v);
    add_arith<std::int64_t>(v);
    add_arith<std::uint64_t>(v);
    return v;
  }();
  return t;
}

fast_fold find_fast(const collective& c) {
  if (c.combine == nullptr) return nullptr;
  for (const auto& e : fast_table())
    if (e.combine == c.combine) return e.fold;
  return nullptr;
}

/// The exact fold of any type and operator, in lane order, through the type-erased combine.
void fold_exact(collective* const* at, i64 n, collective_kind kind) {
  const collective& c0 = *at[0];
  const std::size_t sz = c0.size;
  // Large values (the spec allows any trivially copyable type) live on the heap.
  alignas(64) unsigned char small[2][256];
  std::vector<unsigned char> big;
  unsigned char *acc = small[0], *tmp = small[1];
  if (sz > sizeof small[0]) {
    big.resize(2 * sz);
    acc = big.data();
    tmp = big.data() + sz;
  }
  switch (kind) {
    case collective_kind::reduce:
      std::memcpy(acc, at[0]->value, sz);
      for (i64 l = 1; l < n; ++l) {
        c0.combine(c0.op, acc, at[l]->value, tmp);
        std::swap(acc, tmp);
      }
      for (i64 l = 0; l < n; ++l) std::memcpy(at[l]->result, acc, sz);
      break;
    case collective_kind::scan:
      std::memcpy(acc, at[0]->value, sz);
      std::memcpy(at[0]->result, acc, sz);
      for (i64 l = 1; l < n; ++l) {
        c0.combine(c0.op, acc, at[l]->value, tmp);
        std::swap(acc, tmp);
        std::memcpy(at[l]->result, acc, sz);
      }
      break;
    default:  // exclusive scan: lane 0 init; lane l: op(init, v_0 ... v_l-1)
      std::memcpy(acc, at[0]->init, sz);
      for (i64 l = 0; l < n; ++l) {
        std::memcpy(at[l]->result, acc, sz);
        if (l + 1 < n) {
          c0.combine(c0.op, acc, at[l]->value, tmp);
          std::swap(acc, tmp);
        }
      }
      break;
  }
}

/// Votes and folds: one pass per segment, results written to every lane of it.
void perform_per_segment(const scope& s) {
  const i64 n = s.sub_group_size;
  const collective& c0 = *s.at[0];  // all participants agree on kind, width and op
  const i64 w = segment_width(c0, s.sub_group_width);
  const fast_fold fast = c0.kind >= collective_kind::reduce ? find_fast(c0) : nullptr;
  for (i64 seg = s.begin; seg < s.begin + s.lanes && seg < n; seg += w) {
    const i64 end = std::min(seg + w, n);  // the segment's work-items: lanes [seg, end)
    collective* const* at = s.at + (seg - s.begin);
    const i64 m = end - seg;
    switch (c0.kind) {
      case collective_kind::any:
      case collective_kind::all: {
        bool any = false, all = true;
        for (i64 l = 0; l < m; ++l) {
          const bool p = *static_cast<const bool*>(at[l]->value);
          any |= p;
          all &= p;
        }
        const bool r = c0.kind == collective_kind::all ? all : any;
        for (i64 l = 0; l < m; ++l) *static_cast<bool*>(at[l]->result) = r;
        break;
      }
      case collective_kind::ballot: {
        std::uint64_t mask = 0;
        for (i64 l = 0; l < m; ++l) mask |= std::uint64_t{*static_cast<const bool*>(at[l]->value)} << l;
        for (i64 l = 0; l < m; ++l) *static_cast<std::uint64_t*>(at[l]->result) = mask;
        break;
      }
      default:
        if (fast != nullptr) fast(at, m, c0.kind);
        else fold_exact(at, m, c0.kind);
        break;
    }
  }
}

}  // namespace


std::string check_agreement(const scope& s) {
  // Every call comes here; text is built only on a mismatch.
  const collective* first = nullptr;
  i64 first_lane = 0;
  for (i64 i = 0; i < s.lanes; ++i) {
    const collective* c = s.at[i];
    if (c == nullptr) continue;
    if (first == nullptr) {
      first = c, first_lane = s.begin + i;
      continue;
    }
    const call_difference d = first_difference(*c, *first);
    if (d == call_difference::none) continue;
    std::ostringstream os;
    os << name_of(first->kind) << " at line " << first->where.line << " (lane " << first_lane << ") and "
       << name_of(c->kind) << " at line " << c->where.line << " (lane " << s.begin + i << ") ";
    if (d == call_difference::site) os << "are different communication functions executed together";
    else if (d == call_difference::width) os << "pass different widths (" << first->width << ", " << c->width << ")";
    else if (d == call_difference::arg) os << "pass different offsets or masks (" << arg_text(*first) << ", " << arg_text(*c) << ")";
    else if (d == call_difference::type) os << "pass different value types (" << first->type_name << ", " << c->type_name << ")";
    else if (d == call_difference::op) os << "pass different operators";
    else os << "pass different init values (it must be the same for the work-items of a segment)";
    return os.str();
  }
  return "";
}

void perform(const scope& s) {
  const collective_kind kind = s.at[0]->kind;
  if (kind == collective_kind::sub_group_barrier) return;
  if (!uses_offset(kind) && kind != collective_kind::shfl) return perform_per_segment(s);
  // Shuffles: each participant reads one lane.
  const i64 W = s.sub_group_width, n = s.sub_group_size;
  auto rec = [&](i64 lane) -> const collective* {
    return (lane >= s.begin && lane < s.begin + s.lanes) ? s.at[lane - s.begin] : nullptr;
  };
  for (i64 i = 0; i < s.lanes; ++i) {
    collective* c = s.at[i];
    if (c == nullptr) continue;
    const i64 lane = s.begin + i, w = segment_width(*c, W), seg = lane / w * w;
    const std::size_t sz = c->size;
    auto read = [&](i64 src) {
      if (src >= 0 && src < n && rec(src) != nullptr) std::memcpy(c->result, rec(src)->value, sz);
      else std::memset(c->result, 0, sz);  // unspecified
    };
    switch (c->kind) {
      case collective_kind::shfl:
        if (c->width > 0) read(seg + (c->arg & (w - 1)));
        else if (c->arg_huge || c->arg < 0 || c->arg >= W) read(-1);
        else read(c->arg);
        break;
      case collective_kind::shfl_down:
        if (c->arg_huge || c->arg >= seg + w - lane) std::memcpy(c->result, c->value, sz);
        else read(lane + c->arg);
        break;
      case collective_kind::shfl_up:
        if (c->arg_huge || c->arg > lane - seg) std::memcpy(c->result, c->value, sz);
        else read(lane - c->arg);
        break;
      case collective_kind::shfl_xor:
        read(seg + ((lane - seg) ^ c->arg));
        break;
      default:
        break;
    }
  }
}

}  // namespace ki::simd_cpu::detail
