// Spec (kernelabstractions-writing-kernels.txt): the KA layer's @synchronize and @private, and
// the phases between them — @private values across phases, @synchronize(cond) on the CPU, the
// oracle's order of a phase's work-items, phases over some work-items (items(count, f),
// items(local_ids, f)) and the grid-stride phase. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
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

// Every work-item writes its local id to one element: the last one of the phase's order wins.
struct last_writer {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> out) const {
    g.items([&](auto i) { out[i.group_linear()] = i.local_linear(); });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: @private values survive @synchronize", "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  auto out = ki::zeros<i64>(b, 100);
  ki::ka::kernel(b, private_values{}, 16)({.ndrange = 100}, out);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, out), [](i64 i) { return 10 * i + 1 + i % 16; }, "out");
}

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
  const std::string line = "15_ka_phases.cpp:" + std::to_string(ki_spec_ka::chosen_items<>::items_line);
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
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 79 is out of bounds at 15_ka_phases.cpp:" +
                                                                 std::to_string(grid_visits::line)));
  }
}
#endif

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
