// Spec (kernelabstractions-writing-kernels.txt; Metal's atomics on threadgroup memory): the KA
// layer's @localmem — its size from a static @groupsize (N = prod(@groupsize())), atomic
// operations on it by index, and its bounds checked again after an unchecked phase. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
// An unchecked ranged phase writes @localmem; a checked one then reads one element past it
// (Bad: the unchecked phase's own index is one past, which only the oracle reports).
template <bool Bad>
struct local_one_past {
  static constexpr unsigned write_line = __LINE__ + 4, read_line = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out) const {
    auto l = g.template localmem<i64, 8>([] {});
    g.items(ki::ka::unchecked, 8, [&](auto i) { l[i.local_linear() + (Bad ? 1 : 0)] = i.local_linear(); });
    g.items(8, [&](auto i) { out[i.global_linear()] = l[i.local_linear() + 1]; });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: after an unchecked phase, @localmem indices are checked again", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 16);
  ki::ka::kernel(b, local_one_past<false>{}, 8)({.ndrange = 16}, out);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("index 8 is out of bounds") &&
                 ki_test::ContainsSubstring("15_ka_localmem.cpp:" + std::to_string(local_one_past<false>::read_line)) &&
                 ki_test::ContainsSubstring("work-item (7, 0, 0)"));
}
#endif

#if KI_TEST_BACKEND_REFERENCE
TEST_CASE("ka: the reference backend keeps the @localmem checks of an unchecked ranged phase", "[ka]") {
  ki::reference::backend b{};
  auto out = ki::zeros<i64>(b, 16);
  ki::ka::kernel(b, local_one_past<true>{}, 8)({.ndrange = 16}, out);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("index 8 is out of bounds") &&
                 ki_test::ContainsSubstring("15_ka_localmem.cpp:" + std::to_string(local_one_past<true>::write_line)) &&
                 ki_test::ContainsSubstring("work-item (7, 0, 0)"));
}
#endif

namespace ki_spec_ka {
// Atomic operations on local memory by index (ki/ka/local_array.hpp), every work-item of a group
// on the same elements: out[g * 16 + ...] holds each group's final values; got[global] each
// work-item's returned values (fetch_add, exchange). Unchecked: the contended phase written
// g.items(ki::ka::unchecked, f), which simd_cpu runs as SIMD lanes: atomics stay exact there.
template <class T, bool Unchecked = false>
struct local_atomics {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<T> out, ki::span<T> got) const {
    auto l = g.template localmem<T, 8>([] {});
    g.items(1, [&](auto) {
      for (int k = 0; k < 8; ++k) l.atomic_store(k, T(0));
      l.atomic_store(2, T(1000));  // fetch_min's start
      l.atomic_store(4, T(-1));    // exchange's start (all ones for unsigned types)
    });
    g.synchronize();
    const auto contend = [&](auto i) {
      const i64 id = i.local_linear();
      got[2 * i.global_linear()] = l.atomic_fetch_add(0, T(1));
      l.atomic_fetch_sub(1, T(2));
      got[2 * i.global_linear() + 1] = l.atomic_exchange(4, static_cast<T>(id));
      T seen = l.atomic_load(5);
      while (!l.atomic_compare_exchange(5, seen, static_cast<T>(seen + T(1)))) {
      }
      if constexpr (std::is_integral_v<T>) {
        l.atomic_fetch_min(2, static_cast<T>(id + 7));
        l.atomic_fetch_max(3, static_cast<T>(id));
        l.atomic_fetch_or(6, static_cast<T>(T(1) << (id % 16)));
        l.atomic_fetch_xor(7, static_cast<T>(id));
        l.atomic_fetch_and(7, static_cast<T>(0x7fff));
      }
    };
    if constexpr (Unchecked) g.items(ki::ka::unchecked, contend);
    else g.items(contend);
    g.synchronize();
    g.items(8, [&](auto i) { out[8 * i.group_linear() + i.local_linear()] = l.atomic_load(i.local_linear()); });
  }
};

template <class T, class B>
void check_local_atomics_once(const B& b, bool unchecked) {
  const i64 groups = 3, n = 24;
  auto out = ki::zeros<T>(b, 8 * groups);
  auto got = ki::zeros<T>(b, 2 * groups * n);
  if (unchecked) ki::ka::kernel(b, local_atomics<T, true>{}, n)({.ndrange = groups * n}, out, got);
  else ki::ka::kernel(b, local_atomics<T>{}, n)({.ndrange = groups * n}, out, got);
  const auto o = ki_test::read(b, out), r = ki_test::read(b, got);
  i64 ids_xor = 0;
  for (i64 id = 0; id < n; ++id) ids_xor ^= id;
  for (i64 g = 0; g < groups; ++g) {
    KI_INFO("group " << g);
    const T* f = o.data() + 8 * g;
    CHECK(f[0] == T(n));
    CHECK(f[1] == static_cast<T>(T(0) - static_cast<T>(2 * n)));
    CHECK(f[5] == T(n));
    // fetch_add handed out 0 .. n-1 once each; the exchanges returned the start value and all
    // ids but one, which is the final value.
    std::vector<T> adds, swaps;
    for (i64 k = 0; k < n; ++k) {
      adds.push_back(r[static_cast<std::size_t>(2 * (g * n + k))]);
      swaps.push_back(r[static_cast<std::size_t>(2 * (g * n + k) + 1)]);
    }
    swaps.push_back(f[4]);
    std::sort(adds.begin(), adds.end());
    std::vector<T> expect_adds, expect_swaps{T(-1)};
    for (i64 k = 0; k < n; ++k) expect_adds.push_back(T(k)), expect_swaps.push_back(T(k));
    std::sort(swaps.begin(), swaps.end());
    std::sort(expect_swaps.begin(), expect_swaps.end());
    CHECK(adds == expect_adds);
    CHECK(swaps == expect_swaps);
    if constexpr (std::is_integral_v<T>) {
      CHECK(f[2] == T(7));
      CHECK(f[3] == T(n - 1));
      CHECK(f[6] == T(0xffff));
      CHECK(f[7] == static_cast<T>(ids_xor & 0x7fff));
    }
  }
}
template <class T, class B>
void check_local_atomics(const B& b, const char* type) {
  for (const bool unchecked : {false, true}) {
    KI_INFO(type << (unchecked ? ", the phase unchecked" : ""));
    check_local_atomics_once<T>(b, unchecked);
  }
}
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: atomic operations on @localmem by index, contended by a work-group", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  if (!ki::supports_atomics(b)) SKIP("supports_atomics is false: " + ki_test::config<TestType>::describe(b));
  check_local_atomics<std::int32_t>(b, "int32");
  check_local_atomics<std::uint32_t>(b, "uint32");
  check_local_atomics<float>(b, "float");
  if (ki::supports_atomics64(b)) {
    check_local_atomics<std::int64_t>(b, "int64");
    check_local_atomics<std::uint64_t>(b, "uint64");
    if (ki::supports_float64(b)) check_local_atomics<double>(b, "double");
  } else {
    WARN("64-bit local atomics left out: supports_atomics64 is false (" + ki_test::config<TestType>::describe(b) + ")");
  }
}

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
struct local_atomic_out_of_bounds {
  static constexpr unsigned line = __LINE__ + 5;  // the access
  template <class G>
  void operator()(G& g, i64 bin) const {
    auto l = g.template localmem<std::uint32_t, 16>([] {});
    g.items([&](auto i) {
      if (i.local_linear() == 3) l.atomic_fetch_add(bin, 1u);
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: a local atomic's index out of bounds names the work-item, the line and the memory", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  ki::ka::kernel(b, local_atomic_out_of_bounds{}, 8, 16)(i64{16});
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::exception);
    CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
    CHECK(e.local() == ki::xyz<i64>{3, 0, 0});
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 16 is out of bounds at 15_ka_localmem.cpp:" +
                                                                 std::to_string(local_atomic_out_of_bounds::line)) &&
                                          ki_test::ContainsSubstring("(16 elements of unsigned int)"));
  }
}
#endif

namespace ki_spec_ka {
// reverse_block! as the text writes it: N = @uniform prod(@groupsize()); buf = @localmem Int (N,),
// with the work-group size fixed when the kernel is constructed (ki::ka::groupsize<8>).
struct reverse_block_static {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a) const {
    constexpr i64 n = G::static_size_linear;
    auto buf = g.template localmem<i64, n>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear(); });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(buf[n - 1 - i.local_linear()]); });
  }
};
// A 2-D static size: G::static_size, and each group's items in reverse local linear order.
struct reverse_tile_static {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    constexpr auto s = G::static_size;
    auto buf = g.template localmem<i64, s.x, s.y>([] {});
    g.items([&](auto i) { buf(i.local().x, i.local().y) = i.global_linear(); });
    g.synchronize();
    g.items([&](auto i) {
      const i64 r = G::static_size_linear - 1 - i.local_linear();
      out[i.global_linear()] = buf(r % s.x, r / s.x);
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: a static work-group size as a type gives @localmem T (N,) with N = prod(@groupsize())",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, reverse_block_static{}, ki::ka::groupsize<8>, 16)(a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(7 - i % 8); }, "A (the text's output, 0-based)");
  // 4 x 2 groups over 8 x 6: each group reversed in local linear order.
  auto out = ki::zeros<i64>(b, 48);
  ki::ka::kernel k(b, reverse_tile_static{}, ki::ka::groupsize<4, 2>);
  k({.ndrange = {8, 6}}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out),
      [](i64 k) {
        const i64 x = k % 8, y = k / 8, r = 7 - (x % 4 + 4 * (y % 2));
        return (x / 4 * 4 + r % 4) + 8 * (y / 2 * 2 + r / 4);
      },
      "out");
  // A launch's work-group size must be the static one; padding items of a partial group run no
  // item statement there either.
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] {
               k({.ndrange = {8, 6}, .workgroupsize = {2, 4}}, out);
             }),
             ki_test::ContainsSubstring("(2, 4)") && ki_test::ContainsSubstring("(4, 2)"));
  for (const i64 n : {i64{1}, i64{7}, i64{10}, i64{65}}) {
    KI_INFO("ndrange " << n << ", static work-groups of 8");
    auto items = ki::zeros<i64>(b, n);
    auto groups = ki::zeros<i64>(b, (n + 7) / 8);
    ki::ka::kernel(b, count_statements{}, ki::ka::groupsize<8>)({.ndrange = n}, items, groups);
    ki::synchronize(b);
    CHECK(ki_test::read(b, items) == std::vector<i64>(static_cast<std::size_t>(n), 1));
    CHECK(ki_test::read(b, groups) == std::vector<i64>(static_cast<std::size_t>((n + 7) / 8), 1));
  }
}
