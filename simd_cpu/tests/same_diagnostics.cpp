// One bug, one report: the same misuse gives the same kernel_error kind, coordinates, source
// location and message (up to the backend's name) on both CPU backends, since both build their
// reports with the CPU runtime's one reporter (ki/cpu/report.hpp). Every kernel of the bug
// gallery (examples/bugs/) and each case of the always-on diagnostics (divergence, mismatch,
// a group that cannot finish, exceptions, out-of-bounds accesses, stack overflow, bad and
// disagreeing sub-group calls, local memory beyond the limit) runs on the oracle and on
// simd_cpu, configured alike (one thread, sub-groups of 32 in the linear layout, the same
// limits), and the two outcomes are compared.
#include <cstdint>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>
#include <ki/simd_cpu.hpp>

#include "../../examples/bugs/barrier_in_divergent_branch.hpp"
#include "../../examples/bugs/collective_after_return.hpp"
#include "../../examples/bugs/different_barriers.hpp"
#include "../../examples/bugs/different_collectives.hpp"
#include "../../examples/bugs/local_write_write_race.hpp"
#include "../../examples/bugs/missing_barrier.hpp"
#include "../../examples/bugs/non_uniform_shuffle.hpp"
#include "../../examples/bugs/race_between_groups.hpp"
#include "../../examples/bugs/shuffle_in_divergent_code.hpp"
#include "../../examples/bugs/tiled_loop.hpp"
#include "../../examples/bugs/unspecified_lanes.hpp"

namespace {
using i64 = std::int64_t;

/// The misuses of the diagnostics tests, one kernel: work-item `who` of group `group` does
/// `what` (the others behave).
// Deliberate undefined behaviour, the fault under test: not instrumented by UBSan
// (tools/test --sanitize), so that a sanitizer build meets the fault itself (the signal the
// runtime reports), as a program built without sanitizers does.
[[gnu::noinline, gnu::no_sanitize("undefined")]] void write_through_null() {
  volatile i64* volatile p = nullptr;  // (read at run time: the compiler cannot drop the store as UB)
  *p = 1;
}

enum class misuse : int {
  throws_after_barrier,
  span_out_of_bounds,
  local_out_of_bounds,
  overflows_stack,
  exits_early,
  other_barrier,
  three_ways,
  bad_width,
  bad_mask,
  offsets_differ,
  shuffle_by_half,
  too_much_local_memory,
  null_write,
};

[[gnu::noinline]] i64 recurse(volatile char* up, i64 depth) {
  volatile char pad[1024];
  pad[0] = up != nullptr ? up[0] : 0;
  return depth == 0 ? pad[0] : recurse(pad, depth - 1) + 1;
}

struct misbehave {
  KI_DEVICE void operator()(ki::span<i64> out, misuse what, i64 group, i64 who) const {
    const i64 l = ki::get_local_id().x;
    const bool in_group = ki::get_group_id().x == group, me = in_group && l == who;
    auto local = ki::localmemory<i64, 64>([] {});
    local[l] = l;
    ki::barrier();
    switch (what) {
      case misuse::throws_after_barrier:
        if (me) throw std::runtime_error("boom");
        break;
      case misuse::span_out_of_bounds:
        if (me) out[out.size() + l] = 1;
        break;
      case misuse::local_out_of_bounds:
        if (me) local[64 + l] = 1;
        break;
      case misuse::overflows_stack:
        if (me) out[0] = recurse(nullptr, 1 << 20);
        break;
      case misuse::exits_early:
        if (in_group && l > who) return;
        ki::barrier();
        break;
      case misuse::other_barrier:
        if (me) ki::barrier();
        else ki::barrier();
        break;
      case misuse::three_ways:
        if (!in_group || l < 32) ki::barrier();
        else if (l < 36) (void)ki::sub_group_reduce(std::plus<>{}, l, 8);
        break;
      case misuse::bad_width: out[ki::get_global_id().x] = ki::shfl_down(l, 1, me ? 3 : 8); break;
      case misuse::bad_mask: out[ki::get_global_id().x] = ki::shfl_xor(l, me ? 40 : 1); break;
      case misuse::offsets_differ: out[ki::get_global_id().x] = ki::shfl_down(l, me ? 2 : 1); break;
      case misuse::shuffle_by_half:
        if (!in_group || l % 32 <= who % 32) out[ki::get_global_id().x] = ki::shfl_xor(l, 1);
        break;
      case misuse::too_much_local_memory:
        if (me) {
          auto big = ki::localmemory<char, 70000>([] {});
          big[0] = 1;
        }
        break;
      case misuse::null_write:
        if (me) write_through_null();
        break;
    }
    ki::barrier();
    out[ki::get_global_id().x] += local[63 - l];
  }
};

ki::reference::backend reference_backend() {
  ki::reference::backend b{
      .device = ki::reference::profile::preset("cuda"), .threads = 1, .stack_size = 64 * 1024, .print_warnings = false};
  b.device.max_local_memory = ki::simd_cpu::max_local_memory;
  return b;
}
const ki::simd_cpu::backend simd_backend{.threads = 1, .stack_size = 64 * 1024, .sub_group_width = 32};

/// The message with the backend's own names replaced, so that two backends' can be compared.
std::string normalized(std::string m) {
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"ki::reference", "ki::<backend>"},
                                 {"ki::simd_cpu", "ki::<backend>"},
                                 {"KI_REFERENCE_", "KI_<BACKEND>_"},
                                 {"KI_SIMD_CPU_", "KI_<BACKEND>_"}})
    for (std::size_t p; (p = m.find(from)) != std::string::npos;) m.replace(p, from.size(), to);
  return m;
}

struct outcome {
  std::optional<ki::kernel_error> error;
};

template <class B, class K, class... A>
outcome run(const B& b, K k, i64 groups, i64 n, const A&... args) {
  auto out = ki::zeros<i64>(b, groups * n);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n, .name = "same"}, k, out, args...);
  outcome o;
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    o.error = e;
  }
  return o;
}

/// The two backends' outcomes of one kernel are the same: both no error, or the same kind,
/// coordinates, location and message (up to the backend's name).
void same_outcome(const char* what, const outcome& r, const outcome& s) {
  INFO(what);
  INFO("reference: " << (r.error ? r.error->what() : "no error"));
  INFO("simd_cpu:  " << (s.error ? s.error->what() : "no error"));
  REQUIRE(r.error.has_value() == s.error.has_value());
  if (!r.error) return;
  CHECK(r.error->error_kind() == s.error->error_kind());
  CHECK(r.error->group() == s.error->group());
  CHECK(r.error->local() == s.error->local());
  CHECK(r.error->where() == s.error->where());
  CHECK(normalized(r.error->what()) == normalized(s.error->what()));
  CHECK(std::string(s.error->what()).rfind("ki::simd_cpu: ", 0) == 0);
  CHECK(std::string(r.error->what()).rfind("ki::reference: ", 0) == 0);
}

/// Runs k on both backends and checks that they report the same.
template <class K, class... A>
void same_report(const char* what, K k, i64 groups, i64 n, const A&... args) {
  same_outcome(what, run(reference_backend(), k, groups, n, args...), run(simd_backend, k, groups, n, args...));
}

/// The same, for kernels that take the gallery's input array (4 tiles of 64 distinct values,
/// made on each backend).
template <class K, class... A>
void same_report_with_input(const char* what, K k, i64 groups, i64 n, const A&... args) {
  std::vector<i64> h(256);
  std::iota(h.begin(), h.end(), 1);
  const auto rb = reference_backend();
  same_outcome(what, run(rb, k, groups, n, ki::to_device(rb, h), args...),
               run(simd_backend, k, groups, n, ki::to_device(simd_backend, h), args...));
}

}  // namespace

TEST_CASE("diagnostics: both CPU backends report the same kind and message (the bug gallery)",
          "[simd_cpu][same_diagnostics]") {
  // (The races are found in checked-access mode only, which is the oracle's: here, compiled in
  // the default mode, both backends run them without a report.)
  same_report("local_write_write_race", ki_bugs::local_write_write_race{}, 1, 64);
  same_report_with_input("missing_barrier", ki_bugs::missing_barrier{}, 1, 64);
  same_report("barrier_in_divergent_branch", ki_bugs::barrier_in_divergent_branch{}, 1, 64);
  same_report("different_barriers", ki_bugs::different_barriers{}, 1, 64);
  same_report("race_between_groups", ki_bugs::race_between_groups{}, 4, 64);
  same_report("shuffle_in_divergent_code", ki_bugs::shuffle_in_divergent_code{}, 1, 64);
  same_report("unspecified_lanes", ki_bugs::unspecified_lanes{}, 1, 40);
  same_report("collective_after_return", ki_bugs::collective_after_return{}, 1, 8);
  same_report("different_collectives", ki_bugs::different_collectives{}, 1, 128);
  same_report("non_uniform_shuffle", ki_bugs::non_uniform_shuffle{}, 1, 64);
  same_report_with_input("tiled_loop_missing_trailing_barrier", ki_bugs::tiled_loop_missing_trailing_barrier{}, 1, 64,
                         i64{4});
  same_report_with_input("tiled_loop_correct", ki_bugs::tiled_loop_correct{}, 1, 64, i64{4});
}

TEST_CASE("diagnostics: both CPU backends report the same kind and message (every always-on check)",
          "[simd_cpu][same_diagnostics]") {
  const struct {
    const char* name;
    misuse what;
    ki::kernel_error::kind kind;
  } cases[] = {
      {"an exception after a barrier", misuse::throws_after_barrier, ki::kernel_error::kind::exception},
      {"a ki::span index out of bounds", misuse::span_out_of_bounds, ki::kernel_error::kind::exception},
      {"a local memory index out of bounds", misuse::local_out_of_bounds, ki::kernel_error::kind::exception},
      {"a fiber stack overflow", misuse::overflows_stack, ki::kernel_error::kind::stack_overflow},
      {"work-items that exit while others wait", misuse::exits_early, ki::kernel_error::kind::cannot_finish},
      {"a work-item at another barrier", misuse::other_barrier, ki::kernel_error::kind::barrier_mismatch},
      {"a barrier, a sub-group function and an exit", misuse::three_ways, ki::kernel_error::kind::barrier_mismatch},
      {"a width that is not a power of two", misuse::bad_width, ki::kernel_error::kind::invalid_collective},
      {"a mask beyond the width", misuse::bad_mask, ki::kernel_error::kind::invalid_collective},
      {"offsets that differ", misuse::offsets_differ, ki::kernel_error::kind::collective_mismatch},
      {"part of a sub-group in a shuffle", misuse::shuffle_by_half, ki::kernel_error::kind::barrier_mismatch},
      {"local memory beyond the limit", misuse::too_much_local_memory, ki::kernel_error::kind::resource},
      {"a write through a null pointer", misuse::null_write, ki::kernel_error::kind::exception},
  };
  for (const auto& c : cases)
    for (const i64 who : {i64{0}, i64{5}, i64{33}}) {
#if defined(__SANITIZE_ADDRESS__)
      // (AddressSanitizer cannot follow the recovery from a stack overflow: a siglongjmp out of
      // the signal handler leaves its shadow of the thread's stack stale.)
      if (c.what == misuse::overflows_stack) continue;
#endif
      INFO(c.name << ", work-item " << who << " of group 1");
      same_report(c.name, misbehave{}, 3, 64, c.what, i64{1}, who);
      // The oracle's answer is the expected kind (so that the comparison compares errors).
      const outcome r = run(reference_backend(), misbehave{}, 3, 64, c.what, i64{1}, who);
      REQUIRE(r.error.has_value());
      CHECK(r.error->error_kind() == c.kind);
      CHECK(r.error->group() == ki::xyz<i64>{1, 0, 0});
      // Participants that disagree: the coordinates are those of the first lane that differs
      // from the scope's first (not whichever arrived last, which depends on the schedule).
      if (c.what == misuse::offsets_differ) CHECK(r.error->local().x == (who % 32 == 0 ? who + 1 : who));
    }
}
