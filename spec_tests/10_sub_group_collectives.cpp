// Spec: sub_group_reduce, sub_group_scan, sub_group_exclusive_scan, without and with a width
// (0-based in ki):
//   reduce: "in the order of the lanes: op(…op(op(v₁, v₂), v₃)…, vₙ) ... op has to be
//   associative, but needn't be commutative. All work-items of the sub-group get the result."
//   scan: "the work-item in lane i gets the reduction of the values of lanes 1 to i"
//   exclusive scan: "the work-item in lane 1 gets init itself, and the one in lane i > 1 gets
//   op(init, r) for the reduction r of the values of lanes 1 to i - 1 ... it needn't be an
//   identity of op."
//   with a width: "over the work-items of the caller's segment, in the order of its lanes"
// Non-commutative associative operators make the lane order visible: composition of affine maps
// x -> a x + b (mod 2^64), 2x2 matrix products (mod 2^32), argmin with ties (the first lane
// wins), and concatenation of strings in a fixed array; plus an ordinary int64 sum. init is
// never an identity. The host folds the recorded inputs in the lane order it observed.
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_collectives {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

// --- values and operators (each value is made from a 64-bit hash h of the work-item) -------

/// x -> a x + b. compose(f, g) is "f, then g": x -> g.a (f.a x + f.b) + g.b.
struct affine {
  u64 a, b;
  bool operator==(const affine&) const = default;
};
struct compose {
  KI_DEVICE affine operator()(const affine& f, const affine& g) const { return {g.a * f.a, g.a * f.b + g.b}; }
  static KI_DEVICE affine make(u64 h) { return {(h | 1) & 0xFFFF, h >> 40}; }
  static constexpr affine init{3, 5};
};

/// Row-major 2x2 matrices of uint32 (arithmetic mod 2^32).
struct mat2 {
  std::uint32_t m[4];
  bool operator==(const mat2&) const = default;
};
struct matmul {
  KI_DEVICE mat2 operator()(const mat2& x, const mat2& y) const {
    return {{x.m[0] * y.m[0] + x.m[1] * y.m[2], x.m[0] * y.m[1] + x.m[1] * y.m[3], x.m[2] * y.m[0] + x.m[3] * y.m[2],
             x.m[2] * y.m[1] + x.m[3] * y.m[3]}};
  }
  static KI_DEVICE mat2 make(u64 h) {
    return {{static_cast<std::uint32_t>(h % 5), static_cast<std::uint32_t>((h >> 8) % 7),
             static_cast<std::uint32_t>((h >> 16) % 3), static_cast<std::uint32_t>((h >> 24) % 11) + 1}};
  }
  static constexpr mat2 init{{2, 1, 1, 1}};
};

/// (key, tag): the smaller key; on ties the left operand (the earlier lane).
struct keyed {
  std::int32_t key, tag;
  bool operator==(const keyed&) const = default;
};
struct argmin {
  KI_DEVICE keyed operator()(const keyed& x, const keyed& y) const { return y.key < x.key ? y : x; }
  static KI_DEVICE keyed make(u64 h) { return {static_cast<std::int32_t>(h % 3), static_cast<std::int32_t>(h >> 33)}; }
  static constexpr keyed init{1, -1};
};

/// (key, tag) with padding between the fields: argmin again, with an init whose padding bytes
/// differ between the work-items (the same value: "init has to be the same").
struct padded {
  std::int8_t key;
  std::int32_t tag;
  bool operator==(const padded& o) const { return key == o.key && tag == o.tag; }
};
/// memset for device code too (std::memset is a host function under hipcc).
template <class T>
KI_DEVICE void fill_bytes(T& x, unsigned char v) {
  auto* b = reinterpret_cast<unsigned char*>(&x);
  for (std::size_t i = 0; i < sizeof(T); ++i) b[i] = v;
}
struct argmin_padded {
  KI_DEVICE padded operator()(const padded& x, const padded& y) const { return y.key < x.key ? y : x; }
  static KI_DEVICE padded make(u64 h) {
    padded p;
    fill_bytes(p, 0);
    p.key = static_cast<std::int8_t>(h % 3);
    p.tag = static_cast<std::int32_t>(h >> 33);
    return p;
  }
  static constexpr padded init{1, -1};
  static KI_DEVICE padded init_for(std::int64_t lane) {
    padded p;
    fill_bytes(p, static_cast<unsigned char>(0x11 * (lane % 15 + 1)));  // padding bytes differ by lane
    p.key = init.key;
    p.tag = init.tag;
    return p;
  }
};
static_assert(sizeof(padded) > sizeof(std::int8_t) + sizeof(std::int32_t), "padded has padding");

/// Up to 135 characters; concatenation keeps the first 135.
struct text {
  std::uint8_t len;
  char c[135];
  bool operator==(const text& o) const { return len == o.len && std::memcmp(c, o.c, len) == 0; }
};
struct concat {
  KI_DEVICE text operator()(const text& x, const text& y) const {
    text r = x;
    for (int i = 0; i < y.len && r.len < 135; ++i) r.c[r.len++] = y.c[i];
    return r;
  }
  static KI_DEVICE text make(u64 h) {
    text t{};
    t.len = static_cast<std::uint8_t>(1 + h % 2);
    t.c[0] = static_cast<char>('a' + (h >> 8) % 26);
    t.c[1] = static_cast<char>('A' + (h >> 16) % 26);
    return t;
  }
  static constexpr text init{1, {'<'}};
};

struct plus {
  KI_DEVICE i64 operator()(i64 x, i64 y) const { return x + y; }
  static KI_DEVICE i64 make(u64 h) { return static_cast<i64>(h >> 20); }
  static constexpr i64 init = 1000;
};

#if KI_SPEC_HAS_FLOAT16
/// _Float16 sums of halves below 8: every partial sum of 64 of them is exact in 11 bits.
struct half_plus {
  KI_DEVICE _Float16 operator()(_Float16 x, _Float16 y) const { return x + y; }
  static KI_DEVICE _Float16 make(u64 h) {
    return static_cast<_Float16>(static_cast<int>(h % 16)) * static_cast<_Float16>(0.5f);
  }
  static constexpr _Float16 init = static_cast<_Float16>(3.0f);
};
#endif

/// Results per work-item: reduce, scan, exclusive scan, for no width and each power of two.
inline i64 results_per_item(i64 W) { return 3 * (1 + static_cast<i64>(std::bit_width(static_cast<u64>(W)))); }

template <class T, class Op>
struct collectives {
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<T> out, u64 salt) const {
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const Op op{};
    const T v = Op::make(sg::mix(static_cast<u64>(p.slot) ^ salt));
    T init = Op::init;
    if constexpr (requires { Op::init_for(i64{0}); }) init = Op::init_for(ki::get_sub_group_local_id());
    const i64 W = ki::get_max_sub_group_size();
    i64 per = 1;
    for (i64 w = 1; w <= W; w *= 2) ++per;
    T* o = &out[p.slot * 3 * per];
    o[0] = ki::sub_group_reduce(op, v);
    o[1] = ki::sub_group_scan(op, v);
    o[2] = ki::sub_group_exclusive_scan(op, v, init);
    i64 k = 3;
    for (i64 w = 1; w <= W; w *= 2) {
      o[k++] = ki::sub_group_reduce(op, v, w);
      o[k++] = ki::sub_group_scan(op, v, static_cast<int>(w));
      o[k++] = ki::sub_group_exclusive_scan(op, v, init, static_cast<std::uint32_t>(w));
    }
  }
};

template <class B, class T, class Op>
void check_op(const char* what) {
  ki_test::make<B>();
  using cfg = ki_test::config<B>;
  const Op op{};
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b), per = results_per_item(W);
    CHECK(ki::supports_shuffle<T>(b));  // "Values of the types that the shuffles support are supported"
    for (const auto& s : sg::shapes(b)) {
      KI_INFO(what << "; " << cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups;
      const u64 salt = static_cast<u64>(W * 7919 + s.items());
      auto run = [&](const auto& be) {
        auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
        auto out = ki::allocate<T>(be, total * per);
        ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, collectives<T, Op>{}, rec, out, salt);
        return sg::launch_result<T>{ki_test::read(be, rec), ki_test::read(be, out)};
      };
      const auto result = run(b);
      const auto l = sg::observe(b, s, result.rec);
      if (!l.ok) continue;
      const auto& got = result.out;
      auto input = [&](i64 slot) { return Op::make(sg::mix(static_cast<u64>(slot) ^ salt)); };
      sg::mismatches bad;
      for (i64 slot = 0; slot < total; ++slot) {
        const i64 lane = l.lane_of(slot), size = l.size_of(slot);
        std::vector<i64> ws{0};
        for (i64 w : sg::widths(W)) ws.push_back(w);
        i64 k = 0;
        for (i64 width : ws) {
          const i64 w = width != 0 ? width : W, seg = lane / w * w, end = seg + w < size ? seg + w : size;
          // Left folds in lane order over the work-items of the caller's segment.
          T reduce = input(l.at(slot, seg)), scan = reduce;
          for (i64 m = seg + 1; m < end; ++m) {
            reduce = op(reduce, input(l.at(slot, m)));
            if (m <= lane) scan = op(scan, input(l.at(slot, m)));
          }
          T exclusive = Op::init;
          if (lane > seg) {
            T r = input(l.at(slot, seg));
            for (i64 m = seg + 1; m < lane; ++m) r = op(r, input(l.at(slot, m)));
            exclusive = op(Op::init, r);  // op(init, r), as the spec writes it
          }
          const std::string at = "width " + std::to_string(width) + ", slot " + std::to_string(slot) + " (lane " +
                                 std::to_string(lane) + " of " + std::to_string(size) + "): ";
          if (!(got[static_cast<std::size_t>(slot * per + k)] == reduce)) bad.add(at + "sub_group_reduce");
          if (!(got[static_cast<std::size_t>(slot * per + k + 1)] == scan)) bad.add(at + "sub_group_scan");
          if (!(got[static_cast<std::size_t>(slot * per + k + 2)] == exclusive))
            bad.add(at + "sub_group_exclusive_scan");
          k += 3;
        }
      }
      bad.check(what);
      sg::against_reference(b, result, run, sg::none_unspecified, sg::equal_to{});
    }
  }
}

}  // namespace ki_spec_sub_group_collectives

using namespace ki_spec_sub_group_collectives;

TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan in lane order: affine map composition",
                        "[sub_group]", ki_test::backends) {
  check_op<TestType, affine, compose>("composition of affine maps");
}

TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan in lane order: 2x2 matrix product", "[sub_group]",
                        ki_test::backends) {
  check_op<TestType, mat2, matmul>("2x2 matrix product");
}

TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan in lane order: argmin, ties to the first lane",
                        "[sub_group]", ki_test::backends) {
  check_op<TestType, keyed, argmin>("argmin with ties");
}

TEMPLATE_LIST_TEST_CASE(
    "sub_group: reduce / scan / exclusive scan of a struct with padding, init differing in padding only", "[sub_group]",
    ki_test::backends) {
  check_op<TestType, padded, argmin_padded>("argmin of a struct with padding, init's padding bytes differ");
}

TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan in lane order: string concatenation", "[sub_group]",
                        ki_test::backends) {
  check_op<TestType, text, concat>("concatenation");
}

TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan of int64 sums", "[sub_group]", ki_test::backends) {
  check_op<TestType, i64, plus>("int64 sum");
}

#if KI_SPEC_HAS_FLOAT16
TEMPLATE_LIST_TEST_CASE("sub_group: reduce / scan / exclusive scan of _Float16 sums", "[sub_group]",
                        ki_test::backends) {
  check_op<TestType, _Float16, half_plus>("_Float16 sum");
}
#endif
