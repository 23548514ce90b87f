// Spec (kernelabstractions-writing-kernels.txt): the KA layer's work-group collectives —
// @groupreduce and @groupscan (inclusive and exclusive, in local linear order), the padding
// work-items' neutral element, and the groupsize bound of a kernel without a static size. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
// group_sums!(out, @Const(x)): s = @groupreduce(+, x[i], 0); local item 0 stores it.
struct group_sums {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> x) const {
    const i64 s = g.reduce(std::plus<>{}, i64{0}, [&](auto i) { return x[i.global_linear()]; });
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = s;
    });
  }
};

/// x -> a x + b: composing is associative, not commutative (exact in integers).
struct affine {
  i64 a, b;
  friend bool operator==(const affine&, const affine&) = default;
};
struct compose {  // first f, then g
  KI_DEVICE affine operator()(const affine& f, const affine& g) const { return {g.a * f.a, g.a * f.b + g.b}; }
};

// Every work-item's inclusive and exclusive @groupscan of affine maps made from its global index.
struct scans {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<affine> inc, ki::span<affine> exc) const {
    const auto val = [&](auto i) { return affine{1 + i.global_linear() % 3, i.global_linear()}; };
    auto in = g.scan(compose{}, affine{1, 0}, val);
    auto ex = g.scan(compose{}, affine{1, 0}, val, {.inclusive = false});
    g.items([&](auto i) {
      inc[i.global_linear()] = in(i);
      exc[i.global_linear()] = ex(i);
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE(
    "ka: @groupreduce (group_sums!): padding work-items add the neutral element without evaluating val", "[ka]",
    ki_test::backends) {
  auto b = ki_test::make<TestType>();
  for (const i64 n : {i64{256}, i64{1000}, i64{1}}) {
    KI_INFO("n = " << n << ", groups of 256");
    std::vector<i64> h(static_cast<std::size_t>(n));
    for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = k * k % 97;
    auto x = ki::to_device(b, h);  // exactly n elements: evaluating val for a padding item throws
    const i64 groups = (n + 255) / 256;
    auto out = ki::zeros<i64>(b, groups);
    ki::ka::kernel(b, group_sums{}, 256)({.ndrange = n}, out, x);
    ki::synchronize(b);
    std::vector<i64> want(static_cast<std::size_t>(groups), 0);
    for (i64 k = 0; k < n; ++k) want[static_cast<std::size_t>(k / 256)] += h[static_cast<std::size_t>(k)];
    CHECK(ki_test::read(b, out) == want);
  }
}

TEMPLATE_LIST_TEST_CASE("ka: @groupscan, inclusive and exclusive, in local linear order (a non-commutative operator)",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const i64 n = 100, w = 32;  // the last group is partial
  auto inc = ki::allocate<affine>(b, n);
  auto exc = ki::allocate<affine>(b, n);
  ki::ka::kernel(b, scans{}, w)({.ndrange = n}, inc, exc);
  ki::synchronize(b);
  const auto hi = ki_test::read(b, inc), he = ki_test::read(b, exc);
  i64 bad = 0;
  for (i64 g = 0; g * w < n; ++g) {
    affine acc{1, 0};
    for (i64 l = 0; l < w && g * w + l < n; ++l) {
      const i64 k = g * w + l;
      bad += !(he[static_cast<std::size_t>(k)] == acc);
      acc = compose{}(acc, affine{1 + k % 3, k});
      bad += !(hi[static_cast<std::size_t>(k)] == acc);
    }
  }
  CHECK(bad == 0);
}

namespace ki_spec_ka {
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
// group_sums! with the text's groupsize = 256 bound on a kernel without a static size.
struct bounded_sums {
  static constexpr unsigned line = __LINE__ + 4;
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> x, i64 bound) const {
    const i64 s =
        g.reduce(std::plus<>{}, i64{0}, [&](auto i) { return x[i.global_linear()]; }, {.groupsize = bound});
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = s;
    });
  }
};
// clang-format on
}  // namespace ki_spec_ka

#if KI_KA_TEST_CPU
/// The error synchronize reports for a launch (kernel `kernel`) whose collective at `line` has a
/// groupsize bound below its work-groups' `size` work-items.
template <class B>
void check_bound_error(const B& b, const std::string& collective, const std::string& kernel, unsigned line, i64 bound,
                       i64 size) {
  const std::string at = "15_ka_collectives.cpp:" + std::to_string(line);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::invalid_collective);
    CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
    CHECK(e.where() == at);
    CHECK_THAT(
        std::string(e.what()),
        ki_test::ContainsSubstring("kernel '" + kernel + "': work-group (0, 0, 0): its group-level code called " +
                                   collective + " at " + at) &&
            ki_test::ContainsSubstring("groupsize = " + std::to_string(bound) + ", a bound below the work-group's " +
                                       std::to_string(size) + " work-items"));
  }
}
#endif

TEMPLATE_LIST_TEST_CASE("ka: @groupreduce's groupsize bound: work-groups up to it reduce; a larger one is an error",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  std::vector<i64> h(512);
  for (i64 k = 0; k < 512; ++k) h[static_cast<std::size_t>(k)] = k % 13;
  auto x = ki::to_device(b, h);
  auto out = ki::zeros<i64>(b, 8);
  for (const i64 size : {i64{64}, i64{200}, i64{256}}) {
    KI_INFO("work-groups of " << size << ", bound 256");
    ki::ka::kernel(b, bounded_sums{})({.ndrange = 512, .workgroupsize = size}, out, x, i64{256});
    ki::synchronize(b);
    std::vector<i64> want(8, 0);
    for (i64 k = 0; k < 512; ++k) want[static_cast<std::size_t>(k / size)] += h[static_cast<std::size_t>(k)];
    const auto got = ki_test::read(b, out);
    CHECK(std::vector<i64>(got.begin(), got.begin() + (512 + size - 1) / size) ==
          std::vector<i64>(want.begin(), want.begin() + (512 + size - 1) / size));
  }
#if KI_KA_TEST_CPU
  // Above the bound (a GPU needs no bound and does not check it: docs/ka-layer.md).
  ki::ka::kernel(b, bounded_sums{})({.ndrange = 512, .workgroupsize = 128, .name = "bounded_sums"}, out, x, i64{100});
  check_bound_error(b, "@groupreduce", "bounded_sums", bounded_sums::line, 100, 128);
#endif
}

namespace ki_spec_ka {
// Inclusive @groupscan of x[i] (exactly n elements: evaluating val for a padding item throws),
// with an optional groupsize bound.
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
struct prefix_sums {
  static constexpr unsigned line = __LINE__ + 4;
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> x, i64 bound) const {
    auto s =
        g.scan(std::plus<>{}, i64{0}, [&](auto i) { return x[i.global_linear()]; }, {.groupsize = bound});
    g.items([&](auto i) { out[i.global_linear()] = s(i); });
  }
};
// clang-format on
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: @groupscan: padding work-items add the neutral element unevaluated; its groupsize bound",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  for (const i64 n : {i64{100}, i64{64}, i64{1}}) {
    KI_INFO("n = " << n << ", groups of 32");
    std::vector<i64> h(static_cast<std::size_t>(n));
    for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = k * 7 % 11;
    auto x = ki::to_device(b, h);
    auto out = ki::zeros<i64>(b, n);
    ki::ka::kernel(b, prefix_sums{}, 32)({.ndrange = n}, out, x, i64{0});
    ki::synchronize(b);
    std::vector<i64> want(static_cast<std::size_t>(n));
    for (i64 k = 0, acc = 0; k < n; ++k) {
      acc = (k % 32 == 0 ? 0 : acc) + h[static_cast<std::size_t>(k)];
      want[static_cast<std::size_t>(k)] = acc;
    }
    CHECK(ki_test::read(b, out) == want);
  }
#if KI_KA_TEST_CPU
  std::vector<i64> h(64, 1);
  auto x = ki::to_device(b, h);
  auto out = ki::zeros<i64>(b, 64);
  ki::ka::kernel(b, prefix_sums{})({.ndrange = 64, .workgroupsize = 64}, out, x, i64{64});  // at the bound
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 k) { return k + 1; }, "out");
  ki::ka::kernel(b, prefix_sums{})({.ndrange = 64, .workgroupsize = 64, .name = "prefix_sums"}, out, x, i64{32});
  check_bound_error(b, "@groupscan", "prefix_sums", prefix_sums::line, 32, 64);
#endif
}
