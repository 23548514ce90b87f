// Spec: localmemory(T, dims): "Every call site of localmemory in a kernel has its own memory,
// shared by all work-items of a work-group. It is uninitialized, and lives until the work-group
// finishes. Executing the same call site again, e.g. in a loop, returns the same memory."
// In ki the call site is named by a fresh lambda: ki::localmemory<T, dims...>([] {}).
// (Uninitialised contents are unspecified; the oracle's poisoning is tested in reference/tests.)
#include <cstdint>
#include <string>
#include <vector>

#include "backends.hpp"

namespace ki_spec_local_memory {

using i64 = std::int64_t;

KI_DEVICE inline std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }
KI_DEVICE inline bool disjoint(const void* a, std::size_t na, const void* b, std::size_t nb) {
  return addr(a) + na <= addr(b) || addr(b) + nb <= addr(a);
}

/// Two call sites: two arrays, each shared by the group. Writes (a, b, disjoint) per item.
struct two_call_sites {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto a = ki::localmemory<i64, 64>([] {});
    auto b = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, gl = ki::get_global_id().x;
    a[l] = 1000 + l;
    b[l] = 2000 + l;
    ki::barrier();
    out[3 * gl + 0] = a[(l + 1) % n];
    out[3 * gl + 1] = b[(l + 1) % n];
    out[3 * gl + 2] = disjoint(a.data(), sizeof(i64) * 64, b.data(), sizeof(i64) * 64) ? 1 : 0;
  }
};

/// The same call site executed `iters` times in a loop: the same memory each time, and values
/// written in one iteration are there in the next. Writes (final neighbour value, same address).
struct call_site_in_loop {
  KI_DEVICE void operator()(ki::span<i64> out, int iters) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, gl = ki::get_global_id().x;
    std::uintptr_t first = 0;
    bool same = true;
    i64 last = -1;
    for (int k = 0; k < iters; ++k) {
      auto a = ki::localmemory<i64, 128>([] {});
      if (k == 0) {
        first = addr(a.data());
        a[l] = l;
      } else {
        same = same && addr(a.data()) == first;
        a[l] = a[l] + k;
      }
      ki::barrier();
      last = a[(l + 1) % n];  // what the neighbour has after this iteration
      ki::barrier();
    }
    out[2 * gl + 0] = last;
    out[2 * gl + 1] = same ? 1 : 0;
  }
};

/// Each work-group has its own memory, shown without relying on timing: the groups meet at a
/// rendezvous in global memory between writing their local array and reading it back, so when
/// they are alive at once (met[g] = 1), each group's read follows every other group's write and
/// shared memory would hand it their values. The wait is bounded by `spins` (the spec promises
/// no forward progress between work-groups: a backend may run them one after the other, and
/// then met[g] = 0). out[g * n + l] counts the elements item l found not holding its group's
/// values: other groups' writes, or its own group's writes not seen after the barrier.
struct rendezvous_groups {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<int> arrived, ki::span<int> met, i64 spins) const {
    auto a = ki::localmemory<i64, 128>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x;
    const int groups = static_cast<int>(ki::get_num_groups().x);
    a[l] = g * 1000 + l;
    ki::barrier();
    if (l == 0) {
      ki::atomic_fetch_add(&arrived[0], 1, ki::memory_order::acq_rel);
      for (i64 s = 0; s < spins && ki::atomic_load(&arrived[0], ki::memory_order::acquire) < groups; ++s) {
      }
      met[g] = ki::atomic_load(&arrived[0], ki::memory_order::acquire) == groups ? 1 : 0;
    }
    ki::barrier();
    i64 bad = 0;
    for (i64 j = 0; j < n; ++j)
      if (a[j] != g * 1000 + j) ++bad;
    out[g * n + l] = bad;
  }
};

/// Multi-dimensional local arrays: operator()(i, j[, k]) with x fastest, extents, size.
/// Run with a work-group of 8 x 4 items.
struct multi_dim {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto a = ki::localmemory<int, 8, 4>([] {});
    auto c = ki::localmemory<int, 4, 3, 2>([] {});
    const auto l = ki::get_local_id();
    const i64 x = l.x, y = l.y, lin = x + 8 * y;
    a(x, y) = static_cast<int>(100 * x + y);
    if (lin < 24) c(lin % 4, (lin / 4) % 3, lin / 12) = static_cast<int>(7 * lin);
    ki::barrier();
    const i64 at = 8 * (ki::get_group_id().x * 32 + lin);
    out[at + 0] = a((x + 1) % 8, (y + 1) % 4);  // a neighbour's value
    out[at + 1] = a[x + 8 * y];                 // linear indexing: x fastest
    out[at + 2] = a.size() * 10000 + a.extent(0) * 100 + a.extent(1) * 10 + a.extent(2);
    out[at + 3] = c.size() * 10000 + c.extent(0) * 100 + c.extent(1) * 10 + c.extent(2);
    out[at + 4] = lin < 24 ? c[23 - lin] : -2;  // linear order of the 3-D array
    out[at + 5] = lin < 24 ? c((23 - lin) % 4, ((23 - lin) / 4) % 3, (23 - lin) / 12) : -2;
    out[at + 6] = a.as_span()(x, y);  // as_span: same memory, same extents
    out[at + 7] = a.as_span().size();
  }
};

struct alignas(32) wide {
  std::int64_t v[4];
};
struct alignas(64) line {
  std::int32_t v[16];
};
struct three {
  char c[3];
};

/// Element types of several sizes and alignments, declared next to each other: each array is
/// aligned for its type, none overlaps another, and values round-trip between work-items.
/// Writes 1 per check that holds; run with 64 items.
struct mixed_types {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    auto c = ki::localmemory<char, 3>([] {});
    auto d = ki::localmemory<float, 5>([] {});
    auto t = ki::localmemory<three, 5>([] {});
    auto w = ki::localmemory<wide, 2>([] {});
    auto s = ki::localmemory<std::int16_t, 7>([] {});
    auto ln = ki::localmemory<line, 2>([] {});
    auto u = ki::localmemory<std::uint8_t, 1>([] {});
    auto q = ki::localmemory<std::uint64_t, 3>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    const void* p[] = {c.data(), d.data(), t.data(), w.data(), s.data(), ln.data(), u.data(), q.data()};
    const std::size_t bytes[] = {
        3, sizeof(float) * 5,        sizeof(three) * 5, sizeof(wide) * 2, sizeof(std::int16_t) * 7, sizeof(line) * 2,
        1, sizeof(std::uint64_t) * 3};
    const std::size_t align[] = {
        1, alignof(float),        alignof(three), alignof(wide), alignof(std::int16_t), alignof(line),
        1, alignof(std::uint64_t)};
    // Each item writes a few elements derived from its id, spread over the arrays.
    if (l < 3) c[l] = static_cast<char>('a' + l);
    if (l < 5) d[l] = 0.5f * static_cast<float>(l);
    if (l < 5) t[l].c[0] = t[l].c[1] = t[l].c[2] = static_cast<char>(l + 1);
    if (l < 8) w[l / 4].v[l % 4] = -l * 0x100000001;
    if (l < 7) s[l] = static_cast<std::int16_t>(-300 * l);
    if (l < 32) ln[l / 16].v[l % 16] = static_cast<std::int32_t>(l * 1000003);
    if (l == 0) u[0] = 0xA5;
    if (l < 3) q[l] = 0x0123456789ABCDEFull * static_cast<std::uint64_t>(l + 1);
    ki::barrier();
    i64 ok = 0, k = 0;
    for (int i = 0; i < 8; ++i) {
      ok += (addr(p[i]) % align[i] == 0) ? 1 : 0;
      for (int j = i + 1; j < 8; ++j) ok += disjoint(p[i], bytes[i], p[j], bytes[j]) ? 1 : 0;
    }
    // Item l checks what item (l + 1) % 64 wrote, where that is in range; k counts the checks.
    const auto check = [&](bool holds) {
      ok += holds ? 1 : 0;
      ++k;
    };
    const i64 r = (l + 1) % 64;
    if (r < 3) check(c[r] == static_cast<char>('a' + r));
    if (r < 5) check(d[r] == 0.5f * static_cast<float>(r));
    if (r < 5) check(t[r].c[0] == r + 1 && t[r].c[1] == r + 1 && t[r].c[2] == r + 1);
    if (r < 8) check(w[r / 4].v[r % 4] == -r * 0x100000001);
    if (r < 7) check(s[r] == static_cast<std::int16_t>(-300 * r));
    if (r < 32) check(ln[r / 16].v[r % 16] == static_cast<std::int32_t>(r * 1000003));
    check(u[0] == 0xA5);
    if (r < 3) check(q[r] == 0x0123456789ABCDEFull * static_cast<std::uint64_t>(r + 1));
    out[2 * gl] = ok;
    out[2 * gl + 1] = k;
  }
};

/// Declares a local array in a function of its own and fills it: the array outlives the call.
KI_DEVICE inline auto declared_in_a_helper(i64 l, i64 group) {
  auto a = ki::localmemory<i64, 64>([] {});
  a[l] = 7000 + 100 * group + l;
  return a;
}

/// Declares another local array in a function of its own and overwrites all of it.
KI_DEVICE inline i64 other_scratch(i64 l, i64 n, i64 phase) {
  auto s = ki::localmemory<i64, 64>([] {});
  for (i64 k = l; k < 64; k += n) s[k] = -1000 * phase - k;
  ki::barrier();
  const i64 seen = s[(l + 1) % n];
  ki::barrier();
  return seen;
}

/// "lives until the work-group finishes": memory declared in a helper's scope keeps its values
/// after the helper returned, through phases that allocate and overwrite other local arrays (a
/// call site in a loop, another helper) with barriers between them, until the group ends.
/// Writes (what the neighbour stored in the helper's array at the end, whether it is disjoint
/// from the other two, the sum of what the other arrays held).
struct outlives_its_scope {
  KI_DEVICE void operator()(ki::span<i64> out, int phases) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, gl = ki::get_global_id().x;
    const i64 group = ki::get_group_id().x;
    const auto kept = declared_in_a_helper(l, group);
    i64 others = 0;
    bool apart = true;
    for (int p = 0; p < phases; ++p) {
      auto t = ki::localmemory<i64, 64>([] {});
      apart = apart && disjoint(t.data(), sizeof(i64) * 64, kept.data(), sizeof(i64) * 64);
      for (i64 k = l; k < 64; k += n) t[k] = 5 * p + k;
      ki::barrier();
      others += t[(l + 2) % n];
      ki::barrier();
      others += other_scratch(l, n, p);
    }
    ki::barrier();
    out[3 * gl + 0] = kept[(l + 1) % n];
    out[3 * gl + 1] = apart ? 1 : 0;
    out[3 * gl + 2] = others;
  }
};

}  // namespace ki_spec_local_memory

using namespace ki_spec_local_memory;

TEMPLATE_LIST_TEST_CASE("local_memory: each call site has its own memory", "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 64, groups = 3;
  auto out = ki_test::filled<i64>(b, 3 * n * groups, -1);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n}, two_call_sites{}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out),
      [&](i64 i) {
        const i64 l = (i / 3) % n, k = i % 3;
        return k == 0 ? 1000 + (l + 1) % n : k == 1 ? 2000 + (l + 1) % n : 1;
      },
      "two call sites");
}

TEMPLATE_LIST_TEST_CASE("local_memory: the same call site again returns the same memory", "[local_memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 n : {1, 5, 128}) {
    KI_INFO("work-group size " << n);
    const i64 groups = 4;
    const int iters = 6;
    auto out = ki_test::filled<i64>(b, 2 * n * groups, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, call_site_in_loop{}, out, iters);
    ki::synchronize(b);
    // Item l's element is l + 1 + 2 + ... + (iters - 1) at the end.
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) { return i % 2 == 1 ? 1 : ((i / 2) % n + 1) % n + i64(iters) * (iters - 1) / 2; },
        "values survive across iterations");
  }
}

TEMPLATE_LIST_TEST_CASE("local_memory: each work-group has its own memory", "[local_memory]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  // The CPU backends' configured() value runs work-groups on 3 host threads, so that the two
  // groups can be alive at once (a GPU runs two small groups at once anyway).
  const TestType b = cfg::configured();
  const i64 n = 64, groups = 2;
  // Whether the two groups are alive at once is up to the host's threads: on a loaded machine
  // the second may start only after the first gave up waiting. So the wait is short (2^19
  // polls: below the oracle's spin limit of 2^20 polls seeing the same value, so that its spin
  // watch never takes this bounded wait for a spin-wait, however slow the machine: under ASan
  // on a loaded host 2^22 polls took more than the watch's second), the launch is repeated until
  // the groups have met once, and every launch's values are checked.
  // Never met: a declared skip (without overlap the values show only that a group sees its own
  // writes), never a pass.
  constexpr int max_launches = 40;
  int launches = 0;
  bool both_met = false;
  while (!both_met && launches < max_launches) {
    ++launches;
    auto out = ki_test::filled<i64>(b, n * groups, -1);
    auto arrived = ki::zeros<int>(b, 1);
    auto met = ki::zeros<int>(b, groups);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, rendezvous_groups{}, out, arrived, met, i64{1} << 19);
    const auto m = ki_test::read(b, met);
    KI_INFO(cfg::describe(b) << ", launch " << launches << ": groups met " << m[0] << ", " << m[1]);
    ki_test::check_all(
        ki_test::read(b, out), [](i64) { return 0; }, "elements not holding the group's own values");
    both_met = m[0] + m[1] == 2;
  }
  if (!both_met)
    SKIP(cfg::describe(b) + ": the two work-groups never ran at the same time in " + std::to_string(max_launches) +
         " launches (a loaded host); separation of their local memory not shown");
}

TEMPLATE_LIST_TEST_CASE("local_memory: multi-dimensional arrays", "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 groups = 2;
  auto out = ki_test::filled<i64>(b, 8 * 32 * groups, -1);
  ki::launch(b, {.numgroups = groups, .workgroupsize = {8, 4}}, multi_dim{}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out),
      [](i64 i) -> i64 {
        const i64 lin = (i / 8) % 32, k = i % 8, x = lin % 8, y = lin / 8;
        switch (k) {
          case 0: return 100 * ((x + 1) % 8) + (y + 1) % 4;
          case 1: return 100 * x + y;
          case 2: return 32 * 10000 + 8 * 100 + 4 * 10 + 1;
          case 3: return 24 * 10000 + 4 * 100 + 3 * 10 + 2;
          case 4:
          case 5: return lin < 24 ? 7 * (23 - lin) : -2;
          case 6: return 100 * x + y;
          default: return 32;
        }
      },
      "multi-dimensional local arrays");
}

TEMPLATE_LIST_TEST_CASE("local_memory: element types of different sizes and alignments", "[local_memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 64, groups = 3;
  auto out = ki_test::filled<i64>(b, 2 * n * groups, -1);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n}, mixed_types{}, out);
  ki::synchronize(b);
  const auto got = ki_test::read(b, out);
  // 8 alignment checks + 28 disjointness checks + one per value the item checked.
  ki_test::check_all(
      got,
      [&](i64 i) {
        return i % 2 == 1 ? got[static_cast<std::size_t>(i)] : 8 + 28 + got[static_cast<std::size_t>(i + 1)];
      },
      "alignment, overlap and values");
  // The number of values checked is the closed form too (so the line above is not vacuous).
  ki_test::check_all(
      got,
      [&](i64 i) -> i64 {
        if (i % 2 == 0) return got[static_cast<std::size_t>(i)];
        const i64 r = ((i / 2) % n + 1) % n;
        return (r < 3) + (r < 5) + (r < 5) + (r < 8) + (r < 7) + (r < 32) + 1 + (r < 3);
      },
      "values checked");
}

TEMPLATE_LIST_TEST_CASE("local_memory: it lives until the work-group finishes, past the scope that declared it",
                        "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const int phases = 4;
  for (i64 n : {1, 7, 64}) {
    KI_INFO("work-group size " << n);
    const i64 groups = 3;
    auto out = ki_test::filled<i64>(b, 3 * n * groups, -1);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, outlives_its_scope{}, out, phases);
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) -> i64 {
          const i64 item = i / 3, l = item % n, group = item / n, r1 = (l + 1) % n, r2 = (l + 2) % n;
          switch (i % 3) {
            case 0: return 7000 + 100 * group + r1;
            case 1: return 1;
            default: {
              i64 sum = 0;
              for (i64 p = 0; p < phases; ++p) sum += 5 * p + r2 - 1000 * p - r1;
              return sum;
            }
          }
        },
        "the helper's array at the end, and the other arrays");
  }
}
