// An unchecked KA phase runs as SIMD lanes on simd_cpu (g.items(ki::ka::unchecked, f): its loop
// over the work-items is declared free of dependences between them, ki/ka/group.hpp), and the
// atomics in it stay exact: on group memory simd_cpu performs them as plain read-modify-writes,
// which the compiler must not vectorise (lanes updating one element would each read its old
// value: with AVX-512 scatters GCC 12 did, and 3 of 4 increments were lost). This file is compiled
// for the host's instruction set (-march=native), where such scatters exist; the rest of the
// suite is compiled for baseline x86-64, which has none.
#include <cstdint>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>
#include <ki/simd_cpu.hpp>

namespace {
using i64 = std::int64_t;
constexpr i64 bins = 4;

/// Each work-item adds 1 to bin (local linear id mod 4) of local memory, three ways: the KA
/// element form, the pointer form, and a compare-exchange loop; then the group adds its bins to
/// out (bins 0-3, 4-7, 8-11 for the three forms).
struct lane_atomics {
  template <class G>
  void operator()(G& g, ki::span<std::uint32_t> out) const {
    auto local = g.template localmem<std::uint32_t, 3 * bins>([] {});
    g.items(3 * bins, [&](auto i) { local[i.local_linear()] = 0; });
    g.synchronize();
    g.items(ki::ka::unchecked, [&](auto i) { local.atomic_fetch_add(i.local_linear() & (bins - 1), 1u); });
    g.items(ki::ka::unchecked,
            [&](auto i) { ki::atomic_fetch_add(&local[bins + (i.local_linear() & (bins - 1))], 1u); });
    g.items(ki::ka::unchecked, [&](auto i) {
      const i64 k = 2 * bins + (i.local_linear() & (bins - 1));
      std::uint32_t seen = local.atomic_load(k);
      while (!local.atomic_compare_exchange(k, seen, seen + 1)) {
      }
    });
    g.synchronize();
    g.items(3 * bins, [&](auto i) { ki::atomic_fetch_add(&out[i.local_linear()], local[i.local_linear()]); });
  }
};

template <class B>
std::vector<std::uint32_t> run(const B& b, i64 groups) {
  auto out = ki::zeros<std::uint32_t>(b, 3 * bins);
  ki::ka::kernel(b, lane_atomics{}, ki::ka::groupsize<256>, groups * 256)(out);
  ki::synchronize(b);
  return ki::to_host(b, out);
}
}  // namespace

TEST_CASE("an unchecked phase runs as SIMD lanes on simd_cpu, and the atomics in it stay exact") {
  const i64 groups = 64;
  const std::vector<std::uint32_t> expect(3 * bins, static_cast<std::uint32_t>(groups * 256 / bins));
  CHECK(run(ki::simd_cpu::backend{.threads = 1}, groups) == expect);
  CHECK(run(ki::simd_cpu::backend{}, groups) == expect);
  CHECK(run(ki::reference::backend{}, groups) == expect);
}
