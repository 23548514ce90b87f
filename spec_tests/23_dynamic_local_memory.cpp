// Local memory sized at launch (ki's extension, issue 36 item 1; docs/guide.md "Local memory
// sized at launch"): launch_options::dynamic_local_memory gives each work-group that many bytes
// of local memory, which a KI kernel reaches with ki::dynamic_localmemory<T>() (the same memory
// at every call, as CUDA's extern __shared__), and a KA kernel with g.localmem<T>(key, extents)
// whose extents are run-time values of group-level code. As for localmemory: shared by the
// work-items of a group, each group its own, uninitialised, counted against the device's local
// memory per work-group (static and dynamic together).
#include <cstdint>
#include <string>
#include <vector>

#include "backends.hpp"

#define KI_DYN_TEST_CPU !(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP)

namespace ki_spec_dynamic_local {

using i64 = std::int64_t;

KI_DEVICE inline std::uintptr_t addr(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

/// A helper that asks again: the same memory as the kernel's own call.
KI_DEVICE inline std::uintptr_t asked_elsewhere() { return addr(ki::dynamic_localmemory<float>().data()); }

/// The launch's bytes hold two arrays of n i64 each, cut at byte offsets 0 and 8n. Each item
/// writes its own element of both, and after the barrier reads its neighbour's. Out per item:
/// (neighbour in a, neighbour in b, whole size in i64, b right after a, same memory elsewhere,
/// group id in the values).
struct two_parts {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, g = ki::get_group_id().x,
              gl = ki::get_global_id().x;
    auto whole = ki::dynamic_localmemory<i64>();
    auto a = ki::dynamic_localmemory<i64>(0, {n, 1, 1});
    auto b = ki::dynamic_localmemory<i64>(8 * n, {n, 1, 1});
    a[l] = 1000 * g + l;
    b[l] = -(1000 * g + l);
    ki::barrier();
    out[5 * gl + 0] = a[(l + 1) % n];
    out[5 * gl + 1] = b[(l + 1) % n];
    out[5 * gl + 2] = whole.size();
    out[5 * gl + 3] = (addr(b.data()) == addr(a.data() + n) && addr(whole.data()) == addr(a.data())) ? 1 : 0;
    out[5 * gl + 4] = asked_elsewhere() == addr(a.data()) ? 1 : 0;
  }
};

/// A 2-D part (x fastest) next to a static localmemory: the two do not overlap. Out per item:
/// (transposed neighbour, disjoint).
struct with_static {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    auto s = ki::localmemory<i64, 16>([] {});
    auto t = ki::dynamic_localmemory<int>(16, {4, 4, 1});  // 16 ints from byte 16
    t(l % 4, l / 4) = static_cast<int>(100 + l);
    s[l] = 7;
    ki::barrier();
    out[2 * gl + 0] = t(l / 4, l % 4);
    const std::uintptr_t sb = addr(s.data()), se = sb + sizeof(i64) * 16, tb = addr(t.data()),
                         te = tb + sizeof(int) * 16;
    out[2 * gl + 1] = (se <= tb || te <= sb) && s[(l + 1) % 16] == 7 ? 1 : 0;
  }
};

/// Writes the size dynamic_localmemory reports, in bytes (T = unsigned char).
struct size_of_dynamic {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    if (ki::get_global_id().x == 0) out[0] = ki::dynamic_localmemory<unsigned char>().size();
  }
};

/// KA: two call sites with run-time extents (the group's size, uniform), of different element
/// types, and a loop that runs one of them again: the same memory each time. Out per item:
/// (neighbour's float, neighbour's i64 after `iters` additions).
struct ka_runtime_extents {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, int iters) const {
    const i64 n = g.groupsize_linear();
    auto f = g.template localmem<float>([] {}, n);
    g.items([&](auto i) { f[i.local_linear()] = static_cast<float>(i.local_linear()) + 0.5f; });
    for (int k = 0; k < iters; ++k) {
      auto v = g.template localmem<i64>([] {}, n);
      g.items([&](auto i) { v[i.local_linear()] = k == 0 ? i.local_linear() : v[i.local_linear()] + k; });
      g.synchronize();
    }
    auto v = g.template localmem<i64>([] {}, n);  // (another call site: fresh memory)
    g.items([&](auto i) { v[i.local_linear()] = 0; });
    g.synchronize();
    auto again = g.template localmem<float>([] {}, n, 1, 1);  // (another site, 3 extents)
    g.items([&](auto i) { again[i.local_linear()] = 0; });
    g.synchronize();
    g.items([&](auto i) {
      const i64 l = i.local_linear(), r = (l + 1) % n;
      out[2 * i.global_linear() + 0] = static_cast<i64>(f[r] * 2);
      out[2 * i.global_linear() + 1] = v[r];
    });
  }
};

/// KA: the loop's site, rewritten so the test can read what the loop left (2-D extents).
struct ka_loop_2d {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, int iters) const {
    const auto s = g.groupsize();
    for (int k = 0; k < iters; ++k) {
      auto v = g.template localmem<i64>([] {}, s.x, s.y);
      g.items([&](auto i) {
        const auto l = i.local();
        v(l.x, l.y) = k == 0 ? l.x + 10 * l.y : v(l.x, l.y) + k;
      });
      g.synchronize();
      if (k + 1 == iters)
        g.items([&](auto i) {
          const auto l = i.local();
          out[i.global_linear()] = v((l.x + 1) % s.x, l.y);
        });
      g.synchronize();
    }
  }
};

#if KI_DYN_TEST_CPU
/// KA misuse: a site whose extents change between its runs, a negative extent, or more than the
/// launch gave (case).
struct ka_misuse {
  static constexpr unsigned line = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out, int which) const {
    for (int k = 0; k < 2; ++k) {
      const i64 n = which == 0 ? 4 + k : which == 1 ? -3 : 1000;
      auto v = g.template localmem<i64>([] {}, n);
      g.items([&](auto i) { out[i.global_linear()] = v.size(); });
    }
  }
};

/// Nine call sites of g.localmem with run-time extents: one more than a GPU thread's table holds.
struct ka_nine_sites {
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    i64 n = 0;
    const auto site = [&](auto key) { n += g.template localmem<i64>(key, 1).size(); };
    site([] {}), site([] {}), site([] {}), site([] {}), site([] {}), site([] {}), site([] {}), site([] {});
    site([] {});
    g.items([&](auto i) { out[i.global_linear()] = n; });
  }
};

/// A part that does not fit the launch's bytes, or misaligned.
struct bad_part {
  static constexpr unsigned line = __LINE__ + 2;
  void operator()(ki::span<i64> out, i64 offset, i64 count) const {
    auto p = ki::dynamic_localmemory<i64>(offset, {count, 1, 1});
    out[0] = p.size();
  }
};

/// Static local memory that, with the launch's dynamic bytes, exceeds the device's.
struct big_static {
  static constexpr unsigned line = __LINE__ + 2;
  void operator()(ki::span<i64> out) const {
    auto s = ki::localmemory<char, 1024>([] {});
    s[0] = 1;
    out[0] = s[0];
  }
};
#endif

}  // namespace ki_spec_dynamic_local

using namespace ki_spec_dynamic_local;

TEMPLATE_LIST_TEST_CASE("local_memory: dynamic_local_memory bytes, shared by the group, cut at offsets",
                        "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 n : {1, 32, 96}) {
    KI_INFO("work-group size " << n);
    const i64 groups = 3;
    auto out = ki_test::filled<i64>(b, 5 * n * groups, -7);
    ki::launch(b, {.numgroups = groups, .workgroupsize = n, .dynamic_local_memory = 16 * n}, two_parts{}, out);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) {
          const i64 item = i / 5, g = item / n, l = item % n, k = i % 5, r = (l + 1) % n;
          return k == 0 ? 1000 * g + r : k == 1 ? -(1000 * g + r) : k == 2 ? 2 * n : 1;
        },
        "two parts");
  }
}

TEMPLATE_LIST_TEST_CASE("local_memory: dynamic local memory beside static localmemory, a 2-D part", "[local_memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto out = ki_test::filled<i64>(b, 2 * 16 * 2, -7);
  // The kernel object's launch options and the one-call form (launch_spec) both take it.
  const auto k = ki::kernel_function(b, with_static{});
  k({.numgroups = 2, .workgroupsize = 16, .dynamic_local_memory = 80}, out);
  ki::synchronize(b);
  const auto expected = [](i64 i) {
    const i64 l = (i / 2) % 16;
    return i % 2 == 1 ? 1 : 100 + (l / 4 + 4 * (l % 4));
  };
  ki_test::check_all(ki_test::read(b, out), expected, "kernel object");
  auto out2 = ki_test::filled<i64>(b, 2 * 16 * 2, -7);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 16, .dynamic_local_memory = 80}, with_static{}, out2);
  ki::synchronize(b);
  ki_test::check_all(ki_test::read(b, out2), expected, "ki::launch");
}

TEMPLATE_LIST_TEST_CASE("local_memory: dynamic_localmemory's size is the launch's (0 by default)", "[local_memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 bytes : {0, 1, 100, 4096}) {
    KI_INFO(bytes << " bytes");
    auto out = ki_test::filled<i64>(b, 1, -7);
    ki::launch(b, {.numgroups = 2, .workgroupsize = 8, .dynamic_local_memory = bytes}, size_of_dynamic{}, out);
    ki::synchronize(b);
    CHECK(ki_test::read(b, out)[0] == bytes);
  }
  auto out = ki_test::filled<i64>(b, 1, -7);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, size_of_dynamic{}, out);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == 0);
}

TEMPLATE_LIST_TEST_CASE("local_memory: dynamic_local_memory below 0 or beyond the device is an error naming both",
                        "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 max = ki::backend_traits<TestType>::max_local_memory(b);
  auto out = ki_test::filled<i64>(b, 1, -7);
  const auto k = ki::kernel_function(b, size_of_dynamic{});
  std::string msg = ki_test::thrown_message<std::invalid_argument>(
      [&] { k({.numgroups = 1, .workgroupsize = 8, .dynamic_local_memory = -1}, out); });
  CHECK_THAT(msg, ki_test::ContainsSubstring("dynamic_local_memory = -1"));
  msg = ki_test::thrown_message<std::invalid_argument>(
      [&] { k({.numgroups = 1, .workgroupsize = 8, .dynamic_local_memory = max + 1}, out); });
  CHECK_THAT(msg, ki_test::ContainsSubstring("dynamic_local_memory = " + std::to_string(max + 1)) &&
                      ki_test::ContainsSubstring(std::to_string(max)));
  msg = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::launch(k, {1, 1, 1}, {8, 1, 1}, std::tie(out), {}, max + 1);
  });  // the lower-level launch
  CHECK_THAT(msg, ki_test::ContainsSubstring("dynamic_local_memory = " + std::to_string(max + 1)));
  CHECK_THROWS_AS(ki::launch(b, {.launch = false, .dynamic_local_memory = 64}, size_of_dynamic{}, out),
                  std::invalid_argument);
  // KA: the same check, before anything runs.
  msg = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::ka::kernel(b, ka_loop_2d{})({.ndrange = {4, 4}, .workgroupsize = {4, 4}, .dynamic_local_memory = max + 1}, out,
                                    1);
  });
  CHECK_THAT(msg, ki_test::ContainsSubstring("dynamic_local_memory = " + std::to_string(max + 1)) &&
                      ki_test::ContainsSubstring(std::to_string(max)));
  CHECK_THROWS_AS(
      ki::ka::kernel(b, ka_loop_2d{})({.ndrange = {4, 4}, .workgroupsize = {4, 4}, .dynamic_local_memory = -8}, out, 1),
      std::invalid_argument);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == -7);  // nothing ran
  // The backend stays usable. (Not quite max: the GPU pass's kernel entry has 12 bytes of its own.)
  k({.numgroups = 1, .workgroupsize = 8, .dynamic_local_memory = max - 64}, out);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == max - 64);
}

TEMPLATE_LIST_TEST_CASE("ka: localmem with run-time extents, taken from the launch's dynamic_local_memory", "[ka]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  for (i64 n : {1, 7, 64}) {
    KI_INFO("work-group size " << n);
    const int iters = 4;
    const i64 items = 3 * n;
    auto out = ki_test::filled<i64>(b, 2 * items, -7);
    // float[n], i64[n], i64[n], float[n] with their alignment: 4n, 8n from round_up(4n, 8)...
    const i64 bytes = (4 * n + 7) / 8 * 8 + 16 * n + 4 * n;
    ki::ka::kernel(b, ka_runtime_extents{})({.ndrange = items, .workgroupsize = n, .dynamic_local_memory = bytes}, out,
                                            iters);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out),
        [&](i64 i) {
          const i64 item = i / 2, l = item % n, r = (l + 1) % n;
          // The neighbour's float is r + 0.5 (doubled: 2r + 1); its i64 in the third site is 0.
          return i % 2 == 0 ? 2 * r + 1 : 0;
        },
        "float and i64 sites");
    auto out2 = ki_test::filled<i64>(b, 4 * n, -7);
    ki::ka::kernel(b, ka_loop_2d{})({.ndrange = {n, 4}, .workgroupsize = {n, 2}, .dynamic_local_memory = 16 * n}, out2,
                                    iters);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, out2),
        [&](i64 i) {
          const i64 x = i % n, y = (i / n) % 2;
          return (x + 1) % n + 10 * y + i64(iters) * (iters - 1) / 2;
        },
        "a site run again keeps its memory and values (2-D)");
  }
}

#if KI_TEST_BACKEND_REFERENCE
TEMPLATE_LIST_TEST_CASE("local_memory: the oracle poisons dynamic local memory", "[local_memory]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  b.print_warnings = false;  // (reads of unwritten local memory are warned about)
  auto out = ki_test::filled<i64>(b, 1, -7);
  ki::launch(
      b, {.numgroups = 1, .workgroupsize = 1, .dynamic_local_memory = 8},
      KI_LAMBDA(ki::span<i64> o) { o[0] = static_cast<i64>(ki::dynamic_localmemory<std::uint32_t>()[1]); }, out);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == 0xFFBADBAD);
}
#endif

#if KI_DYN_TEST_CPU
TEMPLATE_LIST_TEST_CASE("local_memory: a part of dynamic local memory outside the launch's bytes is an error",
                        "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const std::string line = "23_dynamic_local_memory.cpp:" + std::to_string(bad_part::line);
  for (const auto& [offset, count, why] :
       std::vector<std::tuple<i64, i64, std::string>>{{0, 9, "9 elements of 8 bytes from byte 0 do not fit"},
                                                      {64, 1, "1 elements of 8 bytes from byte 64 do not fit"},
                                                      {4, 1, "not a multiple of the element's alignment, 8"},
                                                      {-8, 1, "must be at least 0"},
                                                      {0, -1, "must be at least 0"}}) {
    KI_INFO(why);
    auto out = ki_test::filled<i64>(b, 1, -7);
    ki::launch(b, {.numgroups = 1, .workgroupsize = 1, .dynamic_local_memory = 64}, bad_part{}, out, offset, count);
    const std::string msg = ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); });
    CHECK_THAT(msg, ki_test::ContainsSubstring(why) && ki_test::ContainsSubstring(line) &&
                        ki_test::ContainsSubstring("dynamic_local_memory is 64 bytes"));
  }
  auto out = ki_test::filled<i64>(b, 1, -7);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 1, .dynamic_local_memory = 64}, bad_part{}, out, 8, 7);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == 7);  // the last part that fits
}

TEMPLATE_LIST_TEST_CASE("local_memory: static localmemory and dynamic_local_memory beyond the device's together",
                        "[local_memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 max = ki::backend_traits<TestType>::max_local_memory(b);
  auto out = ki_test::filled<i64>(b, 1, -7);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 1, .dynamic_local_memory = max - 1000}, big_static{}, out);
  const std::string msg = ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); });
  CHECK_THAT(msg, ki_test::ContainsSubstring("dynamic_local_memory takes " + std::to_string(max - 1000)) &&
                      ki_test::ContainsSubstring("needs 1024 bytes") &&
                      ki_test::ContainsSubstring("23_dynamic_local_memory.cpp:" + std::to_string(big_static::line)));
  ki::launch(b, {.numgroups = 1, .workgroupsize = 1, .dynamic_local_memory = max - 1024}, big_static{}, out);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out)[0] == 1);
}

TEMPLATE_LIST_TEST_CASE("ka: localmem with run-time extents beyond the launch's bytes, or changing, is an error",
                        "[ka]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const std::string line = "23_dynamic_local_memory.cpp:" + std::to_string(ka_misuse::line);
  for (const auto& [which, bytes, why] : std::vector<std::tuple<int, i64, std::string>>{
           {0, 1024, "ran earlier in this work-group with extents (4, 1, 1)"},
           {1, 1024, "an extent must be at least 0"},
           {2, 1024, "it needs 8000 bytes of the launch's dynamic_local_memory = 1024 bytes"},
           {2, 0, "launch with .dynamic_local_memory = 8000 or more"}}) {
    KI_INFO(why);
    auto out = ki::zeros<i64>(b, 8);
    ki::ka::kernel(b, ka_misuse{})({.ndrange = 8, .workgroupsize = 4, .dynamic_local_memory = bytes}, out, which);
    const std::string msg = ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); });
    CHECK_THAT(msg, ki_test::ContainsSubstring(why) && ki_test::ContainsSubstring(line) &&
                        ki_test::ContainsSubstring("g.localmem<"));
  }
}
#endif

#if KI_DYN_TEST_CPU
TEMPLATE_LIST_TEST_CASE("ka: a ninth call site of localmem with run-time extents is an error", "[ka]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 4);
  ki::ka::kernel(b, ka_nine_sites{})({.ndrange = 4, .workgroupsize = 4, .dynamic_local_memory = 1024}, out);
  const std::string msg = ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); });
  CHECK_THAT(msg, ki_test::ContainsSubstring("at most 8 call sites of g.localmem with run-time extents"));
  CHECK(ki_test::read(b, out) == std::vector<i64>(4, 0));
}
#endif
