// Metal's read-only arrays: "Wrapping an array with Metal.Const ... inside a kernel promises that
// it won't be modified during the kernel. That lets the compiler cache and reorder loads from
// it." In ki: the kernel reads it through a ki::const_span<T> (read-only cache loads on CUDA),
// and ki::Const(x) at the launch also promises that it aliases no other argument, which the
// host checks before anything runs. (compile_fail/const_span.cpp: writes do not compile.)
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include "backends.hpp"

namespace ki_spec_const_views {

using i64 = std::int64_t;

/// The text's scale!: y[i] = 2 * Const(x)[i].
struct scale {
  KI_DEVICE void operator()(ki::span<float> y, ki::const_span<float> x) const {
    const auto i = ki::get_global_id().x;
    if (i < y.size()) y[i] = 2 * x[i];
  }
};

/// A 2-D read through a const_span, and its conversion to span<const T>.
struct transpose {
  KI_DEVICE void operator()(ki::span<i64> out, ki::const_span<i64> in, i64 n) const {
    const auto g = ki::get_global_id();
    const ki::span<const i64> plain = in;
    if (g.x < n && g.y < n) out(g.y, g.x) = in(g.x, g.y) + plain.size() * 0 + plain(g.x, g.y) * 0;
  }
};

/// A kernel whose parameter is a plain span<const T>: a ki::Const argument converts to it.
struct sum_into {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<const i64> in) const {
    const auto i = ki::get_global_id().x;
    if (i < out.size()) out[i] += in[i];
  }
};

}  // namespace ki_spec_const_views

using namespace ki_spec_const_views;
using Catch::Matchers::ContainsSubstring;

TEMPLATE_LIST_TEST_CASE("memory: a Const argument is read through a const_span (the text's scale!)", "[memory]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  std::vector<float> hx(1000);
  for (std::size_t k = 0; k < hx.size(); ++k) hx[k] = 0.5f * static_cast<float>(k) - 7.0f;
  auto x = ki::to_device(b, hx);
  auto y = ki_test::filled<float>(b, 1000, -1.0f);
  ki::launch(b, {.ndrange = 1000}, scale{}, y, ki::Const(x));
  const auto h = ki_test::read(b, y);
  for (std::size_t k = 0; k < hx.size(); ++k) CHECK(h[k] == 2 * hx[k]);

  const i64 n = 9;
  std::vector<i64> hin(static_cast<std::size_t>(n * n));
  for (i64 k = 0; k < n * n; ++k) hin[static_cast<std::size_t>(k)] = k * 3 + 1;
  auto in = ki::allocate<i64>(b, {n, n});
  ki::copyto(b, in, hin);
  auto out = ki::allocate<i64>(b, {n, n});
  ki::launch(b, {.ndrange = {n, n}, .workgroupsize = {4, 4}}, transpose{}, out, ki::Const(in), n);
  const auto t = ki_test::read(b, out);
  for (i64 r = 0; r < n; ++r)
    for (i64 c = 0; c < n; ++c)
      CHECK(t[static_cast<std::size_t>(r + n * c)] == hin[static_cast<std::size_t>(c + n * r)]);

  auto acc = ki_test::filled<i64>(b, n * n, 1);
  ki::launch(b, {.ndrange = n * n}, sum_into{}, acc, ki::Const(in));
  const auto s = ki_test::read(b, acc);
  for (i64 k = 0; k < n * n; ++k) CHECK(s[static_cast<std::size_t>(k)] == 1 + hin[static_cast<std::size_t>(k)]);
}

TEMPLATE_LIST_TEST_CASE("memory: a launch where a Const argument overlaps a writable one is rejected, naming both",
                        "[memory]", ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  auto x = ki_test::filled<float>(b, 64, 1.0f);
  auto y = ki_test::filled<float>(b, 64, 0.0f);
  const auto msg = [](int c, int w) {
    return Catch::Matchers::MessageMatches(ContainsSubstring("argument " + std::to_string(c) +
                                                             " is ki::Const (read-only, aliasing nothing) but "
                                                             "overlaps the writable argument " +
                                                             std::to_string(w)));
  };
  // The same array, written and Const.
  CHECK_THROWS_MATCHES(ki::launch(b, {.ndrange = 64}, scale{}, x, ki::Const(x)), std::invalid_argument, msg(1, 0));
  // A view of it: the second half of x written, x Const.
  const ki::span<float> whole = ki::argconvert(b, x);
  const ki::span<float> half(whole.data() + 32, 32);
  CHECK_THROWS_MATCHES(ki::launch(b, {.ndrange = 32}, scale{}, half, ki::Const(x)), std::invalid_argument, msg(1, 0));
  // The lower-level launch checks too.
  const auto k = ki::kernel_function(b, scale{});
  CHECK_THROWS_AS(ki::launch(k, {1, 1, 1}, {32, 1, 1}, std::tuple{half, ki::Const(x)}), std::invalid_argument);
  // Nothing ran.
  for (const float v : ki_test::read(b, x)) CHECK(v == 1.0f);
  // Disjoint memory, and two read-only views of one array, are fine.
  const ki::span<float> low(whole.data(), 32);
  ki::launch(b, {.ndrange = 32}, scale{}, low, ki::Const(y));
  auto acc = ki_test::filled<i64>(b, 64, 0);
  const auto two = ki_test::filled<i64>(b, 64, 2);
  ki::launch(b, {.ndrange = 64}, sum_into{}, acc, ki::Const(two));
  ki::launch(b, {.ndrange = 64}, sum_into{}, acc, ki::Const(two));  // (two read-only views of `two`)
  ki::synchronize(b);
  const auto h = ki_test::read(b, x);
  for (i64 k2 = 0; k2 < 64; ++k2) CHECK(h[static_cast<std::size_t>(k2)] == (k2 < 32 ? 0.0f : 1.0f));
  for (const i64 v : ki_test::read(b, acc)) CHECK(v == 4);
}
