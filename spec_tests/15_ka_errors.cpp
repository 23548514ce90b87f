// The KA layer's errors in a kernel, as the CPU backends report them at synchronize: an exception
// or a ki::span index out of bounds in a phase, a KernelInterface device function in a KA kernel,
// an invalid memory access or a stack overflow. CPU-only: a GPU kernel cannot throw, and a trap
// would end the GPU context. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include "ka_kernels.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
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
}  // namespace ki_spec_ka

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
    CHECK(e.where() == "15_ka_errors.cpp:" + std::to_string(throws_in_phase::line));
    const std::string what = e.what();
    CHECK_THAT(what,
               ki_test::ContainsSubstring("kernel 'throws_in_phase': work-item (5, 0, 0) (linear 5) of work-group "
                                          "(2, 0, 0) threw boom (in the phase at 15_ka_errors.cpp:" +
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
    CHECK_THAT(std::string(e.what()), ki_test::ContainsSubstring("index 15 is out of bounds at ka_kernels.hpp:" +
                                                                 std::to_string(linear_example::line) +
                                                                 " for a ki::span<double> of 15 elements"));
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
                 ki_test::ContainsSubstring("ki: " + fn + " at 15_ka_errors.cpp:" + std::to_string(line) +
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
                                                   "15_ka_errors.cpp:" +
                                                   std::to_string(faults::line - 2) + ", made an invalid"));
      } else {
        const std::string phase = "15_ka_errors.cpp:" + std::to_string(faults::line);
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
