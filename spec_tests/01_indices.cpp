// Spec: get_local_id, get_group_id, get_local_size, get_num_groups, get_global_id,
// get_global_size (0-based in ki), and their integer type parameter T: "the result is the exact
// value modulo T, as if computed with x % T".
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "backends.hpp"

namespace ki_spec_indices {

constexpr int record = 18;  // six queries, x y z each

template <class T>
KI_DEVICE inline void put(ki::span<T> out, std::int64_t at, ki::xyz<T> v) {
  out[at] = v.x;
  out[at + 1] = v.y;
  out[at + 2] = v.z;
}

/// Every work-item stores its six queries (as T) at its global linear index (x fastest).
template <class T>
struct record_queries {
  KI_DEVICE void operator()(ki::span<T> out) const {
    const auto gid = ki::get_global_id();
    const auto gs = ki::get_global_size();
    const std::int64_t at = record * (gid.x + gs.x * (gid.y + gs.y * gid.z));
    put(out, at + 0, ki::get_local_id<T>());
    put(out, at + 3, ki::get_group_id<T>());
    put(out, at + 6, ki::get_local_size<T>());
    put(out, at + 9, ki::get_num_groups<T>());
    put(out, at + 12, ki::get_global_id<T>());
    put(out, at + 15, ki::get_global_size<T>());
  }
};

/// The same with the default type (std::int64_t), which must be what the queries return.
struct record_default {
  KI_DEVICE void operator()(ki::span<std::int64_t> out) const {
    static_assert(std::is_same_v<decltype(ki::get_local_id()), ki::xyz<std::int64_t>>);
    static_assert(std::is_same_v<decltype(ki::get_group_id()), ki::xyz<std::int64_t>>);
    static_assert(std::is_same_v<decltype(ki::get_local_size()), ki::xyz<std::int64_t>>);
    static_assert(std::is_same_v<decltype(ki::get_num_groups()), ki::xyz<std::int64_t>>);
    static_assert(std::is_same_v<decltype(ki::get_global_id()), ki::xyz<std::int64_t>>);
    static_assert(std::is_same_v<decltype(ki::get_global_size()), ki::xyz<std::int64_t>>);
    const auto gid = ki::get_global_id();
    const auto gs = ki::get_global_size();
    const std::int64_t at = record * (gid.x + gs.x * (gid.y + gs.y * gid.z));
    put(out, at + 0, ki::get_local_id());
    put(out, at + 3, ki::get_group_id());
    put(out, at + 6, ki::get_local_size());
    put(out, at + 9, ki::get_num_groups());
    put(out, at + 12, ki::get_global_id());
    put(out, at + 15, ki::get_global_size());
  }
};

struct geometry {
  std::array<std::int64_t, 3> groups, items;
  int rank;  // how many dimensions the launch names
};

/// The closed form: value k of the record of the work-item at global linear slot s.
inline std::int64_t expected(const geometry& g, std::int64_t i) {
  const std::int64_t s = i / record, k = i % record;
  const std::int64_t nx = g.groups[0] * g.items[0], ny = g.groups[1] * g.items[1];
  const std::array<std::int64_t, 3> global{s % nx, (s / nx) % ny, s / (nx * ny)};
  const int d = static_cast<int>(k % 3);
  switch (k / 3) {
    case 0: return global[d] % g.items[d];     // local id
    case 1: return global[d] / g.items[d];     // group id
    case 2: return g.items[d];                 // local size
    case 3: return g.groups[d];                // num groups
    case 4: return global[d];                  // global id
    default: return g.groups[d] * g.items[d];  // global size
  }
}

inline std::int64_t total(const geometry& g) {
  std::int64_t n = 1;
  for (int d = 0; d < 3; ++d) n *= g.groups[d] * g.items[d];
  return n;
}

/// Runs and checks g; false (declared: ki_test::left_out) where g is beyond b's limits.
template <class T, class B, class K>
bool run_and_check(const B& b, const K& kernel, const geometry& g) {
  if (!ki_test::fits_or_left_out(b, g.groups, g.items)) return false;
  KI_INFO("numgroups " << ki_test::str(g.groups) << ", workgroupsize " << ki_test::str(g.items) << ", rank " << g.rank);
  // Poison-free start: a value no query can produce in these launches.
  auto out = ki_test::filled<T>(b, total(g) * record, static_cast<T>(-1));
  kernel({.numgroups = ki_test::dims_of(g.groups, g.rank), .workgroupsize = ki_test::dims_of(g.items, g.rank)}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [&](std::int64_t i) { return static_cast<T>(expected(g, i)); }, "index queries");
  return true;
}

}  // namespace ki_spec_indices

using namespace ki_spec_indices;

TEMPLATE_LIST_TEST_CASE("indices: queries in 1-D launches", "[indices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, record_default{});
  for (const geometry& g :
       {geometry{{1, 1, 1}, {1, 1, 1}, 1}, geometry{{3, 1, 1}, {5, 1, 1}, 1}, geometry{{7, 1, 1}, {32, 1, 1}, 1},
        geometry{{2, 1, 1}, {1000, 1, 1}, 1}, geometry{{100, 1, 1}, {3, 1, 1}, 1}, geometry{{4, 1, 1}, {256, 1, 1}, 1}})
    run_and_check<std::int64_t>(b, k, g);
}

TEMPLATE_LIST_TEST_CASE("indices: queries in 2-D launches", "[indices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, record_default{});
  for (const geometry& g : {geometry{{2, 3, 1}, {4, 3, 1}, 2}, geometry{{3, 1, 1}, {1, 5, 1}, 2},
                            geometry{{1, 4, 1}, {16, 16, 1}, 2}, geometry{{5, 2, 1}, {7, 1, 1}, 2}})
    run_and_check<std::int64_t>(b, k, g);
}

TEMPLATE_LIST_TEST_CASE("indices: queries in 3-D launches", "[indices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto k = ki::kernel_function(b, record_default{});
  for (const geometry& g :
       {geometry{{2, 3, 2}, {3, 2, 4}, 3}, geometry{{1, 2, 3}, {5, 1, 2}, 3}, geometry{{2, 2, 2}, {8, 4, 4}, 3},
        geometry{{1, 1, 5}, {1, 1, 7}, 3}, geometry{{3, 1, 2}, {2, 3, 1}, 3}})
    run_and_check<std::int64_t>(b, k, g);
}

namespace ki_spec_indices {
/// Launches where some value of every query exceeds 8 and 16 bits, in every dimension.
inline const std::vector<geometry> wide_geometries = {
    {{300, 1, 1}, {120, 1, 1}, 1},  // group id x to 299, global id x to 35999, global size 36000
    {{2, 1, 1}, {1000, 1, 1}, 1},   // local id x to 999, local size 1000
    {{1, 130, 1}, {2, 260, 1}, 2},  // local id y to 259, global id y to 33799
    {{1, 1, 600}, {1, 1, 60}, 3},   // group id z to 599, num groups 600, global size z 36000
    // Within the strict profile's 256 work-items, so that local ids and sizes are narrowed on
    // every profile: local id to 255 (beyond int8), local size 256 (0 as uint8).
    {{3, 1, 1}, {256, 1, 1}, 1},  // local id x to 255, local size x 256
    {{2, 2, 1}, {1, 256, 1}, 2},  // local id y to 255, local size y 256, global id y to 511
};

template <class T, class B>
void check_type(const B& b) {
  static_assert(std::is_same_v<decltype(ki::get_local_id<T>()), ki::xyz<T>>);
  static_assert(std::is_same_v<decltype(ki::get_global_size<T>()), ki::xyz<T>>);
  const auto k = ki::kernel_function(b, record_queries<T>{});
  std::int64_t ran = 0;
  for (const geometry& g : wide_geometries) ran += run_and_check<T>(b, k, g) ? 1 : 0;
  // (Every profile the suite runs has room for the two shapes of 256 work-items.)
  ki_test::skip_if_none_ran(ran, ki_test::limits(b));
}
}  // namespace ki_spec_indices

TEMPLATE_LIST_TEST_CASE("indices: the type parameter gives the exact value modulo T", "[indices]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  // int64 first: -1 marks an unwritten slot, which no query produces here, so this also shows
  // that every work-item of these launches ran exactly where expected.
  SECTION("int64") { check_type<std::int64_t>(b); }
  SECTION("int32") { check_type<std::int32_t>(b); }
  SECTION("uint8") { check_type<std::uint8_t>(b); }
  SECTION("uint64") { check_type<std::uint64_t>(b); }
  SECTION("int16") { check_type<std::int16_t>(b); }
  SECTION("int8") { check_type<std::int8_t>(b); }
  SECTION("uint16") { check_type<std::uint16_t>(b); }
  SECTION("uint32") { check_type<std::uint32_t>(b); }
}
