// Spec (kernelabstractions-writing-kernels.txt, kernelabstractions-api.txt): the KA layer's
// kernels — every example of the texts with the output printed there (0-based where they print
// indices), and a test per construct and per error. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports (an exception or a bad index
// in a phase, a KernelInterface function in a KA kernel, the oracle's phase order) are CPU-only:
// a GPU kernel cannot throw, and a trap would end the GPU context.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <vector>

#include <ki/ka.hpp>

#include "backends.hpp"
#include "capture_stdout.hpp"

#define KI_KA_TEST_CPU !(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP)

namespace ki_spec_ka {
using i64 = std::int64_t;

// saxpy!(a, @Const(X), Y): Y[I] = a * X[I] + Y[I] (a: the text's Float64, or a float where the
// test is not about it: a device without float64 refuses a double argument).
struct saxpy {
  template <class G, class A>
  KI_DEVICE void operator()(G& g, A a, ki::span<const double> x, ki::span<double> y) const {
    g.items([&](auto i) {
      const i64 k = i.global_linear();
      y[k] = a * x[k] + y[k];
    });
  }
};

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

// linear_example!(A): A[I] = g + l with I, g, l the Global, Group and Local linear indices.
struct linear_example {
  static constexpr unsigned line = __LINE__ + 3;  // the access
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a) const {
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(i.group_linear() + i.local_linear()); });
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

template <class B>
ki::array<double, B> iota_double(const B& b, i64 n, double first = 1.0) {
  std::vector<double> h(static_cast<std::size_t>(n));
  for (i64 k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = first + static_cast<double>(k);
  return ki::to_device(b, h);
}

// The kernel function converted with argconvert, as KI kernels are (ki/ka/kernel.hpp): a host
// form that names an array (a pointer: trivially copyable, but useless on a device) and its device
// form, a span. Without the conversion the kernel would be the host form, which has no call
// operator.
inline int ka_conversions = 0;
struct ramp_device {
  ki::span<i64> a;
  i64 v;
  template <class G>
  KI_DEVICE void operator()(G& g) const {
    g.items([&](auto i) { a[i.global_linear()] = v + i.global_linear(); });
  }
};
template <class B>
struct ramp_host {
  ki::array<i64, B>* a;
  i64 v;
};
template <class B>
ramp_device argconvert(const B& b, const ramp_host<B>& h) {
  ++ka_conversions;
  return {ki::argconvert(b, *h.a), h.v};
}
/// A foreach_index body in the same way: a[i] += 1.
struct bump_device {
  ki::span<i64> a;
  KI_DEVICE void operator()(i64 i) const { a[i] += 1; }
};
template <class B>
struct bump_host {
  ki::array<i64, B>* a;
};
template <class B>
bump_device argconvert(const B& b, const bump_host<B>& h) {
  ++ka_conversions;
  return {ki::argconvert(b, *h.a)};
}
}  // namespace ki_spec_ka

using namespace ki_spec_ka;

TEMPLATE_LIST_TEST_CASE("ka: the kernel function is converted with argconvert, once per kernel", "[ka]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 40;
  auto a = ki_test::filled<i64>(b, n, -1);
  ka_conversions = 0;
  ki::ka::kernel k(b, ramp_host<TestType>{&a, 10}, 8);
  static_assert(std::is_same_v<decltype(k), ki::ka::kernel<TestType, ramp_device>>);
  CHECK(ka_conversions == 1);
  CHECK(k.function().a.data() == a.data());
  CHECK(k.host_callable() != nullptr);  // the host form is kept
  k({.ndrange = n});
  k({.ndrange = n});
  CHECK(ka_conversions == 1);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return 10 + i; }, "ramp");
  ki::ka::kernel s(b, ramp_host<TestType>{&a, 20}, ki::ka::groupsize<8>, n);
  s();
  CHECK(ka_conversions == 2);
  // foreach_index converts its body (its kernel's device form holds the body's).
  ki::ka::foreach_index(b, n, bump_host<TestType>{&a});
  CHECK(ka_conversions == 3);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return 21 + i; }, "ramp, then bump");
}

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

// Records every work-item's indices: global linear slot <- (global x, y, local linear, group linear).
struct record_indices {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    g.items([&](auto i) {
      const auto c = i.global();
      const i64 k = 4 * i.global_linear();
      out[k] = c.x;
      out[k + 1] = c.y;
      out[k + 2] = i.local_linear();
      out[k + 3] = i.group_linear();
    });
  }
};

// Counts the item statements that run, and marks the groups whose group-level code ran (padding
// items run the latter but not the former; how many times group-level code runs per group is
// the backend's: once on a CPU, once per thread on a GPU).
struct count_statements {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> items, ki::span<i64> groups) const {
    groups[g.group_linear()] = 1;
    g.items([&](auto i) { items[i.global_linear()] += 1; });
  }
};

// @private survives @synchronize: each work-item keeps two values across three phases.
struct private_values {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    auto p = g.template private_<i64, 2>();
    g.items([&](auto i) {
      p[i][0] = 10 * i.global_linear();
      p[i][1] = i.local_linear();
    });
    g.synchronize();
    g.items([&](auto i) { p[i][0] += 1; });
    g.synchronize(i64{1} > 0);
    g.items([&](auto i) { out[i.global_linear()] = p[i][0] + p[i][1]; });
  }
};

// Work-item `bad` of group `group` throws in the second phase (at `line`, the items() call).
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
struct throws_in_phase {
  static constexpr unsigned line = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out, i64 group, i64 bad) const {
    g.items([&](auto i) { out[i.global_linear()] = 1; });
    g.synchronize();
    g.items([&](auto i) {
      if (i.group_linear() == group && i.local_linear() == bad) throw std::runtime_error("boom");
    });
  }
};
// clang-format on

// Every work-item writes its local id to one element: the last one of the phase's order wins.
struct last_writer {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    g.items([&](auto i) { out[i.group_linear()] = i.local_linear(); });
  }
};

}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: an ndrange of offset ranges: Cartesian indices shifted, Linear counted from 0", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  // The interior plus two halo cells on each side of a 5 x 3 grid: x in [-2, 7), y in [-1, 4).
  const ki::ka::ndrange r{ki::range{-2, 7}, ki::range{-1, 4}};
  const i64 nx = 9, ny = 5;
  auto out = ki::zeros<i64>(b, 4 * nx * ny);
  ki::ka::kernel k(b, record_indices{}, {4, 2});
  k({.ndrange = r}, out);
  ki::synchronize(b);
  const auto h = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const std::size_t k4 = static_cast<std::size_t>(4 * (x + nx * y));
      const i64 group = x / 4 + 3 * (y / 2);  // 3 x 3 groups of 4 x 2
      bad += h[k4] != x - 2 || h[k4 + 1] != y - 1 || h[k4 + 2] != x % 4 + 4 * (y % 2) || h[k4 + 3] != group;
    }
  CHECK(bad == 0);
  // The same space given statically.
  auto out2 = ki::zeros<i64>(b, 4 * nx * ny);
  ki::ka::kernel(b, record_indices{}, {4, 2}, r)(out2);
  ki::synchronize(b);
  CHECK(ki_test::read(b, out2) == h);
}

TEMPLATE_LIST_TEST_CASE("ka: padding work-items of a partial group run the group-level code but no item statement",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  for (const i64 n : {i64{1}, i64{7}, i64{10}, i64{64}, i64{65}}) {
    KI_INFO("ndrange " << n << ", work-groups of 8");
    auto items = ki::zeros<i64>(b, n);
    auto groups = ki::zeros<i64>(b, (n + 7) / 8);
    ki::ka::kernel(b, count_statements{}, 8)({.ndrange = n}, items, groups);
    ki::synchronize(b);
    CHECK(ki_test::read(b, items) == std::vector<i64>(static_cast<std::size_t>(n), 1));
    CHECK(ki_test::read(b, groups) == std::vector<i64>(static_cast<std::size_t>((n + 7) / 8), 1));
  }
  // An empty ndrange runs nothing.
  auto none = ki::zeros<i64>(b, 1);
  ki::ka::kernel(b, count_statements{}, 8)({.ndrange = ki::range{5, 2}}, none, none);
  ki::synchronize(b);
  CHECK(ki_test::read(b, none) == std::vector<i64>{0});
}

TEMPLATE_LIST_TEST_CASE("ka: @private values survive @synchronize", "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 100);
  ki::ka::kernel(b, private_values{}, 16)({.ndrange = 100}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return 10 * i + 1 + i % 16; }, "out");
}

TEMPLATE_LIST_TEST_CASE("ka: a dynamic kernel takes its ndrange and work-group size at launch", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  ki::ka::kernel k(b, linear_example{});
  auto a = ki::zeros<double>(b, 40);
  k({.ndrange = 40, .workgroupsize = 10}, a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(i / 10 + i % 10); }, "A");
  // Without a work-group size: one is chosen (256 work-items for one dimension).
  k({.ndrange = 40}, a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return static_cast<double>(i); }, "A (one group)");
}

TEMPLATE_LIST_TEST_CASE("ka: misuse is std::invalid_argument naming the value, before anything runs", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::zeros<double>(b, 16);
  using ki_test::ContainsSubstring;
  const auto msg = [&](auto&& f) { return ki_test::thrown_message<std::invalid_argument>(f); };
  // No ndrange at all.
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{})(a); }), ContainsSubstring("no ndrange"));
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, 4)(a); }), ContainsSubstring("no ndrange"));
  // A launch ndrange or work-group size other than the static one.
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, 4, 16)({.ndrange = 12}, a); }),
             ContainsSubstring("12") && ContainsSubstring("16"));
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, 4)({.ndrange = 16, .workgroupsize = 8}, a); }),
             ContainsSubstring("8") && ContainsSubstring("4"));
  // A negative extent; a work-group size of 0; one beyond the device; more dimensions than the ndrange.
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{})({.ndrange = -3}, a); }), ContainsSubstring("-3"));
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, 0); }),
             ContainsSubstring("workgroupsize 0: each dimension must be at least 1"));
  const i64 too_many = ki::max_work_group_size(b) + 1;
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{})({.ndrange = 16, .workgroupsize = too_many}, a); }),
             ContainsSubstring(std::to_string(too_many)) && ContainsSubstring("max_work_group_size"));
  CHECK_THAT(msg([&] {
               ki::ka::kernel(b, linear_example{}, {4, 4})({.ndrange = 16}, a);
             }),
             ContainsSubstring("(4, 4)") && ContainsSubstring("(16)"));
  // Nothing ran.
  CHECK(ki_test::read(b, a) == std::vector<double>(16, 0.0));
}

#if KI_KA_TEST_CPU
TEMPLATE_LIST_TEST_CASE("ka: an exception in a phase surfaces at synchronize with the work-group, work-item and line",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 64);
  ki::ka::kernel(b, throws_in_phase{}, 16)({.ndrange = 64, .name = "throws_in_phase"}, out, i64{2}, i64{5});
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::exception);
    CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
    CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
    CHECK(e.where() == "15_ka_kernels.cpp:" + std::to_string(throws_in_phase::line));
    const std::string what = e.what();
    CHECK_THAT(what,
               ki_test::ContainsSubstring("kernel 'throws_in_phase': work-item (5, 0, 0) (linear 5) of work-group "
                                          "(2, 0, 0) threw boom (in the phase at 15_ka_kernels.cpp:" +
                                          std::to_string(throws_in_phase::line)));
  }
  // Still usable.
  ki::ka::kernel(b, throws_in_phase{}, 16)({.ndrange = 64}, out, i64{-1}, i64{-1});
  ki::synchronize(b);
  CHECK(ki_test::read(b, out) == std::vector<i64>(64, 1));
}
#endif

#if KI_KA_TEST_CPU
TEMPLATE_LIST_TEST_CASE("ka: a ki::span index out of bounds in a phase names the work-item", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::zeros<double>(b, 15);  // one element short of the ndrange
  ki::ka::kernel(b, linear_example{}, 4, 16)(a);
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::exception);
    CHECK(e.group() == ki::xyz<i64>{3, 0, 0});
    CHECK(e.local() == ki::xyz<i64>{3, 0, 0});
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 15 is out of bounds at 15_ka_kernels.cpp:" +
                                                                 std::to_string(linear_example::line) +
                                                                 " for a ki::span<double> of 15 elements"));
  }
}
#endif

#if KI_TEST_BACKEND_REFERENCE
TEST_CASE("ka: the oracle runs a phase's work-items in its schedule's order (forward, reverse, random)", "[ka]") {
  for (const auto order :
       {ki::reference::order::forward, ki::reference::order::reverse, ki::reference::order::random}) {
    ki::reference::backend b{.threads = 1};
    b.schedule.items = order;
    b.schedule.seed = order == ki::reference::order::forward ? 0 : 7;
    auto out = ki::zeros<i64>(b, 64);
    ki::ka::kernel(b, last_writer{}, 32)({.ndrange = 64 * 32}, out);
    const auto h = ki_test::read(b, out);
    KI_INFO("order " << static_cast<int>(order));
    if (order == ki::reference::order::forward) CHECK(h == std::vector<i64>(64, 31));
    if (order == ki::reference::order::reverse) CHECK(h == std::vector<i64>(64, 0));
    if (order == ki::reference::order::random) {  // a permutation per group: the last writers differ
      i64 not_last = 0;
      for (i64 v : h) not_last += v != 31;
      CHECK(not_last > 32);
    }
  }
}
#endif

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
// A KA kernel that calls a KernelInterface device function: `what` 0 a barrier, 1 a shuffle.
struct mixes_layers {
  static constexpr unsigned line_barrier = __LINE__ + 4, line_shfl = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out, int what) const {
    g.items([&](auto i) {
      if (what == 0) ki::barrier();
      else out[i.global_linear()] = ki::shfl_xor(i.local_linear(), 1);
    });
  }
};
// More KernelInterface device functions in a KA kernel: a vote, a sub-group collective, an
// index query, a sub-group query.
struct mixes_more {
  static constexpr unsigned line = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out, int what) const {
    g.items([&](auto i) {
      i64 v = 0;
      if (what == 0) v = ki::sub_group_any(i.local_linear() > 0); else if (what == 1) v = ki::sub_group_reduce(std::plus<>{}, i64{1}); else if (what == 2) v = ki::get_local_id().x; else v = ki::get_sub_group_size();
      out[i.global_linear()] = v;
    });
  }
};
// clang-format on
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE(
    "ka: a KernelInterface device function in a KA kernel is an error naming the function and its line", "[ka]",
    ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 32);
  const auto expect = [&](const std::string& fn, unsigned line) {
    KI_INFO(fn);
    try {
      ki::synchronize(b);
      FAIL("no error");
    } catch (const ki::kernel_error& e) {
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
      CHECK_THAT(std::string(e.what()),
                 ki_test::ContainsSubstring("ki: " + fn + " at 15_ka_kernels.cpp:" + std::to_string(line) +
                                            " is a KernelInterface device function; a KA kernel"));
    }
  };
  for (const int what : {0, 1}) {
    ki::ka::kernel(b, mixes_layers{}, 16)({.ndrange = 32}, out, what);
    expect(what == 0 ? "barrier" : "shfl_xor", what == 0 ? mixes_layers::line_barrier : mixes_layers::line_shfl);
  }
  // A vote, a sub-group collective, an index query and a sub-group query.
  const char* names[] = {"sub_group_any", "sub_group_reduce", "get_local_id", "get_sub_group_size"};
  for (const int what : {0, 1, 2, 3}) {
    ki::ka::kernel(b, mixes_more{}, 16)({.ndrange = 32}, out, what);
    expect(names[what], mixes_more::line);
  }
  CHECK(ki_test::read(b, out) == std::vector<i64>(32, 0));
}
#endif

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

TEMPLATE_LIST_TEST_CASE("ka: @Const arguments are read-only views; one that overlaps a writable argument is refused",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto x = iota_double(b, 8);
  auto y = ki_test::filled<double>(b, 8, 1.0);
  ki::ka::kernel k(b, saxpy{}, 8, 8);
  k(2.0f, ki::ka::Const(x), y);  // the text's saxpy!(a, @Const(X), Y), a as a float
  ki::synchronize(b);
  CHECK(ki_test::read(b, y) == std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17});
  using ki_test::ContainsSubstring;
  // kernel(A, A), and a view of A: refused before anything runs, naming both arguments.
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { k(2.0f, ki::ka::Const(y), y); }),
             ContainsSubstring("argument 1 is @Const") && ContainsSubstring("writable argument 2"));
  const ki::span<double> view(ki::argconvert(b, y).data() + 4, 4);
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>(
                 [&] { ki::ka::kernel(b, saxpy{}, 4, 4)(2.0f, ki::ka::Const(y), view); }),
             ContainsSubstring("argument 1 is @Const") && ContainsSubstring("writable argument 2"));
  CHECK(ki_test::read(b, y) == std::vector<double>{3, 5, 7, 9, 11, 13, 15, 17});
  // Two read-only uses of one array, and disjoint halves, are fine.
  const ki::span<double> low(ki::argconvert(b, y).data(), 4);
  const ki::span<const double> high(ki::argconvert(b, y).data() + 4, 4);
  ki::ka::kernel(b, saxpy{}, 4, 4)(1.0f, ki::ka::Const(high), low);
  ki::synchronize(b);
  CHECK(ki_test::read(b, y) == std::vector<double>{14, 18, 22, 26, 11, 13, 15, 17});
}

namespace ki_spec_ka {
// scale!(y, x) of the text: y[i] = 2 * x[i] + 1 for every index of eachindex(y, x).
struct scale_body {
  ki::span<double> y;
  ki::span<const double> x;
  KI_DEVICE void operator()(i64 i) const { y[i] = 2 * x[i] + 1; }
};
// smooth!(B, A) of the text, on the interior of an nx x ny matrix (x fastest).
struct smooth_body {
  ki::span<double> out;
  ki::span<const double> a;
  i64 nx;
  KI_DEVICE void operator()(ki::xyz<i64> c) const {
    const auto at = [&](i64 x, i64 y) { return a[x + nx * y]; };
    out[c.x + nx * c.y] = (at(c.x - 1, c.y) + at(c.x + 1, c.y) + at(c.x, c.y - 1) + at(c.x, c.y + 1)) / 4;
  }
};
struct count_body {
  ki::span<i64> hits;
  i64 first;
  KI_DEVICE void operator()(i64 i) const { hits[i - first] += 1; }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(f, arrays...) runs f once per index of the arrays (scale!)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto x = iota_double(b, 1000, 0.0);
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(scale_body{ki::argconvert(b, y), ki::argconvert(b, x)}, y, x);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, y), [](i64 i) { return 2.0 * static_cast<double>(i) + 1; }, "y");
  // The index must be valid for every array.
  auto short_x = iota_double(b, 999);
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] {
               ki::ka::foreach_index(scale_body{ki::argconvert(b, y), ki::argconvert(b, short_x)}, y, short_x);
             }),
             ki_test::ContainsSubstring("999") && ki_test::ContainsSubstring("1000"));
}

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(backend, space, f) gives the space's indices as they are (smooth!)", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const i64 nx = 7, ny = 5;
  std::vector<double> h(static_cast<std::size_t>(nx * ny));
  for (i64 k = 0; k < nx * ny; ++k) h[static_cast<std::size_t>(k)] = static_cast<double>(k * k % 11);
  auto a = ki::to_device(b, h);
  auto out = ki::zeros<double>(b, nx * ny);
  // The interior: CartesianIndices((2:size(A,1)-1, 2:size(A,2)-1)), 0-based [1, n - 1).
  ki::ka::foreach_index(b, ki::ka::ndrange{ki::range{1, nx - 1}, ki::range{1, ny - 1}},
                        smooth_body{ki::argconvert(b, out), ki::argconvert(b, a), nx});
  ki::synchronize(b);
  const auto got = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 y = 0; y < ny; ++y)
    for (i64 x = 0; x < nx; ++x) {
      const auto at = [&](i64 u, i64 v) { return h[static_cast<std::size_t>(u + nx * v)]; };
      const bool interior = x > 0 && x < nx - 1 && y > 0 && y < ny - 1;
      const double want = interior ? (at(x - 1, y) + at(x + 1, y) + at(x, y - 1) + at(x, y + 1)) / 4 : 0.0;
      bad += got[static_cast<std::size_t>(x + nx * y)] != want;
    }
  CHECK(bad == 0);
  // A 1-D range: the indices as they are, from its first.
  auto hits = ki::zeros<i64>(b, 10);
  ki::ka::foreach_index(b, ki::range{-3, 7}, count_body{ki::argconvert(b, hits), -3});
  ki::synchronize(b);
  CHECK(ki_test::read(b, hits) == std::vector<i64>(10, 1));
}

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(b, space, f, ki::ka::unchecked) runs what the checked form runs", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  // 1000: three whole groups of 256 and a partial one.
  auto x = iota_double(b, 1000, 0.0);
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, scale_body{ki::argconvert(b, y), ki::argconvert(b, x)}, ki::ka::unchecked);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, y), [](i64 i) { return 2.0 * static_cast<double>(i) + 1; }, "y");
  auto hits = ki::zeros<i64>(b, 10);
  ki::ka::foreach_index(b, ki::range{-3, 7}, count_body{ki::argconvert(b, hits), -3}, ki::ka::unchecked);
  ki::synchronize(b);
  CHECK(ki_test::read(b, hits) == std::vector<i64>(10, 1));
  const i64 nx = 7, ny = 5;
  auto a = iota_double(b, nx * ny);
  auto out = ki::zeros<double>(b, nx * ny);
  ki::ka::foreach_index(b, ki::ka::ndrange{ki::range{1, nx - 1}, ki::range{1, ny - 1}},
                        smooth_body{ki::argconvert(b, out), ki::argconvert(b, a), nx}, ki::ka::unchecked);
  ki::synchronize(b);
  const auto got = ki_test::read(b, out);
  i64 bad = 0;
  for (i64 j = 0; j < ny; ++j)
    for (i64 i = 0; i < nx; ++i) {
      const bool interior = i > 0 && i < nx - 1 && j > 0 && j < ny - 1;
      // iota from 1: the mean of the four neighbours of element k is k + 1.
      bad += got[static_cast<std::size_t>(i + nx * j)] != (interior ? static_cast<double>(i + nx * j + 1) : 0.0);
    }
  CHECK(bad == 0);
}

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
struct throws_at {
  ki::span<double> y;
  i64 bad;
  void operator()(i64 i) const {
    if (i == bad) throw std::runtime_error("boom");
    y[i] = 1;
  }
};
struct one_past {
  static constexpr unsigned line = __LINE__ + 2;
  ki::span<double> y;
  void operator()(i64 i) const { y[i + 1] = 1; }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: an unchecked phase that throws leaves the checks of later ones on", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, throws_at{ki::argconvert(b, y), 700}, ki::ka::unchecked);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("threw boom"));
  ki::ka::foreach_index(b, 1000, one_past{ki::argconvert(b, y)});
  CHECK_THAT(
      ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
      ki_test::ContainsSubstring("index 1000 is out of bounds at 15_ka_kernels.cpp:" + std::to_string(one_past::line)));
}
#endif

#if KI_TEST_BACKEND_REFERENCE
TEST_CASE("ka: the reference backend keeps the checks of an unchecked phase", "[ka]") {
  ki::reference::backend b{};
  auto y = ki::zeros<double>(b, 1000);
  ki::ka::foreach_index(b, 1000, one_past{ki::argconvert(b, y)}, ki::ka::unchecked);
  CHECK_THAT(ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); }),
             ki_test::ContainsSubstring("index 1000 is out of bounds at 15_ka_kernels.cpp:" +
                                        std::to_string(one_past::line)) &&
                 ki_test::ContainsSubstring("work-item (231, 0, 0)"));
}
#endif

namespace ki_spec_ka {
// A phase over the first `count` work-items: each records that it ran (Unchecked: written
// g.items(ki::ka::unchecked, count, f), which must run the same work-items).
template <bool Unchecked = false>
struct first_items {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> ran, i64 count) const {
    const auto f = [&](auto i) { ran[i.global_linear()] += 1 + i.local_linear(); };
    if constexpr (Unchecked) g.items(ki::ka::unchecked, count, f);
    else g.items(count, f);
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: items(count, f) is the phase of the first count work-items in local linear order", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  // 1-D groups of 8 over 20 items (the last group partial), and 2-D groups of 4 x 3 over 10 x 5.
  const auto run = [&](auto kernel, const char* form) {
    KI_INFO(form);
    for (const i64 count : {i64{-3}, i64{0}, i64{1}, i64{3}, i64{7}, i64{8}, i64{100}}) {  // (-3: the mask t < -3)
      KI_INFO("count " << count);
      auto ran = ki::zeros<i64>(b, 20);
      ki::ka::kernel(b, kernel, 8)({.ndrange = 20}, ran, count);
      ki_test::check_all(
          ki_test::read(b, ran), [&](i64 k) { return k % 8 < count ? 1 + k % 8 : 0; }, "1-D");
      auto ran2 = ki::zeros<i64>(b, 50);
      ki::ka::kernel(b, kernel, {4, 3})({.ndrange = {10, 5}}, ran2, count);
      ki_test::check_all(
          ki_test::read(b, ran2),
          [&](i64 k) {
            const i64 x = k % 10, y = k / 10, l = x % 4 + 4 * (y % 3);
            return l < count ? 1 + l : 0;
          },
          "2-D");
    }
  };
  run(first_items<false>{}, "items(count, f)");
  run(first_items<true>{}, "items(ki::ka::unchecked, count, f)");
}

namespace ki_spec_ka {
// A phase over local_ids: each work-item it chooses records that it ran (Unchecked: written
// g.items(ki::ka::unchecked, ids, f), which must run the same work-items).
template <bool Unchecked = false>
struct chosen_items {
  static constexpr unsigned items_line = __LINE__ + 6;  // the checked form's g.items
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> ran, i64 first, i64 count, i64 stride) const {
    const auto f = [&](auto i) { ran[i.global_linear()] += 1 + i.local_linear(); };
    const ki::ka::local_ids ids{.first = first, .count = count, .stride = stride};
    if constexpr (Unchecked) g.items(ki::ka::unchecked, ids, f);
    else g.items(ids, f);
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: items(local_ids{first, count, stride}, f) is the phase of those work-items", "[ka]",
                        ki_test::backends) {
  // The masks of real kernels as ranges: lo <= t <= hi, t > i, the second half, t % p == 0, and
  // their edges (an empty range, a range past the group, a stride past it), on a 1-D group of 8
  // over 20 items (the last partial) and a 2-D group of 4 x 3 over 10 x 5 (partial in both).
  auto b = ki_test::make<TestType>();
  struct ids {
    i64 first, count, stride;
  };
  const std::vector<ids> cases{{0, INT64_MAX, 1}, {2, 4, 1},  {5, INT64_MAX, 1},   {6, INT64_MAX, 1},
                               {0, INT64_MAX, 3}, {1, 3, 2},  {7, 1, 1},           {0, 0, 1},
                               {11, 5, 1},        {12, 9, 1}, {3, INT64_MAX, 100}, {0, 2, 5}};
  const auto chosen = [](const ids& c, i64 l) {
    const i64 t = l - c.first;
    return t >= 0 && t % c.stride == 0 && t / c.stride < c.count;
  };
  const auto run = [&](auto kernel, const char* form) {
    KI_INFO(form);
    for (const auto& c : cases) {
      KI_INFO("first " << c.first << ", count " << c.count << ", stride " << c.stride);
      auto ran = ki::zeros<i64>(b, 20);
      ki::ka::kernel(b, kernel, 8)({.ndrange = 20}, ran, c.first, c.count, c.stride);
      ki_test::check_all(
          ki_test::read(b, ran), [&](i64 k) { return chosen(c, k % 8) ? 1 + k % 8 : 0; }, "1-D");
      auto ran2 = ki::zeros<i64>(b, 50);
      ki::ka::kernel(b, kernel, {4, 3})({.ndrange = {10, 5}}, ran2, c.first, c.count, c.stride);
      ki_test::check_all(
          ki_test::read(b, ran2),
          [&](i64 k) {
            const i64 x = k % 10, y = k / 10, l = x % 4 + 4 * (y % 3);
            return chosen(c, l) ? 1 + l : 0;
          },
          "2-D");
      // A static size: the CPU backends' constant-length loops.
      auto ran3 = ki::zeros<i64>(b, 24);
      ki::ka::kernel(b, kernel, ki::ka::groupsize<4, 3>)({.ndrange = {8, 3}}, ran3, c.first, c.count, c.stride);
      ki_test::check_all(
          ki_test::read(b, ran3),
          [&](i64 k) {
            const i64 l = k % 8 % 4 + 4 * (k / 8);
            return chosen(c, l) ? 1 + l : 0;
          },
          "2-D static");
    }
  };
  run(chosen_items<false>{}, "items(local_ids, f)");
  run(chosen_items<true>{}, "items(ki::ka::unchecked, local_ids, f)");
}

#if KI_KA_TEST_CPU
TEMPLATE_LIST_TEST_CASE("ka: a bad local_ids is an error naming the value and the phase's line", "[ka]",
                        ki_test::backends) {
  // first < 0, count < 0, stride < 1: the CPU backends report the call (a GPU does not check).
  auto b = ki_test::make<TestType>();
  const std::string line = "15_ka_kernels.cpp:" + std::to_string(ki_spec_ka::chosen_items<>::items_line);
  for (const auto& [first, count, stride, why] :
       std::vector<std::tuple<i64, i64, i64, std::string>>{{-1, 4, 1, "first must be at least 0"},
                                                           {0, -2, 1, "count must be at least 0"},
                                                           {0, 4, 0, "stride must be at least 1"}}) {
    KI_INFO(why);
    auto ran = ki::zeros<i64>(b, 16);
    ki::ka::kernel(b, ki_spec_ka::chosen_items<>{}, 8)({.ndrange = 16}, ran, first, count, stride);
    const std::string msg = ki_test::thrown_message<ki::kernel_error>([&] { ki::synchronize(b); });
    CHECK_THAT(msg, ki_test::ContainsSubstring(why) &&
                        ki_test::ContainsSubstring("local_ids{.first = " + std::to_string(first)) &&
                        ki_test::ContainsSubstring(line));
    CHECK(ki_test::read(b, ran) == std::vector<i64>(16, 0));
  }
}
#endif

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
                 ki_test::ContainsSubstring("15_ka_kernels.cpp:" + std::to_string(local_one_past<false>::read_line)) &&
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
                 ki_test::ContainsSubstring("15_ka_kernels.cpp:" + std::to_string(local_one_past<true>::write_line)) &&
                 ki_test::ContainsSubstring("work-item (7, 0, 0)"));
}
#endif

namespace ki_spec_ka {
// The grid-stride phase: every k below n once, by the work-item whose global linear index is k
// modulo the ndrange's count (who[k]); a second element per k counts the visits.
struct grid_visits {
  static constexpr unsigned line = __LINE__ + 5;  // the access
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out, i64 n) const {
    g.grid_stride(n, [&](auto i, i64 k) {
      out[2 * k] += 1;
      out[2 * k + 1] = i.global_linear();
    });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: grid_stride(n, f) visits every k below n once, from work-item k mod count", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  struct shape {
    ki::ka::ndrange range;
    ki::dims group;
    i64 count;
  };
  // 1-D groups of 8 over 20 (the last group partial), 2-D groups of 4 x 3 over 10 x 5 (partial in
  // both), and an offset range of 7 indices (Global Linear counts from 0 there too).
  const shape shapes[] = {{ki::ka::ndrange{20}, ki::dims{8}, 20},
                          {ki::ka::ndrange{10, 5}, ki::dims{4, 3}, 50},
                          {ki::ka::ndrange{ki::range{-2, 5}}, ki::dims{4}, 7}};
  for (const auto& sh : shapes) {
    for (const i64 n : {i64{0}, i64{1}, sh.count - 1, sh.count, 3 * sh.count + 2}) {
      KI_INFO("count " << sh.count << ", n " << n);
      auto out = ki::zeros<i64>(b, 2 * n + 2);
      ki::ka::kernel(b, grid_visits{})({.ndrange = sh.range, .workgroupsize = sh.group}, out, n);
      ki_test::check_all(ki_test::read(b, out), [&](i64 j) -> i64 {
        const i64 k = j / 2;
        if (k >= n) return 0;
        return j % 2 == 0 ? 1 : k % sh.count;
      });
    }
  }
}

#if KI_KA_TEST_CPU
TEMPLATE_LIST_TEST_CASE("ka: an index out of bounds in grid_stride names the work-item", "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 2 * 40 - 1);  // one element short: k = 39 (2 k + 1 = 79) fails
  // 16 work-items in groups of 8: k = 39 is work-item 39 mod 16 = 7, of group 0.
  ki::ka::kernel(b, grid_visits{}, 8, 16)(out, i64{40});
  try {
    ki::synchronize(b);
    FAIL("no error");
  } catch (const ki::kernel_error& e) {
    CHECK(e.error_kind() == ki::kernel_error::kind::exception);
    CHECK(e.group() == ki::xyz<i64>{0, 0, 0});
    CHECK(e.local() == ki::xyz<i64>{7, 0, 0});
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 79 is out of bounds at 15_ka_kernels.cpp:" +
                                                                 std::to_string(grid_visits::line)));
  }
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
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 16 is out of bounds at 15_ka_kernels.cpp:" +
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
  const std::string at = "15_ka_kernels.cpp:" + std::to_string(line);
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
// @print: each work-item prints "<global index>;" with no newline of its own; the last one
// (in local linear order) ends the line it printed with "\n" given as an argument.
struct prints {
  template <class G>
  KI_DEVICE void operator()(G& g) const {
    g.items([&](auto i) { ki::ka::print(i.global_linear(), i.global_linear() == 7 ? ";\n" : ";"); });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: @print prints its arguments without an implied newline", "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  ki_test::capture_stdout cap;
  ki::ka::kernel(b, prints{}, 8, 8)();
  ki::synchronize(b);
  const std::string s = cap.finish();
  // Eight "k;" pieces in some order, one newline (the one passed): "0;1;...7;\n" on a CPU.
  CHECK(std::count(s.begin(), s.end(), '\n') == 1);
  std::vector<std::string> pieces;
  std::string cur;
  for (char c : s) {
    if (c == '\n') continue;
    cur += c;
    if (c == ';') pieces.push_back(cur), cur.clear();
  }
  std::sort(pieces.begin(), pieces.end());
  CHECK(pieces == std::vector<std::string>{"0;", "1;", "2;", "3;", "4;", "5;", "6;", "7;"});
  CHECK(cur.empty());
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

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
// Deliberate undefined behaviour, the fault under test: not instrumented by UBSan
// (tools/test --sanitize), so that a sanitizer build meets the fault itself (the signal the
// runtime reports), as a program built without sanitizers does.
[[gnu::noinline, gnu::no_sanitize("undefined")]] void write_through_null() {
  volatile i64* volatile p = nullptr;  // (read at run time: the compiler cannot drop the store as UB)
  *p = 1;
}
[[gnu::noinline]] i64 ka_recurse(volatile char* up, i64 depth) {
  volatile char pad[1024];
  pad[0] = up != nullptr ? up[0] : 0;
  return depth == 0 ? pad[0] : ka_recurse(pad, depth - 1) + 1;
}
// (the tests name the lines of these calls, counted from __LINE__: kept as they are)
// clang-format off
// Work-item `bad` of group `group` writes through a null pointer (what 0) or overflows its stack
// (what 1) in the second phase; what 2: the group-level code writes through a null pointer.
struct faults {
  static constexpr unsigned line = __LINE__ + 5;
  template <class G>
  void operator()(G& g, ki::span<i64> out, int what, i64 group, i64 bad) const {
    g.items([&](auto i) { out[i.global_linear()] = 1; });
    if (what == 2 && g.group_linear() == group) write_through_null();
    g.items([&](auto i) {
      if (i.group_linear() != group || i.local_linear() != bad) return;
      if (what == 0) write_through_null();
      else out[0] = ka_recurse(nullptr, 1 << 20);
    });
  }
};
// clang-format on
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE(
    "ka: an invalid access or a stack overflow in a kernel is reported, and the backend stays usable", "[ka]",
    ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const bool oracle = std::is_same_v<TestType, ki::reference::backend>;
  auto out = ki::zeros<i64>(b, 64);
  for (const int what : {0, 1, 2, 10, 11, 12}) {  // 10-12: the same with a static work-group size
#if defined(__SANITIZE_ADDRESS__)
    // (AddressSanitizer cannot follow the recovery from a stack overflow: a siglongjmp out of
    // the signal handler leaves its shadow of the thread's stack stale.)
    if (what % 10 == 1) continue;
#endif
    KI_INFO("misuse " << what);
    if (what < 10) ki::ka::kernel(b, faults{}, 16)({.ndrange = 64, .name = "faults"}, out, what, i64{2}, i64{5});
    else
      ki::ka::kernel(b, faults{}, ki::ka::groupsize<16>)({.ndrange = 64, .name = "faults"}, out, what - 10, i64{2},
                                                         i64{5});
    try {
      ki::synchronize(b);
      FAIL("no error");
    } catch (const ki::kernel_error& e) {
      const std::string msg = e.what();
      CHECK(e.error_kind() ==
            (what % 10 == 1 ? ki::kernel_error::kind::stack_overflow : ki::kernel_error::kind::exception));
      CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
      CHECK_THAT(msg, ki_test::ContainsSubstring(what % 10 == 1 ? "overflowed its fiber stack"
                                                                : "made an invalid memory access"));
      if (what % 10 == 2) {
        // (A fault's line is not known: the last phase's is named.)
        CHECK_THAT(msg, ki_test::ContainsSubstring("work-group (2, 0, 0): its group-level code, after the phase at "
                                                   "15_ka_kernels.cpp:" +
                                                   std::to_string(faults::line - 2) + ", made an invalid"));
      } else {
        const std::string phase = "15_ka_kernels.cpp:" + std::to_string(faults::line);
        CHECK(e.where() == phase);
        if (oracle) {  // the oracle tracks the running work-item
          CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
          CHECK_THAT(msg, ki_test::ContainsSubstring("work-item (5, 0, 0) (linear 5) of work-group (2, 0, 0)") &&
                              ki_test::ContainsSubstring("(in the phase at " + phase + ")"));
        } else {
          CHECK_THAT(msg, ki_test::ContainsSubstring("a work-item of the phase at " + phase) &&
                              ki_test::ContainsSubstring("the reference backend names the work-item"));
        }
      }
    }
  }
  // Still usable.
  ki::ka::kernel(b, faults{}, 16)({.ndrange = 64}, out, 0, i64{-1}, i64{-1});
  ki::synchronize(b);
  CHECK(ki_test::read(b, out) == std::vector<i64>(64, 1));
}
#endif

namespace ki_spec_ka {
// vecadd(A, @Const(B)) of the API text: I = @index(Global) (Linear); A[I] += B[I].
struct vecadd {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<float> a, ki::span<const float> b) const {
    g.items([&](auto i) { a[i.global_linear()] += b[i.global_linear()]; });
  }
};

// Per work-item of a 3-D launch: its NTuple indices (Global, Local, Group) and @ndrange().
struct record_tuples {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    const auto e = g.ndrange_extents();  // @ndrange(), group-level
    g.items([&](auto i) {
      const auto gl = i.global_tuple();
      const auto lo = i.local_tuple();
      const auto gr = i.group_tuple();
      const i64 k = 12 * i.global_linear();
      out[k] = gl[0], out[k + 1] = gl[1], out[k + 2] = gl[2];
      out[k + 3] = lo[0], out[k + 4] = lo[1], out[k + 5] = lo[2];
      out[k + 6] = gr[0], out[k + 7] = gr[1], out[k + 8] = gr[2];
      out[k + 9] = e.x, out[k + 10] = e.y, out[k + 11] = e.z;
    });
  }
};

// A[I] = 100 I[1] + I[2] over the Cartesian indices of A.
struct fill_cartesian {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> a) const {
    g.items([&](auto i) {
      const auto c = i.global();
      a(c.x, c.y) = 100 * c.x + c.y;
    });
  }
};
}  // namespace ki_spec_ka

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

TEMPLATE_LIST_TEST_CASE("ka: a 3-D ndrange: @index NTuple forms, @ndrange(), and the default work-group size (8, 8, 4)",
                        "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  const auto check = [&](const ki::ka::ndrange& r, ki::xyz<i64> s, const std::vector<i64>& h) {
    const auto e = r.extents(), f = r.firsts();
    i64 bad = 0;
    for (i64 z = 0; z < e.z; ++z)
      for (i64 y = 0; y < e.y; ++y)
        for (i64 x = 0; x < e.x; ++x) {
          const std::size_t k = static_cast<std::size_t>(12 * (x + e.x * (y + e.y * z)));
          const i64 want[12] = {f.x + x, f.y + y, f.z + z, x % s.x, y % s.y, z % s.z,
                                x / s.x, y / s.y, z / s.z, e.x,     e.y,     e.z};
          for (std::size_t d = 0; d < 12; ++d) bad += h[k + d] != want[d];
        }
    return bad;
  };
  // Offset ranges in x and z, partial groups in x and y: 6 x 3 x 2 indices in 2 x 2 x 1 groups.
  const ki::ka::ndrange r{ki::range{-1, 5}, 3, ki::range{2, 4}};
  auto out = ki_test::filled<i64>(b, 12 * 36, -7);
  ki::ka::kernel(b, record_tuples{}, {4, 2, 2})({.ndrange = r}, out);
  ki::synchronize(b);
  CHECK(check(r, {4, 2, 2}, ki_test::read(b, out)) == 0);
  // A dynamic kernel launched without a work-group size: (8, 8, 4) for three dimensions.
  const ki::ka::ndrange big{10, 9, 5};
  auto out2 = ki_test::filled<i64>(b, 12 * 450, -7);
  ki::ka::kernel(b, record_tuples{})({.ndrange = big}, out2);
  ki::synchronize(b);
  CHECK(check(big, {8, 8, 4}, ki_test::read(b, out2)) == 0);
}

TEMPLATE_LIST_TEST_CASE("ka: an ndrange of an array's Cartesian indices (ndrange = CartesianIndices(A))", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::zeros<i64>(b, {5, 3});
  const auto r = ki::ka::ndrange::of(a.extents(), 2);  // CartesianIndices(A) of a 5 x 3 array
  CHECK(r == ki::ka::ndrange{5, 3});
  ki::ka::kernel(b, fill_cartesian{}, {4, 2})({.ndrange = r}, a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 k) { return 100 * (k % 5) + k / 5; }, "A");
}

#if KI_KA_TEST_CPU
namespace ki_spec_ka {
// reverse_block! with @synchronize(cond), cond false for every work-item (no side effects).
struct reverse_block_cond {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<double> a, i64 flag) const {
    const i64 n = g.groupsize_linear();
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear(); });
    g.synchronize(flag > 0);
    g.items([&](auto i) { a[i.global_linear()] = static_cast<double>(buf[n - 1 - i.local_linear()]); });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: @synchronize(cond) always synchronises on the CPU, whatever cond is", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make<TestType>();
  for (const i64 flag : {i64{0}, i64{1}}) {
    KI_INFO("cond " << (flag > 0));
    auto a = ki::zeros<double>(b, 16);
    ki::ka::kernel(b, reverse_block_cond{}, 8, 16)(a, flag);
    ki::synchronize(b);
    ki_test::check_all(
        ki_test::read(b, a), [](i64 i) { return static_cast<double>(7 - i % 8); }, "A");
  }
}
#endif

TEMPLATE_LIST_TEST_CASE(
    "ka: a work-group size or ndrange over the device's limits is refused, static ones at "
    "construction",
    "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto a = ki::zeros<double>(b, 16);
  using ki_test::ContainsSubstring;
  const auto msg = [&](auto&& f) { return ki_test::thrown_message<std::invalid_argument>(f); };
  // A static size or ndrange is checked when the kernel is constructed, before any launch.
  const i64 too_many = ki::max_work_group_size(b) + 1;
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, too_many); }),
             ContainsSubstring(std::to_string(too_many)) && ContainsSubstring("max_work_group_size"));
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, 4, ki::ka::ndrange{-3}); }),
             ContainsSubstring("ndrange (-3)"));
  CHECK_THAT(msg([&] {
               ki::ka::kernel(b, linear_example{}, {4, 4}, ki::ka::ndrange{16});
             }),
             ContainsSubstring("(4, 4)") && ContainsSubstring("(16)"));
  // max_work_group_dims, where a dimension's limit is below max_work_group_size.
  const auto maxd = ki::max_work_group_dims(b);
  for (int d = 0; d < 3; ++d) {
    if (maxd[static_cast<std::size_t>(d)] >= ki::max_work_group_size(b)) continue;
    KI_INFO("dimension " << d << ": max_work_group_dims " << maxd[static_cast<std::size_t>(d)]);
    i64 s[3] = {1, 1, 1};
    s[d] = maxd[static_cast<std::size_t>(d)] + 1;
    const ki::dims size(s[0], s[1], s[2]);
    const std::string want =
        "exceeds max_work_group_dims[" + std::to_string(d) + "] = " + std::to_string(maxd[static_cast<std::size_t>(d)]);
    CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, size); }), ContainsSubstring(want));
    CHECK_THAT(msg([&] {
                 ki::ka::kernel(b, linear_example{})({.ndrange = {64, 64, 64}, .workgroupsize = size}, a);
               }),
               ContainsSubstring(want));
  }
  // max_num_groups: one work-item per group, one group too many in dimension 1.
  const auto maxg = ki::max_num_groups(b);
  const ki::ka::ndrange wide{1, maxg[1] + 1};
  const std::string groups = "needs " + std::to_string(maxg[1] + 1) + " work-groups in dimension 1";
  CHECK_THAT(msg([&] {
               ki::ka::kernel(b, linear_example{})({.ndrange = wide, .workgroupsize = {1, 1}}, a);
             }),
             ContainsSubstring(groups));
  CHECK_THAT(msg([&] { ki::ka::kernel(b, linear_example{}, {1, 1}, wide); }), ContainsSubstring(groups));
  CHECK(ki_test::read(b, a) == std::vector<double>(16, 0.0));  // nothing ran
}

TEMPLATE_LIST_TEST_CASE("ka: foreach_index(f, arrays...) refuses arrays on different devices, naming them", "[ka]",
                        ki_test::backends) {
  auto b = ki_test::make_multi_device<TestType>();
  const int saved = ki::device(b);
  ki::set_device(b, 0);
  auto y = ki::zeros<i64>(b, 8);
  ki::set_device(b, 1);
  auto x = ki::zeros<i64>(b, 8);
  ki::set_device(b, 0);
  const std::string m = ki_test::thrown_message<std::invalid_argument>([&] {
    ki::ka::foreach_index(count_body{ki::argconvert(b, y), 0}, y, x);
  });
  ki::set_device(b, saved);
  CHECK_THAT(m, ki_test::ContainsSubstring("array 1 is on device 1, array 0 on device 0"));
  CHECK(ki_test::read(b, y) == std::vector<i64>(8, 0));  // nothing ran
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
