// Spec (kernelabstractions-writing-kernels.txt, kernelabstractions-api.txt): the KA layer's
// kernels and their launch — the kernel object (its function converted with argconvert, once),
// @Const arguments, the ndrange and work-group size given at construction or at launch, and
// misuse and the device's limits refused before anything runs. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
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
