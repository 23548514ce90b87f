// Spec: barrier(): "Wait until all work-items of the work-group have reached the barrier.
// Afterwards, the writes to global and local memory that each work-item made before the barrier
// are visible to all work-items of the work-group."
// Each test reads values that other work-items wrote before the barrier; without the barrier
// they would read stale or uninitialised memory.
#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "backends.hpp"

namespace ki_spec_barrier {

using i64 = std::int64_t;

/// barrier(), or barrier(flags) (Metal's mem_flags) where flags >= 0.
KI_DEVICE inline void barrier_with(int flags) {
  if (flags < 0) ki::barrier();
  else ki::barrier(static_cast<ki::barrier_flags>(flags));
}

/// Through local memory: item l reads what item l + 1 (mod n) wrote.
struct neighbour_local {
  int flags = -1;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 256>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = 1000 * g + l;
    barrier_with(flags);
    out[g * n + l] = buf[(l + 1) % n];
  }
};

/// Through global memory: item l reads what item l - 1 (mod n) of its group wrote.
struct neighbour_global {
  int flags = -1;
  KI_DEVICE void operator()(ki::span<i64> scratch, ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    scratch[g * n + l] = 7 * (g * n + l) + 1;
    barrier_with(flags);
    out[g * n + l] = scratch[g * n + (l + n - 1) % n];
  }
};

/// `iters` rounds of "read the right neighbour, barrier, write it + 1, barrier" (2 barriers each),
/// in local memory: afterwards item l holds (l + iters) % n + iters.
struct rotate_local {
  KI_DEVICE void operator()(ki::span<i64> out, int iters) const {
    auto buf = ki::localmemory<i64, 1024>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = l;
    ki::barrier();
    for (int k = 0; k < iters; ++k) {
      const i64 v = buf[(l + 1) % n];
      ki::barrier();
      buf[l] = v + 1;
      ki::barrier();
    }
    out[g * n + l] = buf[l];
  }
};

/// The same rotation in the group's slice of global memory.
struct rotate_global {
  KI_DEVICE void operator()(ki::span<i64> buf, int iters) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, base = ki::get_group_id().x * n;
    buf[base + l] = l;
    ki::barrier();
    for (int k = 0; k < iters; ++k) {
      const i64 v = buf[base + (l + 1) % n];
      ki::barrier();
      buf[base + l] = v + 1;
      ki::barrier();
    }
  }
};

/// Hillis-Steele inclusive scan of 1..n: item l ends with (l + 1)(l + 2) / 2.
struct scan_local {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 1024>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    buf[l] = l + 1;
    ki::barrier();
    for (i64 off = 1; off < n; off *= 2) {
      const i64 v = l >= off ? buf[l - off] : 0;
      ki::barrier();
      buf[l] += v;
      ki::barrier();
    }
    out[g * n + l] = buf[l];
  }
};

/// Multi-dimensional groups: item (x, y, z) writes its code, then reads the code of
/// (x + 1, y + 1, z + 1) (each mod its extent); then, after a second barrier, every item
/// overwrites its slot with what it read and reads the slot of (x - 1, y, z - 1).
struct neighbour_3d {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto buf = ki::localmemory<i64, 512>([] {});
    const auto l = ki::get_local_id(), s = ki::get_local_size(), g = ki::get_group_id(), ng = ki::get_num_groups();
    const auto lin = [&](i64 x, i64 y, i64 z) { return x + s.x * (y + s.y * z); };
    const i64 gl = g.x + ng.x * (g.y + ng.y * g.z);
    buf[lin(l.x, l.y, l.z)] = gl * 1000000 + l.x * 10000 + l.y * 100 + l.z;
    ki::barrier();
    const i64 v = buf[lin((l.x + 1) % s.x, (l.y + 1) % s.y, (l.z + 1) % s.z)];
    ki::barrier();
    buf[lin(l.x, l.y, l.z)] = v;
    ki::barrier();
    out[gl * s.x * s.y * s.z + lin(l.x, l.y, l.z)] = buf[lin((l.x + s.x - 1) % s.x, l.y, (l.z + s.z - 1) % s.z)];
  }
};

inline i64 code(i64 g, i64 x, i64 y, i64 z) { return g * 1000000 + x * 10000 + y * 100 + z; }

/// A work-item's private values (integers, floating point, a private array) live across
/// `rounds` barriers, changed between them; 12 values per item.
struct private_across_barriers {
  KI_DEVICE void operator()(ki::span<double> out, int rounds) const {
    const i64 l = ki::get_local_id().x;
    i64 a = 3 * l + 1, b = l ^ 0x55, c = l * l, d = -l;
    unsigned u = static_cast<unsigned>(l) * 2654435761u;
    double x = 0.5 * static_cast<double>(l), y = 1.0 / static_cast<double>(l + 1);
    float f = static_cast<float>(l) * 0.25f;
    i64 arr[8];
    for (int k = 0; k < 8; ++k) arr[k] = l + k;
    for (int r = 0; r < rounds; ++r) {
      ki::barrier();
      a += r, b ^= r, c -= 2 * r, d += l;
      u = u * 1664525u + 1013904223u;
      x += 1.0, y *= 2.0, f += 0.5f;
      arr[r % 8] += arr[(r + 3) % 8] % 7;
    }
    i64 sum = 0;
    for (int k = 0; k < 8; ++k) sum = sum * 3 + arr[k];
    const double v[12] = {static_cast<double>(a),
                          static_cast<double>(b),
                          static_cast<double>(c),
                          static_cast<double>(d),
                          static_cast<double>(u),
                          x,
                          y,
                          static_cast<double>(f),
                          static_cast<double>(sum),
                          static_cast<double>(arr[0]),
                          static_cast<double>(arr[7]),
                          static_cast<double>(l)};
    for (int k = 0; k < 12; ++k) out[12 * ki::get_global_id().x + k] = v[k];
  }
};

/// private_across_barriers without barriers, on the host, for work-item l.
std::array<double, 12> private_expected(i64 l, int rounds) {
  i64 a = 3 * l + 1, b = l ^ 0x55, c = l * l, d = -l;
  unsigned u = static_cast<unsigned>(l) * 2654435761u;
  double x = 0.5 * static_cast<double>(l), y = 1.0 / static_cast<double>(l + 1);
  float f = static_cast<float>(l) * 0.25f;
  i64 arr[8];
  for (int k = 0; k < 8; ++k) arr[k] = l + k;
  for (int r = 0; r < rounds; ++r) {
    a += r, b ^= r, c -= 2 * r, d += l;
    u = u * 1664525u + 1013904223u;
    x += 1.0, y *= 2.0, f += 0.5f;
    arr[r % 8] += arr[(r + 3) % 8] % 7;
  }
  i64 sum = 0;
  for (int k = 0; k < 8; ++k) sum = sum * 3 + arr[k];
  return {static_cast<double>(a),
          static_cast<double>(b),
          static_cast<double>(c),
          static_cast<double>(d),
          static_cast<double>(u),
          x,
          y,
          static_cast<double>(f),
          static_cast<double>(sum),
          static_cast<double>(arr[0]),
          static_cast<double>(arr[7]),
          static_cast<double>(l)};
}

}  // namespace ki_spec_barrier

using namespace ki_spec_barrier;

TEMPLATE_LIST_TEST_CASE("barrier: makes local memory writes visible to the group", "[barrier]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 n : {1, 2, 31, 100, 256}) {
    if (!ki_test::fits_or_left_out(b, {5, 1, 1}, {n, 1, 1})) continue;
    KI_INFO("work-group size " << n);
    const i64 groups = 5;
    auto out = ki_test::filled<i64>(b, groups * n, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, neighbour_local{}, out);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out), [&](i64 i) { return 1000 * (i / n) + (i % n + 1) % n; }, "neighbour");
  }
}

TEMPLATE_LIST_TEST_CASE("barrier: makes global memory writes visible to the group", "[barrier]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 n : {1, 3, 64, 250}) {
    if (!ki_test::fits_or_left_out(b, {4, 1, 1}, {n, 1, 1})) continue;
    KI_INFO("work-group size " << n);
    const i64 groups = 4;
    auto scratch = ki::allocate<i64>(b, groups * n);
    auto out = ki_test::filled<i64>(b, groups * n, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, neighbour_global{}, scratch, out);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out), [&](i64 i) { return 7 * ((i / n) * n + (i % n + n - 1) % n) + 1; }, "neighbour");
  }
}

// Metal: "threadgroup_barrier(mem_flags::mem_threadgroup)" orders threadgroup memory,
// mem_device device memory; ki::barrier(flags) with barrier_flags::local / global, combinable.
// (That a barrier without a memory's flag leaves it unordered is the oracle's to show, in
// checked-access mode: reference/tests/checked_access.cpp.)
TEMPLATE_LIST_TEST_CASE("barrier: barrier(flags) orders the memory its flags name; local | global is barrier()",
                        "[barrier]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  using f = ki::barrier_flags;
  static_assert((f::local | f::global) == static_cast<f>(3) && ((f::local | f::global) & f::local) == f::local &&
                (f::local & f::global) == f::none);
  const i64 n = std::min<i64>(64, ki::max_work_group_size(b)), groups = 3;
  for (const f flags : {f::local, f::local | f::global}) {
    KI_INFO("local memory, flags " << static_cast<int>(flags));
    auto out = ki_test::filled<i64>(b, groups * n, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, neighbour_local{static_cast<int>(flags)}, out);
    ki_test::check_all(
        ki_test::read(b, out), [&](i64 i) { return 1000 * (i / n) + (i % n + 1) % n; }, "neighbour");
  }
  for (const f flags : {f::global, f::global | f::local}) {
    KI_INFO("global memory, flags " << static_cast<int>(flags));
    auto scratch = ki::allocate<i64>(b, groups * n);
    auto out = ki_test::filled<i64>(b, groups * n, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, neighbour_global{static_cast<int>(flags)}, scratch, out);
    ki_test::check_all(
        ki_test::read(b, out), [&](i64 i) { return 7 * ((i / n) * n + (i % n + n - 1) % n) + 1; }, "neighbour");
  }
}

TEMPLATE_LIST_TEST_CASE("barrier: many barriers in a loop", "[barrier]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 max = ki::max_work_group_size(b) < 1024 ? ki::max_work_group_size(b) : 1024;
  for (i64 n : {i64(1), i64(7), i64(128), max}) {
    KI_INFO("work-group size " << n);
    const i64 groups = 3;
    const int iters = 60;  // 121 barriers
    const auto rotated = [&](i64 i) { return (i % n + iters) % n + iters; };
    {
      auto out = ki_test::filled<i64>(b, groups * n, -1);
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, rotate_local{}, out, iters);
      ki::synchronize(b);
      ki_test::check_all(ki_test::read(b, out), rotated, "rotation in local memory");
    }
    {
      auto buf = ki_test::filled<i64>(b, groups * n, -1);
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, rotate_global{}, buf, iters);
      ki::synchronize(b);
      ki_test::check_all(ki_test::read(b, buf), rotated, "rotation in global memory");
    }
    {
      auto out = ki_test::filled<i64>(b, groups * n, -1);
      ki::launch(b, {.numgroups = groups, .workgroupsize = n}, scan_local{}, out);
      ki::synchronize(b);
      ki_test::check_all(
          ki_test::read(b, out), [&](i64 i) { return (i % n + 1) * (i % n + 2) / 2; }, "scan");
    }
  }
}

TEMPLATE_LIST_TEST_CASE("barrier: 2-D and 3-D work-groups", "[barrier]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  // {16, 16, 1} and {4, 4, 16}: as many work-items as the strict profile allows (256).
  const std::vector<std::array<i64, 3>> shapes = {{16, 8, 1}, {5, 7, 3},   {4, 4, 4},   {8, 4, 2},
                                                  {1, 9, 2},  {32, 16, 1}, {16, 16, 1}, {4, 4, 16}};
  const std::array<i64, 3> groups{2, 3, 2};
  for (const auto& s : shapes) {
    if (!ki_test::fits_or_left_out(b, groups, s)) continue;
    KI_INFO("work-group " << ki_test::str(s));
    const i64 n = s[0] * s[1] * s[2];
    auto out = ki_test::filled<i64>(b, 12 * n, -1);
    ki::launch(b, {.numgroups = {groups[0], groups[1], groups[2]}, .workgroupsize = {s[0], s[1], s[2]}}, neighbour_3d{},
               out);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) {
          const i64 g = i / n, lin = i % n;
          const i64 x = lin % s[0], y = (lin / s[0]) % s[1], z = lin / (s[0] * s[1]);
          // Slot (x - 1, y, z - 1) holds the code of its (+1, +1, +1) neighbour: (x, y + 1, z).
          return code(g, x, (y + 1) % s[1], z);
        },
        "two exchanges");
  }
}

TEMPLATE_LIST_TEST_CASE("barrier: padding work-items of an ndrange launch take part", "[barrier]", ki_test::backends) {
  // ndrange = 300 with groups of 128: 3 groups, the last one with 84 items inside the ndrange
  // and 44 padding items, which run too and must reach the barrier.
  const auto b = ki_test::make<TestType>();
  auto out = ki_test::filled<i64>(b, 384, -1);
  ki::launch(b, {.ndrange = 300, .workgroupsize = 128}, neighbour_local{}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [&](i64 i) { return 1000 * (i / 128) + (i % 128 + 1) % 128; }, "neighbour");
}

TEMPLATE_LIST_TEST_CASE("barrier: a work-item's private values survive barriers", "[barrier]", ki_test::backends) {
  // What a work-item keeps in registers and on its stack across a barrier is its own: integers,
  // floating point and a private array, changed between 40 barriers, against the same
  // arithmetic on the host without barriers.
  const auto b = ki_test::make<TestType>();
  const int rounds = 40;
  const i64 max = ki::max_work_group_size(b) < 256 ? ki::max_work_group_size(b) : 256;
  for (i64 n : {i64(2), i64(33), max}) {
    KI_INFO("work-group size " << n);
    const i64 groups = 3;
    auto out = ki_test::filled<double>(b, 12 * groups * n, -1.0);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, private_across_barriers{}, out, rounds);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) { return private_expected(i / 12 % n, rounds)[static_cast<std::size_t>(i % 12)]; },
        "private values");
  }
}
