// simd_cpu's own folds (the sub-group operations themselves are the CPU runtime's,
// reference/cpu/src/sub_group.cpp, shared with the oracle).
//
// Where the value type is an arithmetic type and the operator one of the standard function
// objects (std::plus, std::multiplies, std::bit_and/or/xor, typed or transparent), the values
// are gathered into one array and reduced with xsimd batches: those operators are associative
// and commutative on integers (exact, modular), and the spec assumes op associative, so a
// floating-point sum may be regrouped like on a GPU (results within rounding of the lane-order
// fold). Every other operator is folded exactly in lane order through the type-erased combine.
#include "sub_group.hpp"

#include <xsimd/xsimd.hpp>

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <functional>
#include <sstream>
#include <string>

#include <ki/sub_group.hpp>

namespace ki::simd_cpu::detail {
using ki::detail::cpu::collective;
using ki::detail::cpu::fold_kind;
using i64 = std::int64_t;

namespace {
using ki::detail::cpu::fast_fold;

// --- vector folds ----------------------------------------------------------------------------

constexpr i64 max_lanes = 64;

/// The transparent form of a standard function object, which also applies to xsimd batches.
template <class Op>
struct transparent {
  using type = Op;
};
template <class T>
struct transparent<std::plus<T>> {
  using type = std::plus<>;
};
template <class T>
struct transparent<std::multiplies<T>> {
  using type = std::multiplies<>;
};
template <class T>
struct transparent<std::bit_and<T>> {
  using type = std::bit_and<>;
};
template <class T>
struct transparent<std::bit_or<T>> {
  using type = std::bit_or<>;
};
template <class T>
struct transparent<std::bit_xor<T>> {
  using type = std::bit_xor<>;
};

// n >= 1 lanes are gathered before any is read; GCC cannot see it through the memcpy loop.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
template <class T, class Op>
void scan_vector(const T* v, collective* const* at, i64 n, bool inclusive);

template <class T, class Op>
void fold_vector(collective* const* at, i64 n, fold_kind kind) {
  alignas(64) T v[max_lanes];
  for (i64 l = 0; l < n; ++l) std::memcpy(&v[l], at[l]->value, sizeof(T));
  const Op op{};
  switch (kind) {  // (exhaustive: a fold kind this does not compute is an error, never another fold)
    case fold_kind::reduce: break;
    case fold_kind::inclusive_scan:
    case fold_kind::exclusive_scan: return scan_vector<T, Op>(v, at, n, kind == fold_kind::inclusive_scan);
    case fold_kind::none: throw std::logic_error("ki::simd_cpu: internal error: a fold without a fold_kind");
  }
  // reduce: partial folds in vector registers, then across them, then the tail lanes.
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
}

/// The scans of fold_vector: a prefix in lane order (exclusive: starting from init).
template <class T, class Op>
void scan_vector(const T* v, collective* const* at, i64 n, bool inclusive) {
  const Op op{};
  T acc;
  if (inclusive) {
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

}  // namespace

ki::detail::cpu::fast_fold find_fast(const collective& c) {
  if (c.combine == nullptr) return nullptr;
  for (const auto& e : fast_table())
    if (e.combine == c.combine) return e.fold;
  return nullptr;
}

}  // namespace ki::simd_cpu::detail
