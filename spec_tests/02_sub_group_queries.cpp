// Spec: get_sub_group_size, get_max_sub_group_size, get_num_sub_groups, get_sub_group_id,
// get_sub_group_local_id, and sub_group_size(backend), for the linear layout of
// supports_linear_subgroups: "for a 1-D work-group or one whose x extent is a multiple of the
// sub-group width W: the work-item with the linear local index lin (x fastest) is in sub-group
// fld(lin - 1, W) + 1, at lane mod(lin - 1, W) + 1, the sub-group ids are 1:cld(n, W) ... and
// only the last sub-group can be partial" (0-based in ki: lin / W and lin % W).
// Other shapes are checked only against what the spec promises for every layout.
#include <algorithm>
#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "backends.hpp"

namespace ki_spec_sub_group_queries {

constexpr int record = 5;

/// Every work-item stores size, max size, count, id, lane (as int64 and as uint8) at
/// (group linear id * n + linear local id).
struct record_sub_groups {
  KI_DEVICE void operator()(ki::span<std::int64_t> out, ki::span<std::uint8_t> out8) const {
    static_assert(std::is_same_v<decltype(ki::get_sub_group_size()), std::int64_t>);
    const auto l = ki::get_local_id(), ls = ki::get_local_size();
    const auto g = ki::get_group_id(), ng = ki::get_num_groups();
    const std::int64_t n = ls.x * ls.y * ls.z;
    const std::int64_t lin = l.x + ls.x * (l.y + ls.y * l.z);
    const std::int64_t at = record * ((g.x + ng.x * (g.y + ng.y * g.z)) * n + lin);
    out[at + 0] = ki::get_sub_group_size();
    out[at + 1] = ki::get_max_sub_group_size();
    out[at + 2] = ki::get_num_sub_groups();
    out[at + 3] = ki::get_sub_group_id();
    out[at + 4] = ki::get_sub_group_local_id();
    out8[at + 0] = ki::get_sub_group_size<std::uint8_t>();
    out8[at + 1] = ki::get_max_sub_group_size<std::uint8_t>();
    out8[at + 2] = ki::get_num_sub_groups<std::uint8_t>();
    out8[at + 3] = ki::get_sub_group_id<std::uint8_t>();
    out8[at + 4] = ki::get_sub_group_local_id<std::uint8_t>();
  }
};

struct results {
  std::vector<std::int64_t> v;
  std::vector<std::uint8_t> v8;
  std::int64_t n;       // work-items per group
  std::int64_t groups;  // number of groups
};

template <class B>
results run(const B& b, const std::array<std::int64_t, 3>& shape, int rank, std::int64_t groups) {
  const std::int64_t n = shape[0] * shape[1] * shape[2];
  auto out = ki_test::filled<std::int64_t>(b, groups * n * record, -1);
  auto out8 = ki_test::filled<std::uint8_t>(b, groups * n * record, 0);
  ki::launch(b, {.numgroups = groups, .workgroupsize = ki_test::dims_of(shape, rank)}, record_sub_groups{}, out, out8);
  ki::synchronize(b);
  return {ki_test::read(b, out), ki_test::read(b, out8), n, groups};
}

/// The closed form for the linear layout.
inline std::int64_t linear_expected(std::int64_t n, std::int64_t w, std::int64_t i) {
  const std::int64_t lin = (i / record) % n, k = i % record;
  const std::int64_t count = (n + w - 1) / w, id = lin / w;
  switch (k) {
    case 0: return id < count - 1 ? w : n - (count - 1) * w;
    case 1: return w;
    case 2: return count;
    case 3: return id;
    default: return lin % w;
  }
}

/// The shapes whose layout the spec fixes (1-D, or x a multiple of W), within the limits.
inline std::vector<std::pair<std::array<std::int64_t, 3>, int>> linear_shapes(std::int64_t w, std::int64_t max_size,
                                                                              std::array<std::int64_t, 3> max_dims) {
  std::vector<std::pair<std::array<std::int64_t, 3>, int>> all;
  for (std::int64_t n :
       {std::int64_t(1), std::int64_t(2), w - 1, w, w + 1, 2 * w, 3 * w - 1, 5 * w + 3, max_size - 1, max_size})
    if (n >= 1) all.push_back({{n, 1, 1}, 1});
  all.push_back({{w, 2, 1}, 2});
  all.push_back({{w, 3, 2}, 3});
  all.push_back({{2 * w, 3, 1}, 2});
  all.push_back({{3 * w, 1, 2}, 3});
  std::vector<std::pair<std::array<std::int64_t, 3>, int>> fit;
  for (const auto& s : all) {
    const auto& e = s.first;
    if (e[0] * e[1] * e[2] <= max_size && e[0] <= max_dims[0] && e[1] <= max_dims[1] && e[2] <= max_dims[2])
      fit.push_back(s);
    else
      ki_test::left_out("work-group " + ki_test::str(e) + " at W = " + std::to_string(w),
                        "beyond this device's limits (max_work_group_size " + std::to_string(max_size) +
                            ", max_work_group_dims " + ki_test::str(max_dims) + ")");
  }
  return fit;
}

/// Fields per work-item of lanes_in_branches: lane, sub-group id, size where every work-item is
/// active, then the lane, id and size again in a branch that a third of the work-items skip,
/// the lane in a nested branch that three quarters skip, and the lane after a fifth of the
/// work-items have returned.
constexpr int branch_fields = 8;

/// "get_sub_group_local_id ... doesn't depend on which work-items of the sub-group are active,
/// e.g. in a divergent branch": the queries asked again where only some work-items are active.
/// Work-items that skip a branch leave its fields at -1.
struct lanes_in_branches {
  KI_DEVICE void operator()(ki::span<std::int64_t> out) const {
    const auto l = ki::get_local_id(), ls = ki::get_local_size();
    const auto g = ki::get_group_id(), ng = ki::get_num_groups();
    const std::int64_t n = ls.x * ls.y * ls.z;
    const std::int64_t lin = l.x + ls.x * (l.y + ls.y * l.z);
    const std::int64_t group = g.x + ng.x * (g.y + ng.y * g.z);
    const std::int64_t at = branch_fields * (group * n + lin);
    out[at + 0] = ki::get_sub_group_local_id();
    out[at + 1] = ki::get_sub_group_id();
    out[at + 2] = ki::get_sub_group_size();
    if ((lin + group) % 3 != 1) {
      out[at + 3] = ki::get_sub_group_local_id();
      out[at + 4] = ki::get_sub_group_id();
      out[at + 5] = ki::get_sub_group_size();
    }
    if (lin % 2 == 0)
      if (lin % 4 == 0) out[at + 6] = ki::get_sub_group_local_id();
    if (lin % 5 == 2) return;
    out[at + 7] = ki::get_sub_group_local_id();
  }
};

/// Which fields of lanes_in_branches work-item `lin` of group `group` writes, and from which
/// field of the uniform part each one's value must come (-1: not written).
inline int branch_source(std::int64_t lin, std::int64_t group, int field) {
  switch (field) {
    case 0:
    case 1:
    case 2: return field;
    case 3:
    case 4:
    case 5: return (lin + group) % 3 != 1 ? field - 3 : -1;
    case 6: return lin % 4 == 0 ? 0 : -1;
    default: return lin % 5 != 2 ? 0 : -1;
  }
}

}  // namespace ki_spec_sub_group_queries

using namespace ki_spec_sub_group_queries;

TEMPLATE_LIST_TEST_CASE("sub_group: get_max_sub_group_size is sub_group_size(backend)", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    const std::int64_t w = ki::sub_group_size(b), configured = ki_test::config<TestType>::configured_width(b);
    KI_INFO("sub_group_size(backend) = " << w << ", configured " << configured);
    if (configured > 0) CHECK(w == configured);  // the width the backend value was given
    else CHECK((w == 32 || w == 64));            // an AMD GPU's wavefront
    const auto r = run(b, {3, 1, 1}, 1, 2);
    for (std::int64_t i = 0; i < r.groups * r.n; ++i) CHECK(r.v[static_cast<std::size_t>(record * i + 1)] == w);
  }
}

TEMPLATE_LIST_TEST_CASE("sub_group: linear layout for 1-D groups and x extents that are multiples of W", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  int tested = 0;
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    if (!ki::supports_linear_subgroups(b)) continue;  // the layout is not promised there
    CHECK(ki::supports_subgroups(b));                 // "Implies supports_subgroups."
    ++tested;
    const std::int64_t w = ki::sub_group_size(b);
    for (const auto& [shape, rank] : linear_shapes(w, ki::max_work_group_size(b), ki::max_work_group_dims(b))) {
      KI_INFO("W = " << w << ", work-group " << ki_test::str(shape));
      const auto r = run(b, shape, rank, 3);
      ki_test::check_all(
          r.v, [&](std::int64_t i) { return linear_expected(r.n, w, i); }, "sub-group queries");
      ki_test::check_all(
          r.v8, [&](std::int64_t i) { return static_cast<std::uint8_t>(linear_expected(r.n, w, i)); },
          "sub-group queries as uint8 (exact modulo 256)");
      // Read from what the work-items reported, not the closed form: "only the last sub-group
      // can be partial", and "a 1-D work-group of at most W work-items is a single sub-group".
      for (std::int64_t g = 0; g < r.groups; ++g) {
        std::map<std::int64_t, std::int64_t> size_of;  // sub-group id -> get_sub_group_size
        for (std::int64_t lin = 0; lin < r.n; ++lin) {
          const auto* q = &r.v[static_cast<std::size_t>(record * (g * r.n + lin))];
          size_of[q[3]] = q[0];
        }
        if (rank == 1 && r.n <= w) CHECK(size_of.size() == 1);
        std::int64_t partial = 0, last = -1;
        for (const auto& [id, size] : size_of)
          if (size < w) ++partial, last = id;
        CHECK(partial <= 1);
        if (partial == 1) CHECK(last == size_of.rbegin()->first);
      }
    }
  }
  if (tested == 0) SKIP("supports_linear_subgroups is false for every configuration of this backend");
}

TEMPLATE_LIST_TEST_CASE("sub_group: guarantees of every layout, for every work-group shape", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    const std::int64_t w = ki::sub_group_size(b), max_size = ki::max_work_group_size(b);
    const auto max_dims = ki::max_work_group_dims(b);
    std::vector<std::array<std::int64_t, 3>> shapes = {{3, 5, 1},     {5, 3, 4},     {w + 1, 2, 2},
                                                       {w + 3, 7, 1}, {1, 1, 1},     {w, 1, 1},
                                                       {w + 1, 1, 1}, {2 * w, 3, 1}, {max_size, 1, 1}};
    if (w > 2) shapes.push_back({w - 1, 3, 1});
    for (const auto& shape : shapes) {
      const std::int64_t n = shape[0] * shape[1] * shape[2];
      if (n > max_size || shape[0] > max_dims[0] || shape[1] > max_dims[1] || shape[2] > max_dims[2]) {
        ki_test::left_out("work-group " + ki_test::str(shape) + " at W = " + std::to_string(w),
                          "beyond this device's limits (" + ki_test::limits(b) + ")");
        continue;
      }
      KI_INFO("W = " << w << ", linear promise " << ki::supports_linear_subgroups(b) << ", work-group "
                     << ki_test::str(shape));
      const auto r = run(b, shape, 3, 2);
      for (std::int64_t g = 0; g < r.groups; ++g) {
        // Per sub-group id: its size as reported, and the lanes seen. (The lanes are a sorted
        // vector, not a std::set: in C++20, a class holding std::pair<K, V> whose V has a
        // non-constexpr destructor, as std::map<K, std::set<...>>'s nodes do, crashes Debian's
        // clang 15 in hipcc's device pass; docs/offload.md, "Known problems".)
        std::map<std::int64_t, std::int64_t> size_of;
        std::map<std::int64_t, std::vector<std::int64_t>> lanes;
        std::int64_t bad = 0;
        const std::int64_t count = r.v[static_cast<std::size_t>(record * g * n + 2)];
        for (std::int64_t lin = 0; lin < n; ++lin) {
          const auto* q = &r.v[static_cast<std::size_t>(record * (g * n + lin))];
          const std::int64_t size = q[0], max = q[1], cnt = q[2], id = q[3], lane = q[4];
          if (max != w || cnt != count || size < 1 || size > w || id < 0 || id >= cnt || lane < 0 || lane >= size)
            ++bad;
          if (size_of.count(id) && size_of[id] != size) ++bad;  // all members agree on the size
          size_of[id] = size;
          lanes[id].push_back(lane);
        }
        for (auto& [id, ls] : lanes) {  // (id, lane) identifies one work-item: no lane twice
          std::sort(ls.begin(), ls.end());
          const auto distinct = std::unique(ls.begin(), ls.end());
          bad += ls.end() - distinct;
          ls.erase(distinct, ls.end());
        }
        CHECK(bad == 0);
        // "at least cld(prod(get_local_size()), get_max_sub_group_size())", at most one per item.
        CHECK(count >= (n + w - 1) / w);
        CHECK(count <= n);
        // Every sub-group has work-items, and one of size s has exactly the lanes 0..s-1.
        CHECK(static_cast<std::int64_t>(lanes.size()) == count);
        for (const auto& [id, ls] : lanes) {
          CHECK(static_cast<std::int64_t>(ls.size()) == size_of[id]);
          CHECK(*ls.rbegin() == size_of[id] - 1);
        }
      }
    }
  }
}

TEMPLATE_LIST_TEST_CASE("sub_group: the lane does not depend on which work-items are active", "[sub_group]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  for (const auto& b : ki_test::config<TestType>::sub_group_variants()) {
    const std::int64_t w = ki::sub_group_size(b);
    for (const std::array<std::int64_t, 3>& shape :
         std::vector<std::array<std::int64_t, 3>>{{w + 3, 1, 1}, {3, 5, 1}, {2 * w, 2, 1}, {5, 3, 4}}) {
      const std::int64_t groups = 3;
      if (!ki_test::fits_or_left_out(b, {groups, 1, 1}, shape)) continue;
      KI_INFO(ki_test::config<TestType>::describe(b) << ", work-group " << ki_test::str(shape));
      const std::int64_t n = shape[0] * shape[1] * shape[2];
      auto out = ki_test::filled<std::int64_t>(b, groups * n * branch_fields, -1);
      ki::launch(b, {.numgroups = groups, .workgroupsize = ki_test::dims_of(shape, 3)}, lanes_in_branches{}, out);
      const auto got = ki_test::read(b, out);
      const bool linear = ki::supports_linear_subgroups(b) && shape[1] == 1 && shape[2] == 1;
      ki_test::check_all(
          got,
          [&](std::int64_t i) -> std::int64_t {
            const std::int64_t item = i / branch_fields, lin = item % n, group = item / n;
            const int field = static_cast<int>(i % branch_fields), from = branch_source(lin, group, field);
            if (from < 0) return -1;
            // Where the layout is promised (1-D, linear), the uniform values are its closed form;
            // elsewhere they are what the work-item saw with all work-items active.
            if (linear && from == 0) return lin % w;
            if (linear && from == 1) return lin / w;
            return got[static_cast<std::size_t>(item * branch_fields + from)];
          },
          "lane, sub-group id and size in branches and after early returns, against all active");
    }
  }
}
