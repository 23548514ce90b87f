// The fault suite (issue "never crash, never hang"): each fault a kernel can make on the CPU
// backends, in both layers, is a ki::kernel_error with its kind, work-group, work-item (where the
// backend tracks it) and line, and the same backend value runs a correct launch right afterwards.
// Runs on the reference backend and, where it is built, simd_cpu.
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "fault_support.hpp"

using ki_test::faults::cpu_backends;

namespace {
using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;

constexpr i64 groups = 4, size = 32, bad = 2 * size + 5;  // work-item 5 of work-group 2

enum class fault { divide_by_zero, min_by_minus_one, trap };

// Deliberate undefined behaviour, the fault under test: not instrumented by UBSan
// (tools/test --sanitize), so that a sanitizer build meets the fault itself (the SIGFPE the
// runtime reports), as a program built without sanitizers does.
[[gnu::noinline, gnu::no_sanitize("undefined")]] int divide(int num, int den) { return num / den; }

/// out[g] = num[g] / den[g] for every work-item; the bad one's operands are the fault's (or it
/// executes a trap).
struct ki_faults {
  static constexpr unsigned line = __LINE__ + 3;  // the barrier before the fault
  void operator()(ki::span<int> out, ki::span<const int> num, ki::span<const int> den, int what) const {
    const i64 g = ki::get_global_id().x;
    ki::barrier();  // (a sync point before: the report names it)
    if (what == 2 && g == bad) __builtin_trap();
    out[g] = divide(num[g], den[g]);
  }
};

/// The same as a KA kernel: one phase.
struct ka_faults {
  static constexpr unsigned line = __LINE__ + 3;
  template <class G>
  void operator()(G& g, ki::span<int> out, ki::span<const int> num, ki::span<const int> den, int what) const {
    g.items([&](auto i) {
      if (what == 2 && i.global_linear() == bad) __builtin_trap();
      out[i.global_linear()] = divide(num[i.global_linear()], den[i.global_linear()]);
    });
  }
};

struct operands {
  std::vector<int> num, den;
};
operands operands_for(fault f) {
  operands o{std::vector<int>(groups * size), std::vector<int>(groups * size, 1)};
  for (i64 k = 0; k < groups * size; ++k) o.num[static_cast<std::size_t>(k)] = static_cast<int>(3 * k);
  if (f == fault::divide_by_zero) o.den[bad] = 0;
  if (f == fault::min_by_minus_one) o.num[bad] = INT_MIN, o.den[bad] = -1;
  return o;
}

const char* expected_message(fault f) {
  return f == fault::trap ? "executed an illegal instruction (SIGILL"
                          : "divided an integer by zero, or the most negative "
                            "integer by -1 (SIGFPE";
}

template <class B>
void check_right(const B& b, const ki::array<int, B>& out) {
  const auto h = ki::to_host(b, out);
  for (i64 k = 0; k < groups * size; ++k) CHECK(h[static_cast<std::size_t>(k)] == 3 * k);
}
}  // namespace

TEMPLATE_LIST_TEST_CASE(
    "faults: an integer division that traps or a trap in a KI kernel is reported, and the "
    "backend stays usable",
    "[faults]", cpu_backends) {
  const TestType b{};
  for (const fault f : {fault::divide_by_zero, fault::min_by_minus_one, fault::trap}) {
    INFO("fault " << static_cast<int>(f));
    const operands o = operands_for(f);
    auto num = ki::allocate<int>(b, groups * size), den = ki::allocate<int>(b, groups * size);
    ki::copyto(b, num, o.num);
    ki::copyto(b, den, o.den);
    auto out = ki::zeros<int>(b, groups * size);
    const auto& cnum = num;
    const auto& cden = den;
    ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_faults{}, out, cnum, cden, f == fault::trap ? 2 : 0);
    {
      const ki::kernel_error e = ki_test::faults::failure_of(b);
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
      CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
      CHECK_THAT(msg, ContainsSubstring(expected_message(f)));
      CHECK_THAT(msg, ContainsSubstring("(after barrier faults.cpp:" + std::to_string(ki_faults::line) + ")"));
    }
    // The same backend value, right away: a correct launch.
    const auto ok = operands_for(fault::trap);
    ki::copyto(b, den, ok.den);
    ki::copyto(b, num, ok.num);
    ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_faults{}, out, cnum, cden, 0);
    ki::synchronize(b);
    check_right(b, out);
  }
}

TEMPLATE_LIST_TEST_CASE(
    "faults: an integer division that traps or a trap in a KA phase is reported, and the "
    "backend stays usable",
    "[faults]", cpu_backends) {
  const TestType b{};
  const bool oracle = std::is_same_v<TestType, ki::reference::backend>;
  for (const fault f : {fault::divide_by_zero, fault::min_by_minus_one, fault::trap}) {
    INFO("fault " << static_cast<int>(f));
    const operands o = operands_for(f);
    auto num = ki::allocate<int>(b, groups * size), den = ki::allocate<int>(b, groups * size);
    ki::copyto(b, num, o.num);
    ki::copyto(b, den, o.den);
    auto out = ki::zeros<int>(b, groups * size);
    ki::ka::kernel k(b, ka_faults{}, size);
    k({.ndrange = groups * size}, out, ki::ka::Const(num), ki::ka::Const(den), f == fault::trap ? 2 : 0);
    {
      const ki::kernel_error e = ki_test::faults::failure_of(b);
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
      if (oracle) CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
      CHECK_THAT(msg, ContainsSubstring(expected_message(f)));
      CHECK(e.where() == "faults.cpp:" + std::to_string(ka_faults::line));  // the phase
    }
    const auto ok = operands_for(fault::trap);
    ki::copyto(b, den, ok.den);
    ki::copyto(b, num, ok.num);
    k({.ndrange = groups * size}, out, ki::ka::Const(num), ki::ka::Const(den), 0);
    ki::synchronize(b);
    check_right(b, out);
  }
}

namespace {
/// The backend a kernel below (wrongly) calls host functions on.
template <class B>
const B* host_backend = nullptr;

/// Work-item `bad` calls a host function: 0 ki::zeros, 1 ki::launch, 2 ki::synchronize,
/// 3 ki::copyto, 4 ki::record_event.
template <class B>
struct ki_host_call {
  void operator()(ki::span<int> out, int what) const {
    const i64 g = ki::get_global_id().x;
    out[g] = 1;
    if (g != bad) return;
    host_call(what);
  }
  static void host_call(int what) {
    const B& b = *host_backend<B>;
    std::vector<int> h(4, 0);
    if (what == 0) (void)ki::zeros<int>(b, 4);
    if (what == 1) ki::launch(b, {.numgroups = 1, .workgroupsize = 1}, ki_host_call{}, ki::span<int>(), 9);
    if (what == 2) ki::synchronize(b);
    if (what == 3) ki::copyto(b, h, h);
    if (what == 4) (void)ki::record_event(b);
  }
};

template <class B>
struct ka_host_call {
  template <class G>
  void operator()(G& g, ki::span<int> out, int what, int in_phase) const {
    g.items([&](auto i) {
      out[i.global_linear()] = 1;
      if (in_phase && i.global_linear() == bad) ki_host_call<B>::host_call(what);
    });
    if (!in_phase && g.group_linear() == 2) ki_host_call<B>::host_call(what);
  }
};

const char* host_call_name(int what) {
  static const char* names[] = {"ki::allocate (or ki::zeros, ki::ones, ki::fill)", "ki::launch", "ki::synchronize",
                                "ki::copyto (or ki::to_host)", "ki::record_event"};
  return names[what];
}
}  // namespace

TEMPLATE_LIST_TEST_CASE("faults: a host function called inside a kernel is an error naming it, in both layers",
                        "[faults]", cpu_backends) {
  const TestType b{};
  host_backend<TestType> = &b;
  const bool oracle = std::is_same_v<TestType, ki::reference::backend>;
  auto out = ki::zeros<int>(b, groups * size);
  for (int what = 0; what < 5; ++what) {
    for (int layer = 0; layer < 3; ++layer) {  // KI; KA in a phase; KA in group-level code
      INFO("host call " << what << ", layer " << layer);
      if (layer == 0) ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_host_call<TestType>{}, out, what);
      else ki::ka::kernel(b, ka_host_call<TestType>{}, size)({.ndrange = groups * size}, out, what, layer == 1 ? 1 : 0);
      {
        const ki::kernel_error e = ki_test::faults::failure_of(b);
        const std::string msg = e.what();
        INFO(msg);
        CHECK(e.error_kind() == ki::kernel_error::kind::exception);
        CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
        if (layer == 0 || (layer == 1 && oracle)) CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
        CHECK_THAT(msg, ContainsSubstring(std::string(host_call_name(what)) + " called inside a kernel"));
      }
      // Still usable: a correct launch.
      ki::launch(b, {.numgroups = groups, .workgroupsize = size}, ki_host_call<TestType>{}, out, -1);
      ki::synchronize(b);
      CHECK(ki::to_host(b, out) == std::vector<int>(groups * size, 1));
    }
  }
}

namespace {
/// Group-level code inside a phase: 0 g.synchronize(), 1 g.reduce, 2 g.scan, 3 g.items, each
/// called by work-item `bad` inside g.items (the others too, in a run that would go on).
struct ka_misplaced {
  static constexpr unsigned phase_line = __LINE__ + 5;
  static constexpr unsigned call_line = __LINE__ + 7;
  template <class G>
  void operator()(G& g, ki::span<int> out, int what) const {
    const auto plus = [](int a, int b) { return a + b; };
    g.items([&](auto i) {
      out[i.global_linear()] = 1;
      if (i.global_linear() == bad) {
        if (what == 0) g.synchronize();
        if (what == 1) out[0] = g.reduce(plus, 0, [](auto) { return 1; });
        if (what == 2) (void)g.scan(plus, 0, [](auto) { return 1; });
        if (what == 3) g.items([&](auto j) { out[j.global_linear()] = 2; });
      }
    });
  }
};

/// Group-level code that throws after a phase (what 1), or before any (what 0).
struct ka_group_throws {
  static constexpr unsigned phase_line = __LINE__ + 4;
  template <class G>
  void operator()(G& g, ki::span<int> out, int what) const {
    if (what == 0 && g.group_linear() == 2) throw std::runtime_error("group-level failure");
    g.items([&](auto i) { out[i.global_linear()] = 1; });
    if (what == 1 && g.group_linear() == 2) throw std::runtime_error("group-level failure");
  }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE(
    "faults: synchronize, reduce, scan or items inside g.items is an error naming the call and "
    "its phase",
    "[faults]", cpu_backends) {
  const TestType b{};
  const bool oracle = std::is_same_v<TestType, ki::reference::backend>;
  const char* names[] = {"g.synchronize()", "@groupreduce", "@groupscan", "g.items(...)"};
  auto out = ki::zeros<int>(b, groups * size);
  ki::ka::kernel k(b, ka_misplaced{}, size);
  for (int what = 0; what < 4; ++what) {
    INFO("call " << names[what]);
    k({.ndrange = groups * size}, out, what);
    {
      const ki::kernel_error e = ki_test::faults::failure_of(b);
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == ki::kernel_error::kind::invalid_collective);
      CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
      if (oracle) CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
      CHECK_THAT(msg, ContainsSubstring(std::string("called ") + names[what] +
                                        " at faults.cpp:" + std::to_string(ka_misplaced::call_line + what)));
      CHECK_THAT(msg, ContainsSubstring("inside its phase g.items(...) at faults.cpp:" +
                                        std::to_string(ka_misplaced::phase_line)));
    }
  }
  k({.ndrange = groups * size}, out, -1);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<int>(groups * size, 1));
}

TEMPLATE_LIST_TEST_CASE("faults: an exception in KA group-level code names the phase before it", "[faults]",
                        cpu_backends) {
  const TestType b{};
  auto out = ki::zeros<int>(b, groups * size);
  ki::ka::kernel k(b, ka_group_throws{}, size);
  for (int what = 0; what < 2; ++what) {
    k({.ndrange = groups * size}, out, what);
    {
      const ki::kernel_error e = ki_test::faults::failure_of(b);
      const std::string msg = e.what();
      INFO(msg);
      CHECK(e.error_kind() == ki::kernel_error::kind::exception);
      CHECK(e.group() == ki::xyz<i64>{2, 0, 0});
      CHECK_THAT(msg, ContainsSubstring("group-level failure"));
      if (what == 0) CHECK_THAT(msg, ContainsSubstring("before its first phase"));
      else
        CHECK_THAT(msg,
                   ContainsSubstring("after the phase at faults.cpp:" + std::to_string(ka_group_throws::phase_line)));
    }
  }
  k({.ndrange = groups * size}, out, -1);
  ki::synchronize(b);
  CHECK(ki::to_host(b, out) == std::vector<int>(groups * size, 1));
}
