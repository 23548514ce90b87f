// Spec: allocate, zeros, ones, copyto!, get_backend, argconvert.
// "copyto!: Copy the elements of src to dest, ordered with respect to the other work on the
// calling task's queue ... Either array can be a host array or an array of backend. dest and src
// must have the same length, otherwise an ArgumentError is thrown." "argconvert: Convert arg to
// its device-side representation ... It has to be pure."
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "backends.hpp"

namespace ki_spec_memory {

using i64 = std::int64_t;
using ki_test::ContainsSubstring;

/// out[i] = 3 * in[i] + 1 (a device round trip).
struct affine {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    const i64 i = ki::get_global_id().x;
    if (i < out.size()) out[i] = 3 * in[i] + 1;
  }
};

/// Records a span's extents and writes a(i, j, k) = 10000 i + 100 j + k over a 3-D launch.
struct cartesian {
  KI_DEVICE void operator()(ki::span<i64> a, ki::span<i64> ext) const {
    const auto g = ki::get_global_id();
    if (g.x == 0 && g.y == 0 && g.z == 0) {
      const auto e = a.extents();
      ext[0] = e.x, ext[1] = e.y, ext[2] = e.z, ext[3] = a.size();
    }
    a(g.x, g.y, g.z) = 10000 * g.x + 100 * g.y + g.z;
  }
};

}  // namespace ki_spec_memory

// A user type holding arrays, and its device-side form: argconvert found by ADL.
namespace ki_spec_memory_user {
template <class B>
struct particles {
  ki::array<float, B> pos;
  ki::array<float, B> vel;
  float dt;
};
struct device_particles {
  ki::span<float> pos;
  ki::span<const float> vel;
  float dt;
};
template <class B>
device_particles argconvert(const B& b, particles<B>& p) {
  return {ki::argconvert(b, p.pos), ki::argconvert(b, std::as_const(p.vel)), p.dt};
}
struct step {
  KI_DEVICE void operator()(device_particles p) const {
    const std::int64_t i = ki::get_global_id().x;
    if (i < p.pos.size()) p.pos[i] += p.vel[i] * p.dt;
  }
};

// Host values and their device forms, told apart by type and by value: argconvert found by ADL
// gives 10 v + 1, a member argconvert 10 v + 2. (Both host types are trivially copyable, so an
// argument passed on unconverted would reach the kernel as the host type: it would not compile
// against tagged_device / member_device, and its value would not be 10 v + 1 / 10 v + 2.)
struct tagged_host {
  std::int64_t v;
};
struct tagged_device {
  std::int64_t v;
};
template <class B>
tagged_device argconvert(const B&, const tagged_host& t) {
  return {10 * t.v + 1};
}
struct member_device {
  std::int64_t v;
};
struct member_host {
  std::int64_t v;
  template <class B>
  member_device argconvert(const B&) const {
    return {10 * v + 2};
  }
};
/// Work-item 0 stores every argument it received.
struct takes_converted {
  KI_DEVICE void operator()(tagged_device a, std::int64_t plain, member_device m, ki::span<std::int64_t> out,
                            tagged_device c) const {
    const auto g = ki::get_global_id();
    if (g.x == 0 && g.y == 0 && g.z == 0) out[0] = a.v, out[1] = plain, out[2] = m.v, out[3] = c.v;
  }
};

// The kernel callable converted with argconvert (the spec: argconvert is "called for every kernel
// argument, and for the kernel function itself"; kernel_function: "f is the host-side callable,
// not converted with argconvert: the backend converts it ... it can capture arrays, which its
// converted form only holds pointers to"; "The returned kernel keeps f alive").

/// How many times argconvert converted a ramp_host (host side only).
inline int ramp_conversions = 0;
/// The device form of ramp_host: out[i] = factor * i + offset (offset is an argument).
struct ramp_device {
  ki::span<std::int64_t> out;
  std::int64_t factor;
  KI_DEVICE void operator()(std::int64_t offset) const {
    const std::int64_t i = ki::get_global_id().x;
    if (i < out.size()) out[i] = factor * i + offset;
  }
};
/// A kernel functor that owns its array (not trivially copyable: it must convert), and a token
/// that shows whether the kernel keeps it alive.
template <class B>
struct ramp_host {
  ki::array<std::int64_t, B> out;
  std::int64_t factor;
  std::shared_ptr<int> token = std::make_shared<int>(0);
};
template <class B>
ramp_device argconvert(const B& b, ramp_host<B>& h) {
  ++ramp_conversions;
  return {ki::argconvert(b, h.out), h.factor};
}

/// A KI_LAMBDA_CAPTURE kernel, made and launched in a function at namespace scope (nvcc's
/// extended lambdas cannot live in the functions Catch2 generates): out[i] = 2 * in[i] + k + n,
/// launched with ki::launch (n = 0) and through kernel_function (n = 1000).
template <class B>
void capture_kernel(const B& b, ki::array<std::int64_t, B>& out, const ki::array<std::int64_t, B>& in,
                    ki::array<std::int64_t, B>& out2, std::int64_t k) {
  const auto f = KI_LAMBDA_CAPTURE(out, in)(std::int64_t n) {
    const std::int64_t i = ki::get_global_id().x;
    if (i < out.size()) out[i] = 2 * in[i] + k + n;
  };
  ki::launch(b, {.ndrange = out.size(), .workgroupsize = 16}, f, std::int64_t{0});
  // Another array, the same lambda body: what the capture list names is converted as it is.
  const auto g = ki::kernel_function(
      b, KI_LAMBDA_CAPTURE(out2, in)(std::int64_t n) {
        const std::int64_t i = ki::get_global_id().x;
        if (i < out2.size()) out2[i] = 2 * in[i] + k + n;
      });
  g({.ndrange = out2.size(), .workgroupsize = 16}, std::int64_t{1000});
}
}  // namespace ki_spec_memory_user

using namespace ki_spec_memory;

TEMPLATE_LIST_TEST_CASE("memory: allocate with 1 to 3 dimensions", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const auto a1 = ki::allocate<float>(b, 10);
  CHECK(a1.size() == 10);
  CHECK(a1.extents() == ki::xyz<i64>{10, 1, 1});
  const auto a2 = ki::allocate<double>(b, {3, 4});
  CHECK(a2.size() == 12);
  CHECK(a2.extents() == ki::xyz<i64>{3, 4, 1});
  const auto a3 = ki::allocate<std::int16_t>(b, {2, 3, 5});
  CHECK(a3.size() == 30);
  CHECK(a3.extents() == ki::xyz<i64>{2, 3, 5});
  // Empty arrays are arrays too.
  const auto e1 = ki::allocate<int>(b, 0);
  CHECK(e1.size() == 0);
  const auto e2 = ki::allocate<int>(b, {3, 0});
  CHECK(e2.size() == 0);
  // Distinct allocations do not overlap: fill each, read back.
  auto x = ki::allocate<i64>(b, 100), y = ki::allocate<i64>(b, 100);
  ki::copyto(b, x, std::vector<i64>(100, 1));
  ki::copyto(b, y, std::vector<i64>(100, 2));
  CHECK(ki_test::read(b, x) == std::vector<i64>(100, 1));
  CHECK(ki_test::read(b, y) == std::vector<i64>(100, 2));
}

TEMPLATE_LIST_TEST_CASE("memory: invalid dimensions throw std::invalid_argument", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::allocate<int>(b, -1); }),
             ContainsSubstring("-1"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] {
               ki::allocate<int>(b, {3, -4});
             }),
             ContainsSubstring("-4"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] {
               ki::zeros<int>(b, {2, 2, -9});
             }),
             ContainsSubstring("-9"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { ki::ones<int>(b, -7); }), ContainsSubstring("-7"));
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>(
                 [&] { ki::allocate<int>(b, std::numeric_limits<std::uint64_t>::max()); }),
             ContainsSubstring("18446744073709551615"));
  // Sizes whose element count or byte count does not fit: an argument error, not bad_alloc.
  CHECK_THROWS_AS(ki::allocate<int>(b, {i64{1} << 40, i64{1} << 40}), std::invalid_argument);
  CHECK_THROWS_AS(ki::allocate<i64>(b, std::numeric_limits<i64>::max()), std::invalid_argument);
}

TEMPLATE_LIST_TEST_CASE("memory: zeros and ones", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  CHECK(ki_test::read(b, ki::zeros<int>(b, 7)) == std::vector<int>(7, 0));
  CHECK(ki_test::read(b, ki::ones<int>(b, 7)) == std::vector<int>(7, 1));
  const auto zd = ki::zeros<double>(b, {3, 5});
  CHECK(zd.extents() == ki::xyz<i64>{3, 5, 1});
  CHECK(ki_test::read(b, zd) == std::vector<double>(15, 0.0));
  const auto of = ki::ones<float>(b, {2, 3, 4});
  CHECK(of.extents() == ki::xyz<i64>{2, 3, 4});
  CHECK(ki_test::read(b, of) == std::vector<float>(24, 1.0f));
  CHECK(ki_test::read(b, ki::ones<std::uint8_t>(b, 33)) == std::vector<std::uint8_t>(33, 1));
  CHECK(ki_test::read(b, ki::zeros<std::int64_t>(b, {1, 1, 9})) == std::vector<std::int64_t>(9, 0));
  CHECK(ki_test::read(b, ki::ones<double>(b, 0)).empty());
}

TEMPLATE_LIST_TEST_CASE("memory: copyto in every direction", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  std::vector<i64> h(1000);
  for (std::size_t i = 0; i < h.size(); ++i) h[i] = static_cast<i64>(i * i) - 7;

  auto d1 = ki::allocate<i64>(b, 1000);
  CHECK(&ki::copyto(b, d1, h) == &d1);  // host -> device, returns dest
  auto d2 = ki::allocate<i64>(b, {10, 100});
  CHECK(&ki::copyto(b, d2, d1) == &d2);  // device -> device (same length, other shape)
  std::vector<i64> back(1000, 0);
  CHECK(&ki::copyto(b, back, d2) == &back);  // device -> host
  ki::synchronize(b);
  CHECK(back == h);

  std::vector<i64> h2(1000, 0);
  ki::copyto(b, h2, h);  // host -> host
  ki::synchronize(b);
  CHECK(h2 == h);

  // Other contiguous host ranges: a std::span view as dest, a C array as source.
  i64 c_array[5] = {5, 4, 3, 2, 1};
  auto d3 = ki::allocate<i64>(b, 5);
  ki::copyto(b, d3, c_array);
  std::vector<i64> v5(5, 0);
  std::span<i64> view(v5);
  ki::copyto(b, view, d3);
  ki::synchronize(b);
  CHECK(v5 == std::vector<i64>{5, 4, 3, 2, 1});

  // Zero-length copies are fine.
  auto e = ki::allocate<i64>(b, 0);
  std::vector<i64> none;
  ki::copyto(b, e, none);
  ki::copyto(b, none, e);
  ki::synchronize(b);
}

TEMPLATE_LIST_TEST_CASE("memory: copyto with different lengths throws std::invalid_argument naming both", "[memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto d_short = ki::zeros<int>(b, 1234);
  auto d_long = ki::zeros<int>(b, 4321);
  std::vector<int> h_short(1234, 5), h_long(4321, 5);
  const auto names_both = [](const std::string& m) {
    CHECK_THAT(m, ContainsSubstring("1234"));
    CHECK_THAT(m, ContainsSubstring("4321"));
  };
  names_both(ki_test::thrown_message<std::invalid_argument>([&] { ki::copyto(b, d_short, h_long); }));
  names_both(ki_test::thrown_message<std::invalid_argument>([&] { ki::copyto(b, h_short, d_long); }));
  names_both(ki_test::thrown_message<std::invalid_argument>([&] { ki::copyto(b, d_long, d_short); }));
  names_both(ki_test::thrown_message<std::invalid_argument>([&] { ki::copyto(b, h_long, h_short); }));
  // Nothing was copied.
  ki::synchronize(b);
  CHECK(ki_test::read(b, d_short) == std::vector<int>(1234, 0));
  CHECK(ki_test::read(b, d_long) == std::vector<int>(4321, 0));
  CHECK(h_short == std::vector<int>(1234, 5));
  CHECK(h_long == std::vector<int>(4321, 5));
}

TEMPLATE_LIST_TEST_CASE("memory: copies are ordered with kernels on the queue", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 777;
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = i - 300;
  auto in = ki::allocate<i64>(b, n);
  auto out = ki::allocate<i64>(b, n);
  std::vector<i64> back(static_cast<std::size_t>(n), 0);
  // copy, kernel, copy, with no synchronize in between: each sees the previous one's result.
  ki::copyto(b, in, h);
  ki::launch(b, {.ndrange = n, .workgroupsize = 64}, affine{}, out, in);
  ki::copyto(b, back, out);
  ki::synchronize(b);
  for (i64 i = 0; i < n; ++i) CHECK(back[static_cast<std::size_t>(i)] == 3 * (i - 300) + 1);
}

TEMPLATE_LIST_TEST_CASE("memory: get_backend", "[memory]", ki_test::backends) {
  ki_test::make<TestType>();
  using cfg = ki_test::config<TestType>;
  const TestType cb = cfg::configured();
  const auto a = ki::allocate<int>(cb, 3);
  static_assert(std::is_same_v<decltype(ki::get_backend(a)), TestType>);
  if constexpr (!cfg::configurable) SKIP(std::string(cfg::name) + ": backend values carry no configuration to compare");
  CHECK_FALSE(cfg::same(cfg::make(), cb));  // so that the comparisons below can fail
  CHECK(cfg::same(ki::get_backend(a), cb));
  CHECK(cfg::same(ki::get_backend(ki::zeros<float>(cfg::make(), 2)), cfg::make()));
}

TEMPLATE_LIST_TEST_CASE("memory: get_backend of a host array is the reference backend, and CPU kernels take it",
                        "[memory]", ki_test::backends) {
  // The spec's get_backend(A) for the host's own arrays (KernelAbstractions: CPU()).
  const auto b = ki_test::make<TestType>();
  const i64 n = 300;
  std::vector<i64> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n), -1);
  for (i64 i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = 2 * i;
  static_assert(std::is_same_v<decltype(ki::get_backend(out)), ki::reference::backend>);
  static_assert(std::is_same_v<decltype(ki::get_backend(std::span<const i64>(in))), ki::reference::backend>);
  i64 c_array[3] = {1, 2, 3};
  static_assert(std::is_same_v<decltype(ki::get_backend(c_array)), ki::reference::backend>);
  static_assert(std::is_same_v<decltype(ki::get_backend(std::array<int, 2>{})), ki::reference::backend>);
  (void)c_array;
  // The spec's example: backend = get_backend(A); kernel(A, ndrange = length(A)).
  const auto hb = ki::get_backend(out);
  static_assert(std::is_same_v<decltype(ki::argconvert(hb, out)), ki::span<i64>>);
  static_assert(std::is_same_v<decltype(ki::argconvert(hb, std::as_const(in))), ki::span<const i64>>);
  CHECK(ki::argconvert(hb, out).data() == out.data());
  CHECK(ki::argconvert(hb, out).size() == n);
  const auto k = ki::kernel_function(hb, affine{});
  k({.ndrange = n, .workgroupsize = 32}, out, std::as_const(in));
  ki::synchronize(hb);
  ki_test::check_all(
      out, [](i64 i) { return 6 * i + 1; }, "host vectors on get_backend(out)");
  // Views and trivially copyable arrays are not converted: a kernel receives them as they are.
  static_assert(std::is_same_v<decltype(ki::argconvert(hb, std::array<int, 2>{})), std::array<int, 2>>);
  static_assert(std::is_same_v<decltype(ki::argconvert(hb, std::span<i64>(out))), std::span<i64>>);
  // Every CPU backend's kernels take host vectors; a GPU backend's do not (it has no
  // conversion for them: passing one does not compile).
  constexpr bool takes_vectors = requires(const TestType& t, std::vector<i64>& v) { t.argconvert(v); };
  static_assert(takes_vectors == !(KI_TEST_BACKEND_CUDA || KI_TEST_BACKEND_HIP));
  if constexpr (takes_vectors) {
    std::vector<i64> out2(static_cast<std::size_t>(n), -1);
    ki::launch(b, {.ndrange = n, .workgroupsize = 32}, affine{}, out2, std::as_const(in));
    ki::synchronize(b);
    CHECK(out2 == out);
  }
}

TEMPLATE_LIST_TEST_CASE("memory: argconvert of arrays and plain values", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  auto a = ki::allocate<float>(b, {4, 3});
  const auto& ca = a;
  auto s = ki::argconvert(b, a);
  auto cs = ki::argconvert(b, ca);
  static_assert(std::is_same_v<decltype(s), ki::span<float>>);
  static_assert(std::is_same_v<decltype(cs), ki::span<const float>>);
  CHECK(s.data() == a.data());
  CHECK(cs.data() == a.data());
  CHECK(s.extents() == ki::xyz<i64>{4, 3, 1});
  CHECK(cs.extents() == ki::xyz<i64>{4, 3, 1});
  CHECK(s.size() == 12);
  // Pure: converting again gives the same.
  CHECK(ki::argconvert(b, a).data() == s.data());
  // Trivially copyable values pass through unchanged.
  static_assert(std::is_same_v<decltype(ki::argconvert(b, 5)), int>);
  CHECK(ki::argconvert(b, 5) == 5);
  CHECK(ki::argconvert(b, 2.5) == 2.5);
  const ki::span<const float> c2 = s;  // span<T> converts to span<const T>
  CHECK(c2.data() == s.data());
}

TEMPLATE_LIST_TEST_CASE("memory: kernels take arrays as spans, const arrays as span<const T>, x fastest", "[memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 300;
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = 2 * i;
  const auto in = ki::to_device(b, h);  // const: becomes span<const i64>
  auto out = ki::allocate<i64>(b, n);
  ki::launch(b, {.ndrange = n, .workgroupsize = 32}, affine{}, out, in);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return 6 * i + 1; }, "affine");

  // A 3-D array as a 3-D span: (i, j, k) is element i + nx * (j + ny * k).
  auto a = ki_test::filled<i64>(b, {4, 3, 2}, -1);
  auto ext = ki_test::filled<i64>(b, 4, -1);
  ki::launch(b, {.ndrange = {4, 3, 2}, .workgroupsize = {2, 3, 1}}, cartesian{}, a, ext);
  ki::synchronize(b);
  CHECK(ki_test::read(b, ext) == std::vector<i64>{4, 3, 2, 24});
  ki_test::check_all(
      ki_test::read(b, a), [](i64 e) { return 10000 * (e % 4) + 100 * ((e / 4) % 3) + e / 12; }, "cartesian layout");
}

TEMPLATE_LIST_TEST_CASE("memory: a user-defined argconvert found by ADL", "[memory]", ki_test::backends) {
  using namespace ki_spec_memory_user;
  const auto b = ki_test::make<TestType>();
  const i64 n = 100;
  std::vector<float> pos(static_cast<std::size_t>(n)), vel(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i)
    pos[static_cast<std::size_t>(i)] = float(i), vel[static_cast<std::size_t>(i)] = float(2 * i);
  particles<TestType> p{ki::to_device(b, pos), ki::to_device(b, vel), 0.5f};
  static_assert(std::is_same_v<decltype(ki::argconvert(b, p)), device_particles>);
  const device_particles d = ki::argconvert(b, p);
  CHECK(d.pos.data() == p.pos.data());
  CHECK(d.vel.data() == p.vel.data());
  CHECK(d.dt == 0.5f);
  ki::launch(b, {.ndrange = n, .workgroupsize = 32}, step{}, p);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, p.pos), [](i64 i) { return float(2 * i); }, "pos + vel * dt");
  CHECK(ki_test::read(b, p.vel) == vel);
}

TEMPLATE_LIST_TEST_CASE("memory: argconvert converts every argument of a launch, in every position", "[memory]",
                        ki_test::backends) {
  // "The backend converts them with argconvert" (calling a Kernel), "f is compiled with
  // kernel_function for the types of the arguments converted with argconvert" (@launch), and
  // launch(kernel, groups, items, args) takes "the host-side arguments".
  using namespace ki_spec_memory_user;
  const auto b = ki_test::make<TestType>();
  const std::vector<i64> want{31, 5, 72, 91};
  const auto check = [&](auto&& run, const char* how) {
    INFO(how);
    auto out = ki_test::filled<i64>(b, 4, -1);
    run(out);
    CHECK(ki_test::read(b, out) == want);
  };
  const tagged_host a{3}, c{9};
  const member_host m{7};
  const i64 five = 5;
  check([&](auto& out) { ki::launch(b, {.ndrange = 4}, takes_converted{}, a, five, m, out, c); }, "ki::launch");
  const auto k = ki::kernel_function(b, takes_converted{});
  check([&](auto& out) { k({.numgroups = 2, .workgroupsize = 2}, a, five, m, out, c); }, "calling the kernel");
  check(
      [&](auto& out) {
        ki::launch(k, {1, 1, 1}, {2, 1, 1}, std::tie(a, five, m, out, c));
      },
      "launch(kernel, groups, items, args)");
}

TEMPLATE_LIST_TEST_CASE("memory: a KI_LAMBDA_CAPTURE kernel captures arrays as spans and writes through them",
                        "[memory]", ki_test::backends) {
  using namespace ki_spec_memory_user;
  const auto b = ki_test::make<TestType>();
  const i64 n = 100;
  std::vector<i64> h(static_cast<std::size_t>(n));
  for (i64 i = 0; i < n; ++i) h[static_cast<std::size_t>(i)] = i * i;
  const auto in = ki::to_device(b, h);
  auto out = ki_test::filled<i64>(b, n, -1);
  auto out2 = ki_test::filled<i64>(b, n, -1);
  // What the lambda holds in place of each array: its device form on its own backend.
  static_assert(std::is_same_v<decltype(ki::device_capture(out)), ki::span<i64>>);
  static_assert(std::is_same_v<decltype(ki::device_capture(in)), ki::span<const i64>>);
  static_assert(std::is_same_v<decltype(ki::device_capture(n)), i64>);
  CHECK(ki::device_capture(out).data() == out.data());
  CHECK(ki::device_capture(in).size() == n);
  capture_kernel(b, out, in, out2, 7);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return 2 * i * i + 7; }, "out (ki::launch)");
  ki_test::check_all(
      ki_test::read(b, out2), [](i64 i) { return 2 * i * i + 7 + 1000; }, "out2 (kernel_function)");
  // A freed array cannot be captured (the same check as a freed argument).
  auto gone = ki::allocate<i64>(b, 4);
  ki::unsafe_free(gone);
  CHECK_THAT(ki_test::thrown_message<std::invalid_argument>([&] { (void)ki::device_capture(gone); }),
             ContainsSubstring("unsafe_free"));
}

TEMPLATE_LIST_TEST_CASE("memory: a functor holding an array converts through its own argconvert (ADL), once per kernel",
                        "[memory]", ki_test::backends) {
  using namespace ki_spec_memory_user;
  const auto b = ki_test::make<TestType>();
  const i64 n = 50;
  ramp_conversions = 0;
  std::weak_ptr<int> token;
  {
    ramp_host<TestType> host{ki_test::filled<i64>(b, n, -1), 3};
    token = host.token;
    i64* const data = host.out.data();
    auto k = ki::kernel_function(b, std::move(host));
    // The kernel holds the device form, converted once, when it was made...
    static_assert(std::is_same_v<decltype(k), ki::kernel<TestType, ramp_device>>);
    static_assert(std::is_same_v<ki::device_callable_t<TestType, ramp_host<TestType>>, ramp_device>);
    CHECK(ramp_conversions == 1);
    CHECK(k.f.out.data() == data);
    CHECK(k.f.factor == 3);
    // ... and keeps the host form (with its array) alive, shared by its copies.
    CHECK(k.host_callable != nullptr);
    CHECK(token.use_count() == 1);
    k({.ndrange = n, .workgroupsize = 16}, i64{5});
    k({.ndrange = n, .workgroupsize = 16}, i64{5});
    const auto copy = k;
    copy({.ndrange = n}, i64{5});
    CHECK(ramp_conversions == 1);  // launches and copies do not convert it again
    ki::synchronize(b);
    // The kernel's own array, read through the host form it keeps.
    const auto* kept = static_cast<const ramp_host<TestType>*>(k.host_callable.get());
    CHECK(kept->out.data() == data);
    ki_test::check_all(
        ki_test::read(b, kept->out), [](i64 i) { return 3 * i + 5; }, "the kernel's own array");
    k = ki::kernel_function(b, ramp_host<TestType>{ki::allocate<i64>(b, 1), 1});
    CHECK(ramp_conversions == 2);
    CHECK(token.use_count() == 1);  // still held by the copy
  }
  CHECK(token.expired());  // released with the last copy of the kernel
  // std::ref: converted in place, the caller keeps it alive (and reads its array afterwards).
  ramp_host<TestType> mine{ki_test::filled<i64>(b, n, -1), -2};
  ramp_conversions = 0;
  const auto r = ki::kernel_function(b, std::ref(mine));
  CHECK(r.host_callable == nullptr);
  CHECK(mine.token.use_count() == 1);
  r({.ndrange = n}, i64{100});
  CHECK(ramp_conversions == 1);
  ki_test::check_all(
      ki_test::read(b, mine.out), [](i64 i) { return 100 - 2 * i; }, "std::ref(functor)");
  // The one-call launch converts the callable of each call once.
  ki::launch(b, {.ndrange = n}, std::ref(mine), i64{1});
  ki::launch(b, {.ndrange = n}, std::ref(mine), i64{2});
  CHECK(ramp_conversions == 3);
  ki_test::check_all(
      ki_test::read(b, mine.out), [](i64 i) { return 2 - 2 * i; }, "ki::launch(std::ref(functor))");
  // Launch hints survive the conversion (with_hints converts what it wraps).
  const auto hk = ki::kernel_function(b, ki::with_hints<ki::launch_hints{.maxthreads = 16}>(std::move(mine)));
  static_assert(std::remove_cvref_t<decltype(hk)>::hints.maxthreads == 16);
  CHECK(ramp_conversions == 4);
  CHECK(ki::max_work_group_size(hk) <= 16);
  hk({.ndrange = n}, i64{0});
  ki::synchronize(b);
}

TEMPLATE_LIST_TEST_CASE("memory: unified allocation where supported", "[memory]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  if (ki::supports_unified(b)) {
    auto u = ki::allocate<i64>(b, 50, {.unified = true});
    CHECK(u.unified());
    CHECK(u.size() == 50);
    std::vector<i64> h(50, 3);
    ki::copyto(b, u, h);
    auto out = ki::allocate<i64>(b, 50);
    ki::launch(b, {.ndrange = 50}, affine{}, out, std::as_const(u));
    CHECK(ki_test::read(b, out) == std::vector<i64>(50, 10));
    // "accessible from the host and the device without explicit copies": the host writes
    // through the pointer, a kernel reads it and writes another unified array, and after
    // synchronize the host reads that one through its pointer, with no copyto either way.
    i64* hu = u.data();
    for (i64 i = 0; i < 50; ++i) hu[i] = 5 * i - 7;
    auto v = ki::allocate<i64>(b, 50, {.unified = true});
    ki::launch(b, {.ndrange = 50}, affine{}, v, std::as_const(u));
    ki::synchronize(b);
    const i64* hv = v.data();
    std::vector<i64> seen(hv, hv + 50);
    ki_test::check_all(
        seen, [](i64 i) { return 3 * (5 * i - 7) + 1; }, "kernel result read by the host in place");
  } else {
    CHECK_THROWS_AS(ki::allocate<i64>(b, 50, {.unified = true}), std::invalid_argument);
  }
}

namespace ki_spec_memory_intended {
using i64 = std::int64_t;
/// ki::intended_race (ki's extension: <ki/intended_race.hpp>) on an index and on arrays, in a
/// kernel without a race: the values pass through unchanged.
struct pass_through {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    auto tile = ki::intended_race(ki::localmemory<i64, 64>([] {}));
    auto o = ki::intended_race(out);
    const i64 i = ki::get_global_id().x, l = ki::get_local_id().x;
    tile[ki::intended_race(l)] = in[ki::intended_race(i)];
    ki::barrier();
    o[i] = tile[(l + 1) % 64] + 1;
  }
};
}  // namespace ki_spec_memory_intended

TEMPLATE_LIST_TEST_CASE("memory: ki::intended_race passes an index and an array through unchanged", "[memory]",
                        ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  std::vector<i64> h(128);
  for (i64 i = 0; i < 128; ++i) h[static_cast<std::size_t>(i)] = 3 * i;
  auto in = ki::to_device(b, h);
  auto out = ki_test::filled<i64>(b, 128, -1);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 64}, ki_spec_memory_intended::pass_through{}, out, in);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return 3 * (i / 64 * 64 + (i % 64 + 1) % 64) + 1; }, "neighbours");
}
