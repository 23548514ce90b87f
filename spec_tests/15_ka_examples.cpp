// Spec (kernelabstractions-writing-kernels.txt, kernelabstractions-api.txt): the texts' example
// kernels with the output printed there (0-based where they print indices) — saxpy!,
// fill_diagonal!, linear_example!, scale!, reverse_block!, vecadd — and the same algorithms in KI
// and KA style. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
// fill_diagonal!(A, val): A[I] = val where I[1] == I[2] (@index(Global, Cartesian)).
struct fill_diagonal {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a, double val) const {
    g.items([&](auto i) {
      const auto c = i.global();
      if (c.x == c.y) a(c.x, c.y) = val;
    });
  }
};

// scale!(A, factor): N = @uniform prod(@groupsize()); lmem = @localmem Float32 (N,) (the static
// size 8 of the launch below); lmem[i] = factor; @synchronize(); A[I] *= lmem[i].
struct scale {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a, float factor) const {
    const i64 n = g.groupsize_linear();  // @uniform
    auto lmem = g.template localmem<float, 8>([] {});
    g.items([&](auto i) { lmem[i.local_linear() % n] = factor; });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = a[i.global_linear()] * lmem[i.local_linear()]; });
  }
};

// reverse_block!(A): buf[i] = i; @synchronize(); A[I] = buf[N - 1 - i] (0-based).
struct reverse_block {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a) const {
    const i64 n = g.groupsize_linear();
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear(); });
    g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(buf[n - 1 - i.local_linear()]); });
  }
};

/// The text's examples that pass a Float64 value (saxpy!'s a, fill_diagonal!'s val) need a
/// device with float64: elsewhere such a launch is refused (the reference backend's profiles
/// without it), so the example is left out, saying so.
template <class B>
void needs_float64(const B& b) {
  if (!ki::supports_float64(b))
    SKIP("the text's example passes a Float64 value, and supports_float64 is false: " +
         ki_test::config<B>::describe(b));
}

// vecadd(A, @Const(B)) of the API text: I = @index(Global) (Linear); A[I] += B[I].
struct vecadd {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<float> a, ki::span<const float> b) const {
    g.items([&](auto i) { a[i.global_linear()] += b[i.global_linear()]; });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: saxpy! with @Const, a static work-group size and ndrange (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  needs_float64(b);
  auto x = iota_double(b, 8);
  auto y = ki_test::filled<double>(b, 8, 1.0);
  ki::ka::kernel k(b, saxpy{}, 8, 8);
  k(2.0, x, y);
  ki::synchronize(b);
  CHECK(ki_test::read(b, y) == std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17});
}

TEMPLATE_LIST_TEST_CASE("ka: fill_diagonal! with @index(Global, Cartesian) (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  needs_float64(b);
  auto a = ki::allocate<double>(b, {4, 4});
  std::vector<double> h(16);
  for (int k = 0; k < 16; ++k) h[static_cast<std::size_t>(k)] = 1.0 + k;  // A = reshape(1:16, 4, 4)
  ki::copyto(b, a, h);
  ki::ka::kernel(b, fill_diagonal{}, 4, {4, 4})(a, 42.0);
  ki::synchronize(b);
  CHECK(ki_test::read(b, a) == std::vector<double>{42, 2, 3, 4, 5, 42, 7, 8, 9, 10, 42, 12, 13, 14, 15, 42});
}

TEMPLATE_LIST_TEST_CASE("ka: linear_example! with the Global, Group and Local linear indices (0-based)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, linear_example{}, 4, 16)(a);
  ki::synchronize(b);
  // The text prints g + l for 1-based g and l (2, 3, 4, 5, 3, ...); 0-based it is 2 less.
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(i / 4 + i % 4); }, "A");
}

TEMPLATE_LIST_TEST_CASE("ka: scale! with @groupsize, @uniform, @localmem and @synchronize (the text's output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, scale{}, 8, 16)(a, 2.0f);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return 2.0 * static_cast<double>(i + 1); }, "A");
}

TEMPLATE_LIST_TEST_CASE("ka: reverse_block! reverses each work-group through local memory (0-based output)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = iota_double(b, 16);
  ki::ka::kernel(b, reverse_block{}, 8, 16)(a);
  ki::synchronize(b);
  // The text prints 8, 7, ..., 1 twice (1-based local indices).
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(7 - i % 8); }, "A");
}

namespace ki_spec_ka {
// The same algorithms in KI style (every work-item a thread of its own, ki::barrier) and in KA
// style (group-level code, explicit phases): a tree reduction of each work-group, and a tiled
// transpose through local memory.
constexpr i64 tree = 128, tile = 8;
struct ki_tree_sum {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> x) const {
    auto s = ki::localmemory<i64, tree>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    s[l] = x[gl];
    ki::barrier();
    for (i64 step = tree / 2; step > 0; step /= 2) {
      if (l < step) s[l] += s[l + step];
      ki::barrier();
    }
    if (l == 0) out[ki::get_group_id().x] = s[0];
  }
};
struct ka_tree_sum {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> x) const {
    auto s = g.template localmem<i64, tree>([] {});
    g.items([&](auto i) { s[i.local_linear()] = x[i.global_linear()]; });
    for (i64 step = tree / 2; step > 0; step /= 2) {
      g.synchronize();
      g.items(step, [&](auto i) { s[i.local_linear()] += s[i.local_linear() + step]; });
    }
    g.synchronize();
    g.items([&](auto i) {
      if (i.local_linear() == 0) out[i.group_linear()] = s[0];
    });
  }
};
// Inclusive prefix sums of each work-group: Hillis-Steele through local memory, and @groupscan.
struct ki_scan {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> x) const {
    auto a = ki::localmemory<i64, tree>([] {});
    auto c = ki::localmemory<i64, tree>([] {});
    const i64 l = ki::get_local_id().x, gl = ki::get_global_id().x;
    a[l] = x[gl];
    ki::barrier();
    for (i64 step = 1; step < tree; step *= 2) {
      c[l] = l >= step ? a[l - step] + a[l] : a[l];
      ki::barrier();
      a[l] = c[l];
      ki::barrier();
    }
    out[gl] = a[l];
  }
};
struct ka_scan {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> x) const {
    auto r = g.scan(std::plus<>{}, i64{0}, [&](auto i) { return x[i.global_linear()]; });
    g.items([&](auto i) { out[i.global_linear()] = r(i); });
  }
};
// out (ny x nx) = transpose of a (nx x ny), x fastest, through a tile x tile tile.
struct ki_transpose {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> a, i64 nx, i64 ny) const {
    auto t = ki::localmemory<i64, tile, tile>([] {});
    const auto l = ki::get_local_id(), gr = ki::get_group_id();
    t(l.x, l.y) = a[(gr.x * tile + l.x) + nx * (gr.y * tile + l.y)];
    ki::barrier();
    out[(gr.y * tile + l.x) + ny * (gr.x * tile + l.y)] = t(l.y, l.x);
  }
};
struct ka_transpose {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, ki::span<const i64> a, i64 nx, i64 ny) const {
    auto t = g.template localmem<i64, tile, tile>([] {});
    g.items([&](auto i) { t(i.local().x, i.local().y) = a[i.global().x + nx * i.global().y]; });
    g.synchronize();
    g.items([&](auto i) {
      const auto l = i.local(), gr = i.group();
      out[(gr.y * tile + l.x) + ny * (gr.x * tile + l.y)] = t(l.y, l.x);
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE(
    "ka: the same algorithms in KI and KA style give equal results (tree reduction, scan, transpose)", "[ka]",
    ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const i64 groups = 12, n = groups * tree;
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = (k * 7919) % 1009 - 500;
  auto x = ki::to_device(b, h);
  auto ki_sums = ki::zeros<i64>(b, groups), ka_sums = ki::zeros<i64>(b, groups);
  ki::launch(b, {.numgroups = groups, .workgroupsize = tree}, ki_tree_sum{}, ki_sums, x);
  ki::ka::kernel(b, ka_tree_sum{}, tree)({.ndrange = n}, ka_sums, ki::ka::Const(x));
  ki::synchronize(b);
  std::vector<i64> want(static_cast<std::size_t>(groups), 0);
  for (i64 k = 0; k < n; ++k) want[static_cast<std::size_t>(k / tree)] += h[static_cast<std::size_t>(k)];
  CHECK(ki_test::read(b, ki_sums) == want);
  CHECK(ki_test::read(b, ka_sums) == want);
  auto ki_scanned = ki::zeros<i64>(b, n), ka_scanned = ki::zeros<i64>(b, n);
  ki::launch(b, {.numgroups = groups, .workgroupsize = tree}, ki_scan{}, ki_scanned, x);
  ki::ka::kernel(b, ka_scan{}, tree)({.ndrange = n}, ka_scanned, ki::ka::Const(x));
  ki::synchronize(b);
  const auto s1 = ki_test::read(b, ki_scanned), s2 = ki_test::read(b, ka_scanned);
  CHECK(s1 == s2);
  std::vector<i64> prefix(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k)
    prefix[static_cast<std::size_t>(k)] =
        h[static_cast<std::size_t>(k)] + (k % tree ? prefix[static_cast<std::size_t>(k - 1)] : 0);
  CHECK(s2 == prefix);
  const i64 nx = 24, ny = 16;
  std::vector<i64> ha(static_cast<std::size_t>(nx * ny));
  for (i64 k = 0; k < nx * ny; ++k) ha[static_cast<std::size_t>(k)] = k * 3 + 1;
  auto a = ki::to_device(b, ha);
  auto ki_t = ki::zeros<i64>(b, nx * ny), ka_t = ki::zeros<i64>(b, nx * ny);
  ki::launch(b, {.numgroups = {nx / tile, ny / tile}, .workgroupsize = {tile, tile}}, ki_transpose{}, ki_t, a, nx, ny);
  ki::ka::kernel(b, ka_transpose{}, {tile, tile})({.ndrange = {nx, ny}}, ka_t, ki::ka::Const(a), nx, ny);
  ki::synchronize(b);
  const auto t1 = ki_test::read(b, ki_t), t2 = ki_test::read(b, ka_t);
  CHECK(t1 == t2);
  ki_test::check_all(
      t2, [&](i64 k) { return ha[static_cast<std::size_t>((k / ny) + nx * (k % ny))]; }, "the transpose");
}

TEMPLATE_LIST_TEST_CASE("ka: vecadd with a static work-group size of 64, the ndrange at launch and @Const(B)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const i64 n = 1024;
  std::vector<float> hb(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) hb[static_cast<std::size_t>(k)] = static_cast<float>(k % 17) * 0.25f;
  auto a = ki_test::filled<float>(b, n, 1.0f);  // A = ones(1024)
  auto bb = ki::to_device(b, hb);
  ki::ka::kernel k(b, vecadd{}, 64);        // vecadd(CPU(), 64)
  k({.ndrange = n}, a, ki::ka::Const(bb));  // (A, B, ndrange = size(A))
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [&](i64 i) { return 1.0f + hb[static_cast<std::size_t>(i)]; }, "A");
}
