// Spec: shfl, shfl_down, shfl_up, shfl_xor, without and with a width, and supports_shuffle
// (0-based in ki, see DESIGN.md):
//   shfl(v, lane)          "val of the work-item with get_sub_group_local_id equal to lane ...
//                          When there is no such work-item, the result is an unspecified value"
//   shfl_down(v, d)        "lane + offset ... past the sub-group width: val of the work-item
//                          itself ... within the width but has no work-item: unspecified"
//   shfl_up(v, d)          "no such lane, i.e. lane <= offset (1-based): val of the work-item itself"
//   shfl_xor(v, m)         "0-based lane id ... xor mask ... no work-item: unspecified"
//   with a width w         "shfl reads from lane mod(lane - 1, width) + 1 of the caller's segment;
//                          shfl_down and shfl_up ... return val of the work-item itself where that
//                          lane is outside of the caller's segment; shfl_xor reads from the lane
//                          whose 0-based position in the segment is the caller's xor mask"
//   types                  "other primitive types of 1, 2, 4, 8 or 16 bytes ... if the backend
//                          supports UInt32, and isbits structs and tuples of such types"
// Lane and offset arguments of every integer type, negative and beyond 2^32 ("2^32 + 1 is not
// 1"). Each work-item records its sub-group id, lane and size; the host computes the source lane
// of every call from those observations (any layout), in closed form. A read from a lane
// without a work-item may give any value; where the backend fixes the value
// (config<B>::unspecified_word, e.g. the oracle's poison word), it is checked too.
#include <array>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "sub_groups.hpp"

namespace ki_spec_sub_group_shuffles {

using i64 = std::int64_t;
using u64 = std::uint64_t;
namespace sg = ki_test::sg;

enum class fn : std::int32_t { shfl, down, up, xor_ };
/// The integer type the lane / offset / mask (and the width) are passed as.
enum class arg_type : std::int32_t { int8, int16, int32, int64, uint8, uint32, uint64 };

/// One shuffle call: f(v, arg) or f(v, arg, width). With per_item, the lane is
/// bits + 5 * (own lane), computed modulo 2^64 and converted to the argument type.
struct shuffle_case {
  fn f;
  arg_type t;
  std::int32_t per_item;
  i64 bits;
  i64 width;  // 0: the function without a width
};

template <class I>
KI_DEVICE i64 call(const shuffle_case& c, i64 v, I a) {
  const I w = static_cast<I>(c.width);
  switch (c.f) {
    case fn::shfl: return c.width != 0 ? ki::shfl(v, a, w) : ki::shfl(v, a);
    case fn::down: return c.width != 0 ? ki::shfl_down(v, a, w) : ki::shfl_down(v, a);
    case fn::up: return c.width != 0 ? ki::shfl_up(v, a, w) : ki::shfl_up(v, a);
    case fn::xor_: return c.width != 0 ? ki::shfl_xor(v, a, w) : ki::shfl_xor(v, a);
  }
  return 0;
}

KI_DEVICE inline i64 run_case(const shuffle_case& c, i64 v, i64 lane) {
  const u64 a = static_cast<u64>(c.bits) + (c.per_item != 0 ? 5u * static_cast<u64>(lane) : 0u);
  switch (c.t) {
    case arg_type::int8: return call<std::int8_t>(c, v, static_cast<std::int8_t>(a));
    case arg_type::int16: return call<std::int16_t>(c, v, static_cast<std::int16_t>(a));
    case arg_type::int32: return call<std::int32_t>(c, v, static_cast<std::int32_t>(a));
    case arg_type::int64: return call<std::int64_t>(c, v, static_cast<std::int64_t>(a));
    case arg_type::uint8: return call<std::uint8_t>(c, v, static_cast<std::uint8_t>(a));
    case arg_type::uint32: return call<std::uint32_t>(c, v, static_cast<std::uint32_t>(a));
    case arg_type::uint64: return call<std::uint64_t>(c, v, static_cast<std::uint64_t>(a));
  }
  return 0;
}

/// The work-item's input: distinct per slot, positive (never the oracle's poison word).
KI_DEVICE inline i64 input(i64 slot, u64 salt) { return static_cast<i64>(sg::mix(static_cast<u64>(slot) ^ salt) >> 2); }

/// Every work-item runs every case of the table, in order (uniform control flow).
struct shuffle_table {
  KI_DEVICE void operator()(ki::span<shuffle_case> cases, ki::span<i64> rec, ki::span<i64> out, u64 salt) const {
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const i64 v = input(p.slot, salt);
    const i64 lane = ki::get_sub_group_local_id();
    const i64 k = cases.size();
    for (i64 c = 0; c < k; ++c) out[p.slot * k + c] = run_case(cases[c], v, lane);
  }
};

// --- the host's closed form -----------------------------------------------------------------

using i128 = __int128;

/// The argument as the callee sees it: a + 5 * lane (mod 2^64) converted to the argument type.
inline i128 argument(const shuffle_case& c, i64 lane) {
  const u64 a = static_cast<u64>(c.bits) + (c.per_item != 0 ? 5u * static_cast<u64>(lane) : 0u);
  switch (c.t) {
    case arg_type::int8: return static_cast<std::int8_t>(a);
    case arg_type::int16: return static_cast<std::int16_t>(a);
    case arg_type::int32: return static_cast<std::int32_t>(a);
    case arg_type::int64: return static_cast<std::int64_t>(a);
    case arg_type::uint8: return static_cast<std::uint8_t>(a);
    case arg_type::uint32: return static_cast<std::uint32_t>(a);
    case arg_type::uint64: return static_cast<u64>(a);
  }
  return 0;
}

/// The spec's source lane (0-based) for a caller at `lane` of a sub-group of `size` work-items
/// and width W: sg::own, sg::unspecified, or the lane read.
inline i64 source(fn f, i128 arg, i64 width, i64 lane, i64 size, i64 W) {
  const i64 w = width != 0 ? width : W, seg = lane / w * w, pos = lane - seg;
  i64 src = 0;
  switch (f) {
    case fn::shfl:
      if (width == 0) {
        if (arg < 0 || arg >= W) return sg::unspecified;  // no lane of that number
        src = static_cast<i64>(arg);
      } else {
        i128 m = arg % w;  // mod(lane, width): non-negative also for negative lanes
        if (m < 0) m += w;
        src = seg + static_cast<i64>(m);
      }
      break;
    case fn::down:
      if (pos + arg >= w) return sg::own;  // past the width / outside the segment
      src = lane + static_cast<i64>(arg);
      break;
    case fn::up:
      if (arg > pos) return sg::own;  // before lane 0 / the segment
      src = lane - static_cast<i64>(arg);
      break;
    case fn::xor_: src = seg + (pos ^ static_cast<i64>(arg)); break;
  }
  return src < size ? src : sg::unspecified;
}

const char* name(fn f) {
  switch (f) {
    case fn::shfl: return "shfl";
    case fn::down: return "shfl_down";
    case fn::up: return "shfl_up";
    case fn::xor_: return "shfl_xor";
  }
  return "?";
}
const char* name(arg_type t) {
  switch (t) {
    case arg_type::int8: return "int8";
    case arg_type::int16: return "int16";
    case arg_type::int32: return "int32";
    case arg_type::int64: return "int64";
    case arg_type::uint8: return "uint8";
    case arg_type::uint32: return "uint32";
    case arg_type::uint64: return "uint64";
  }
  return "?";
}
std::string describe(const shuffle_case& c) {
  std::string s = std::string(name(c.f)) + "(v, " +
                  (c.per_item ? std::to_string(c.bits) + " + 5 * lane" : std::to_string(c.bits)) + " as " + name(c.t);
  if (c.t == arg_type::uint64 && c.bits < 0) s += " = " + std::to_string(static_cast<u64>(c.bits));
  return s + (c.width != 0 ? ", " + std::to_string(c.width) + ")" : ")");
}

constexpr i64 two32_plus_1 = (i64{1} << 32) + 1;
const i64 u64_max_bits = static_cast<i64>(std::numeric_limits<u64>::max());
const i64 two63_plus_3_bits = static_cast<i64>((u64{1} << 63) + 3);

// The tables, per sub-group width W. Offsets and masks are uniform; shfl lanes may differ.
std::vector<shuffle_case> shfl_cases(i64 W) {
  using enum arg_type;
  return {{fn::shfl, int32, 1, 0, 0},
          {fn::shfl, int64, 1, -7, 0},
          {fn::shfl, int32, 0, 0, 0},
          {fn::shfl, int64, 0, W - 1, 0},
          {fn::shfl, uint32, 0, W, 0},
          {fn::shfl, int16, 0, -1, 0},
          {fn::shfl, int8, 0, 1, 0},
          {fn::shfl, uint8, 0, W / 2, 0},
          {fn::shfl, int64, 0, two32_plus_1, 0},
          {fn::shfl, uint64, 0, two32_plus_1, 0},
          {fn::shfl, uint64, 0, two63_plus_3_bits, 0}};
}
std::vector<shuffle_case> down_up_cases(i64 W) {
  using enum arg_type;
  std::vector<shuffle_case> v;
  for (fn f : {fn::down, fn::up})
    for (const auto& [t, d] : std::vector<std::pair<arg_type, i64>>{{int32, 0},
                                                                    {uint8, 1},
                                                                    {int16, 3},
                                                                    {int64, W - 1},
                                                                    {uint32, W},
                                                                    {int32, W + 5},
                                                                    {int8, 100},
                                                                    {uint64, two32_plus_1},
                                                                    {int64, two32_plus_1},
                                                                    {uint64, u64_max_bits},
                                                                    {uint64, two63_plus_3_bits}})
      v.push_back({f, t, 0, d, 0});
  return v;
}
std::vector<shuffle_case> xor_cases(i64 W) {
  using enum arg_type;
  return {{fn::xor_, int32, 0, 0, 0},          {fn::xor_, uint8, 0, 1 % W, 0}, {fn::xor_, int64, 0, W - 1, 0},
          {fn::xor_, uint64, 0, W / 2 % W, 0}, {fn::xor_, int16, 0, 5 % W, 0}, {fn::xor_, int8, 0, 3 % W, 0}};
}
std::vector<shuffle_case> width_cases(i64 W) {
  using enum arg_type;
  std::vector<shuffle_case> v;
  for (i64 w : sg::widths(W)) {
    for (const auto& [t, per, a] : std::vector<std::tuple<arg_type, int, i64>>{{int32, 1, 3},
                                                                               {int64, 0, -1},
                                                                               {int16, 0, -w - 3},
                                                                               {int8, 0, w},
                                                                               {uint64, 0, (i64{1} << 40) + 3},
                                                                               {uint64, 0, u64_max_bits},
                                                                               {int64, 0, two32_plus_1}})
      v.push_back({fn::shfl, t, per, a, w});
    for (fn f : {fn::down, fn::up})
      for (const auto& [t, d] : std::vector<std::pair<arg_type, i64>>{
               {int32, 0}, {int64, 1}, {uint8, w - 1}, {int16, w}, {uint64, two32_plus_1}})
        v.push_back({f, t, 0, d, w});
    for (const auto& [t, m] :
         std::vector<std::pair<arg_type, i64>>{{int32, 0}, {uint64, w - 1}, {int8, w / 2 % w}, {uint32, 1 % w}})
      v.push_back({fn::xor_, t, 0, m, w});
  }
  return v;
}

/// Runs `table(W)` on every sub-group configuration and shape of backend B and checks every
/// result against the closed form.
template <class B, class Table>
void run_tables(Table&& table) {
  ki_test::make<B>();
  using cfg = ki_test::config<B>;
  for (const auto& b : cfg::sub_group_variants()) {
    const i64 W = ki::sub_group_size(b);
    const auto word = cfg::unspecified_word(b);
    std::vector<shuffle_case> cases = table(W);
    const i64 k = static_cast<i64>(cases.size());
    for (const auto& s : sg::shapes(b)) {
      KI_INFO(cfg::describe(b) << "; " << sg::str(s));
      const i64 total = s.items() * s.groups;
      const u64 salt = static_cast<u64>(W * 1000 + s.items());
      auto run = [&](const auto& be) {
        auto dcases = ki::allocate<shuffle_case>(be, k);
        ki::copyto(be, dcases, cases);
        auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
        auto out = ki_test::filled<i64>(be, total * k, 0);
        ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, shuffle_table{}, dcases, rec, out,
                   salt);
        return sg::launch_result<i64>{ki_test::read(be, rec), ki_test::read(be, out)};
      };
      const auto result = run(b);
      const auto l = sg::observe(b, s, result.rec);
      if (!l.ok) continue;
      const auto& got = result.out;
      std::vector<bool> unspecified_at(got.size(), false);  // results the spec leaves unspecified
      sg::mismatches bad;
      for (i64 slot = 0; slot < total; ++slot) {
        const i64 lane = l.lane_of(slot), size = l.size_of(slot);
        for (i64 c = 0; c < k; ++c) {
          const auto& sc = cases[static_cast<std::size_t>(c)];
          const i64 r = got[static_cast<std::size_t>(slot * k + c)];
          const i64 src = source(sc.f, argument(sc, lane), sc.width, lane, size, W);
          std::string why;
          if (src == sg::unspecified) {
            unspecified_at[static_cast<std::size_t>(slot * k + c)] = true;
            if (word && r != sg::word_pattern<i64>(*word)) why = "reads no work-item: expected the unspecified word";
          } else {
            const i64 from = src == sg::own ? slot : l.at(slot, src);
            if (r != input(from, salt))
              why = "expected the value of lane " +
                    (src == sg::own ? std::to_string(lane) + " (its own)" : std::to_string(src));
          }
          if (!why.empty())
            bad.add(describe(sc) + " at slot " + std::to_string(slot) + " (lane " + std::to_string(lane) + " of " +
                    std::to_string(size) + "): got " + std::to_string(r) + ", " + why);
        }
      }
      bad.check("shuffle results");
      sg::against_reference(
          b, result, run, [&](i64 i) { return unspecified_at[static_cast<std::size_t>(i)]; }, sg::equal_to{});
    }
  }
}

// --- any trivially copyable type ------------------------------------------------------------

struct pair64 {
  std::int64_t a, b;
};
struct mixed {  // fields of less than 4 bytes sharing words, and padding
  std::uint8_t a;
  std::int16_t b;
  std::uint8_t c;
  float d;
};
struct three_bytes {
  std::uint8_t r, g, b;
};
struct nested {
  mixed m;
  std::int8_t x;
  three_bytes t;
};
using float3 = std::array<float, 3>;
using u128 = unsigned __int128;

/// Equality of the values' meaningful bytes (floats bitwise, padding ignored).
inline bool same(std::int8_t x, std::int8_t y) { return x == y; }
inline bool same(std::int16_t x, std::int16_t y) { return x == y; }
inline bool same(std::int64_t x, std::int64_t y) { return x == y; }
inline bool same(char32_t x, char32_t y) { return x == y; }
inline bool same(u128 x, u128 y) { return x == y; }
inline bool same(double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }
#if KI_SPEC_HAS_FLOAT16
inline bool same(_Float16 x, _Float16 y) { return std::memcmp(&x, &y, sizeof x) == 0; }
#endif
inline bool same(const pair64& x, const pair64& y) { return x.a == y.a && x.b == y.b; }
inline bool same(const float3& x, const float3& y) { return std::memcmp(x.data(), y.data(), sizeof(float3)) == 0; }
inline bool same(const mixed& x, const mixed& y) {
  return x.a == y.a && x.b == y.b && x.c == y.c && std::memcmp(&x.d, &y.d, sizeof(float)) == 0;
}
inline bool same(const three_bytes& x, const three_bytes& y) { return x.r == y.r && x.g == y.g && x.b == y.b; }
inline bool same(const nested& x, const nested& y) { return same(x.m, y.m) && x.x == y.x && same(x.t, y.t); }

// std::pair and std::tuple are not trivially copyable: the shuffles move them element by
// element. They are stored in the output as trivially copyable structs.
using pair_t = std::pair<std::int64_t, double>;
using tuple_t = std::tuple<std::int32_t, std::pair<std::int8_t, std::int16_t>, float>;
static_assert(!std::is_trivially_copyable_v<pair_t> && !std::is_trivially_copyable_v<tuple_t>);
struct pair_stored {
  std::int64_t a;
  double b;
};
struct tuple_stored {
  std::int32_t a;
  std::int8_t b;
  std::int16_t c;
  float d;
};
template <class T>
struct stored {
  using type = T;
  static KI_DEVICE T from(const T& v) { return v; }
};
template <>
struct stored<pair_t> {
  using type = pair_stored;
  static KI_DEVICE pair_stored from(const pair_t& v) { return {v.first, v.second}; }
};
template <>
struct stored<tuple_t> {
  using type = tuple_stored;
  static KI_DEVICE tuple_stored from(const tuple_t& v) {
    return {std::get<0>(v), std::get<1>(v).first, std::get<1>(v).second, std::get<2>(v)};
  }
};
inline bool same(const pair_stored& x, const pair_stored& y) { return x.a == y.a && same(x.b, y.b); }
inline bool same(const tuple_stored& x, const tuple_stored& y) {
  return x.a == y.a && x.b == y.b && x.c == y.c && std::memcmp(&x.d, &y.d, sizeof(float)) == 0;
}
/// A read from a lane without a work-item: the backend's word in every byte (element by
/// element for a tuple: each element's bytes start the word afresh).
template <class S>
bool unspecified_is(const S& r, std::uint32_t word) {
  return same(r, sg::word_pattern<S>(word));
}
inline bool unspecified_is(const pair_stored& r, std::uint32_t w) {
  return sg::is_word_pattern(&r.a, sizeof r.a, w) && sg::is_word_pattern(&r.b, sizeof r.b, w);
}
inline bool unspecified_is(const tuple_stored& r, std::uint32_t w) {
  return sg::is_word_pattern(&r.a, sizeof r.a, w) && sg::is_word_pattern(&r.b, sizeof r.b, w) &&
         sg::is_word_pattern(&r.c, sizeof r.c, w) && sg::is_word_pattern(&r.d, sizeof r.d, w);
}

/// A value of each type made from 64 bits of a slot's hash.
template <class T>
KI_DEVICE T make(u64 h) {
  if constexpr (std::is_same_v<T, pair64>) {
    return {static_cast<std::int64_t>(h), static_cast<std::int64_t>(sg::mix(h))};
  } else if constexpr (std::is_same_v<T, mixed>) {
    return {static_cast<std::uint8_t>(h), static_cast<std::int16_t>(h >> 8), static_cast<std::uint8_t>(h >> 24),
            static_cast<float>(static_cast<std::int32_t>(h >> 40))};
  } else if constexpr (std::is_same_v<T, three_bytes>) {
    return {static_cast<std::uint8_t>(h), static_cast<std::uint8_t>(h >> 8), static_cast<std::uint8_t>(h >> 16)};
  } else if constexpr (std::is_same_v<T, nested>) {
    return {make<mixed>(h), static_cast<std::int8_t>(h >> 50), make<three_bytes>(h >> 20)};
  } else if constexpr (std::is_same_v<T, float3>) {
    return {static_cast<float>(h & 0xFFFF), static_cast<float>((h >> 16) & 0xFFFF) * 0.5f,
            -static_cast<float>((h >> 32) & 0xFFFF)};
  } else if constexpr (std::is_same_v<T, double>) {
    return static_cast<double>(static_cast<std::int64_t>(h >> 11)) * 0.25;
  } else if constexpr (std::is_same_v<T, pair_t>) {
    return {static_cast<std::int64_t>(sg::mix(h)), make<double>(h)};
  } else if constexpr (std::is_same_v<T, tuple_t>) {
    return {static_cast<std::int32_t>(h >> 3),
            {static_cast<std::int8_t>(h >> 40), static_cast<std::int16_t>(h >> 17)},
            static_cast<float>(static_cast<std::int32_t>(h >> 44))};
  } else if constexpr (std::is_same_v<T, u128>) {
    return (static_cast<u128>(sg::mix(h)) << 64) | h;
#if KI_SPEC_HAS_FLOAT16
  } else if constexpr (std::is_same_v<T, _Float16>) {
    return static_cast<_Float16>(static_cast<int>(h & 0x3FF)) * static_cast<_Float16>(0.5f);  // exact
#endif
  } else {
    return static_cast<T>(h);
  }
}

/// The typed calls: shfl(v, lane + 1), shfl_down(v, 1), shfl_up(v, 2, min(W, 4)),
/// shfl_xor(v, W - 1), shfl(v, lane + 3, W), shfl_down(v, 2^32 + 1).
constexpr i64 typed_calls = 6;

template <class T>
struct typed_shuffles {
  using S = typename stored<T>::type;
  KI_DEVICE void operator()(ki::span<i64> rec, ki::span<S> out, u64 salt) const {
    const auto p = sg::here();
    sg::record(rec, p.slot);
    const T v = make<T>(sg::mix(static_cast<u64>(p.slot) ^ salt));
    const i64 lane = ki::get_sub_group_local_id(), W = ki::get_max_sub_group_size();
    S* o = &out[p.slot * typed_calls];
    o[0] = stored<T>::from(ki::shfl(v, static_cast<int>(lane + 1)));
    o[1] = stored<T>::from(ki::shfl_down(v, 1u));
    o[2] = stored<T>::from(ki::shfl_up(v, 2, W < 4 ? W : 4));
    o[3] = stored<T>::from(ki::shfl_xor(v, W - 1));
    o[4] = stored<T>::from(ki::shfl(v, lane + 3, static_cast<std::uint32_t>(W)));
    o[5] = stored<T>::from(ki::shfl_down(v, (u64{1} << 32) + 1));
  }
};

/// Whether b shuffles UInt32, which the spec's other types need; where it does not, the device is
/// declared left out (ki_test::left_out), not passed silently.
template <class B>
bool words_shuffled(const B& b) {
  if (ki::supports_shuffle<std::uint32_t>(b)) return true;
  ki_test::left_out(ki_test::config<B>::describe(b),
                    "supports_shuffle<uint32_t> is false: the types it implies are not tested");
  return false;
}

template <class B, class T>
void check_type(const B& b, const char* type) {
  using cfg = ki_test::config<B>;
  KI_INFO("type " << type << "; " << cfg::describe(b));
  // "Other primitive types of 1, 2, 4, 8 or 16 bytes are supported if UInt32 is, and so are
  // isbits structs and tuples of such types (nested ones included)."
  REQUIRE(ki::supports_shuffle<std::uint32_t>(b));  // the callers leave such devices out (words_shuffled)
  CHECK(ki::supports_shuffle<T>(b));
  const i64 W = ki::sub_group_size(b);
  const auto word = cfg::unspecified_word(b);
  for (const auto& s : sg::shapes(b)) {
    KI_INFO(sg::str(s));
    const i64 total = s.items() * s.groups;
    const u64 salt = 77 + static_cast<u64>(s.items());
    using S = typename stored<T>::type;
    auto run = [&](const auto& be) {
      auto rec = ki_test::filled<i64>(be, total * sg::fields, -1);
      auto out = ki::allocate<S>(be, total * typed_calls);
      ki::launch(be, {.numgroups = s.groups, .workgroupsize = s.workgroup()}, typed_shuffles<T>{}, rec, out, salt);
      return sg::launch_result<S>{ki_test::read(be, rec), ki_test::read(be, out)};
    };
    const auto result = run(b);
    const auto l = sg::observe(b, s, result.rec);
    if (!l.ok) continue;
    const auto& got = result.out;
    std::vector<bool> unspecified_at(got.size(), false);  // results the spec leaves unspecified
    const shuffle_case calls[typed_calls] = {
        {fn::shfl, arg_type::int32, 1, 1, 0},           {fn::down, arg_type::uint32, 0, 1, 0},
        {fn::up, arg_type::int64, 0, 2, W < 4 ? W : 4}, {fn::xor_, arg_type::int64, 0, W - 1, 0},
        {fn::shfl, arg_type::int64, 1, 3, W},           {fn::down, arg_type::uint64, 0, two32_plus_1, 0}};
    sg::mismatches bad;
    for (i64 slot = 0; slot < total; ++slot) {
      const i64 lane = l.lane_of(slot), size = l.size_of(slot);
      for (i64 c = 0; c < typed_calls; ++c) {
        const auto& sc = calls[c];  // per_item here: lane + bits (as typed_shuffles passes them)
        const i128 arg = sc.per_item ? lane + sc.bits : argument(sc, lane);
        const i64 src = source(sc.f, arg, sc.width, lane, size, W);
        const S r = got[static_cast<std::size_t>(slot * typed_calls + c)];
        bool ok = true;
        if (src == sg::unspecified) {
          unspecified_at[static_cast<std::size_t>(slot * typed_calls + c)] = true;
          if (word) ok = unspecified_is(r, *word);
        } else {
          const i64 from = src == sg::own ? slot : l.at(slot, src);
          ok = same(r, stored<T>::from(make<T>(sg::mix(static_cast<u64>(from) ^ salt))));
        }
        if (!ok)
          bad.add("call " + std::to_string(c) + " at slot " + std::to_string(slot) + " (lane " + std::to_string(lane) +
                  " of " + std::to_string(size) + ", source " + std::to_string(src) + ")");
      }
    }
    bad.check(std::string("shuffles of ") + type);
    sg::against_reference(
        b, result, run, [&](i64 i) { return unspecified_at[static_cast<std::size_t>(i)]; },
        [](const S& x, const S& y) { return same(x, y); });
  }
}

}  // namespace ki_spec_sub_group_shuffles

using namespace ki_spec_sub_group_shuffles;

TEMPLATE_LIST_TEST_CASE("sub_group: shfl reads the given lane without wrapping, unspecified where it has no work-item",
                        "[sub_group]", ki_test::backends) {
  run_tables<TestType>(shfl_cases);
}

TEMPLATE_LIST_TEST_CASE("sub_group: shfl_down / shfl_up: own value past the width or before lane 0, never a wrap",
                        "[sub_group]", ki_test::backends) {
  run_tables<TestType>(down_up_cases);
}

TEMPLATE_LIST_TEST_CASE("sub_group: shfl_xor reads lane xor mask, for masks from 0 to W - 1", "[sub_group]",
                        ki_test::backends) {
  run_tables<TestType>(xor_cases);
}

TEMPLATE_LIST_TEST_CASE("sub_group: shuffles with a width work within the caller's segment (CUDA's rules)",
                        "[sub_group]", ki_test::backends) {
  run_tables<TestType>(width_cases);
}

TEMPLATE_LIST_TEST_CASE("sub_group: offsets are compared before narrowing: shfl_down(v, 2^32 + 1) is v itself",
                        "[sub_group]", ki_test::backends) {
  // Narrowed to 32 bits, the offset would be 1 (and the lane 1): the spec's lane + offset is
  // past the width, so every work-item gets its own value, and lane 2^32 + 1 has no work-item.
  run_tables<TestType>([](i64 W) {
    using enum arg_type;
    return std::vector<shuffle_case>{{fn::down, uint64, 0, two32_plus_1, 0},
                                     {fn::down, int64, 0, two32_plus_1, 0},
                                     {fn::up, uint64, 0, two32_plus_1, 0},
                                     {fn::up, int64, 0, two32_plus_1, 0},
                                     {fn::shfl, uint64, 0, two32_plus_1, 0},
                                     {fn::shfl, int64, 0, two32_plus_1, 0},
                                     {fn::down, uint64, 0, two32_plus_1, W < 2 ? W : 2},
                                     {fn::up, int64, 0, two32_plus_1, 1}};
  });
}

TEMPLATE_LIST_TEST_CASE("sub_group: any trivially copyable type can be shuffled (supports_shuffle)", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  int tested = 0;
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    if (!words_shuffled(b)) continue;
    ++tested;
    check_type<TestType, std::int8_t>(b, "int8");
    check_type<TestType, std::int16_t>(b, "int16");
    check_type<TestType, std::int64_t>(b, "int64");
    check_type<TestType, char32_t>(b, "char32_t");
    check_type<TestType, double>(b, "double");  // moved as words, even without supports_float64
    check_type<TestType, pair64>(b, "struct of two int64 (16 bytes)");
    check_type<TestType, mixed>(b, "struct {uint8, int16, uint8, float}");
    check_type<TestType, three_bytes>(b, "struct of three uint8 (3 bytes)");
    check_type<TestType, nested>(b, "nested struct");
    check_type<TestType, ki_spec_sub_group_shuffles::float3>(b, "std::array<float, 3>");  // (HIP has a ::float3)
    check_type<TestType, u128>(b, "unsigned __int128");
  }
  if (tested == 0) SKIP("supports_shuffle<uint32_t> is false for every configuration of this backend");
}

TEMPLATE_LIST_TEST_CASE("sub_group: std::pair and std::tuple are shuffled element by element (supports_shuffle)",
                        "[sub_group]", ki_test::backends) {
  // "... and so are isbits structs and tuples of such types (nested ones included)": std::pair
  // and std::tuple are not trivially copyable in C++, so they are moved element by element.
  ki_test::make<TestType>();
  int tested = 0;
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    if (!words_shuffled(b)) continue;
    ++tested;
    check_type<TestType, pair_t>(b, "std::pair<int64, double>");
    check_type<TestType, tuple_t>(b, "std::tuple<int32, std::pair<int8, int16>, float>");
  }
  if (tested == 0) SKIP("supports_shuffle<uint32_t> is false for every configuration of this backend");
}

#if KI_SPEC_HAS_FLOAT16
TEMPLATE_LIST_TEST_CASE("sub_group: _Float16 can be shuffled (a primitive type of 2 bytes)", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  int tested = 0;
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    if (!words_shuffled(b)) continue;
    ++tested;
    check_type<TestType, _Float16>(b, "_Float16");
  }
  if (tested == 0) SKIP("supports_shuffle<uint32_t> is false for every configuration of this backend");
}
#endif
