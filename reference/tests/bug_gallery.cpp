// The bug gallery (examples/bugs/): every kernel there is diagnosed with the right kind and
// source lines, on every profile, and the control kernel is silent. Compiled in checked-access
// mode (ki::reference_checked), so that races are attributed to work-items and lines.
//
// Exact messages are asserted on the cuda profile; on the others (other widths, adversarial
// layouts, no independent sub-groups) the kind and the lines, since the item ranges differ.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/generators/catch_generators.hpp>

#include "../../examples/bugs/barrier_in_divergent_branch.hpp"
#include "../../examples/bugs/collective_after_return.hpp"
#include "../../examples/bugs/different_barriers.hpp"
#include "../../examples/bugs/different_collectives.hpp"
#include "../../examples/bugs/local_write_write_race.hpp"
#include "../../examples/bugs/missing_barrier.hpp"
#include "../../examples/bugs/non_uniform_shuffle.hpp"
#include "../../examples/bugs/race_between_groups.hpp"
#include "../../examples/bugs/shuffle_in_divergent_code.hpp"
#include "../../examples/bugs/spin_wait.hpp"
#include "../../examples/bugs/tiled_loop.hpp"
#include "../../examples/bugs/unspecified_lanes.hpp"
#include "gallery_support.hpp"

#if !KI_CHECKED_ACCESS
#error "bug_gallery.cpp is compiled in checked-access mode (link ki::reference_checked)"
#endif

namespace {

using namespace ki_test::gallery;
using kind = ki::kernel_error::kind;

std::string at(const char* file, unsigned line) { return std::string(file) + ":" + std::to_string(line); }

const std::string divergence_note =
    " (items are linear local ids, x fastest; every work-item of a work-group must reach the same barrier, and every "
    "work-item of a sub-group (or of a segment, with a width on a device with partitionable sub-groups) the same "
    "communication function)";

/// An input of 4 tiles of 64 distinct values.
ki::array<i64, ki::reference::backend> iota_input(const ki::reference::backend& b) {
  std::vector<i64> h(256);
  std::iota(h.begin(), h.end(), 1);
  auto in = ki::allocate<i64>(b, 256);
  ki::copyto(b, in, h);
  return in;
}

/// The error's kind and where(), and the report's first diagnostic agreeing with them.
void check_error(const outcome& o, kind k, const std::string& where, const std::string& profile) {
  INFO("profile " << profile);
  REQUIRE(o.error.has_value());
  CHECK(o.error->error_kind() == k);
  CHECK(o.error->where() == where);
  REQUIRE(o.report.has_value());
  REQUIRE(!o.report->diagnostics.empty());
  const auto& d = o.report->diagnostics.front();
  CHECK(d.kind == ki::reference::to_string(k));
  CHECK(d.severity == ki::reference::severity::error);
  CHECK(d.message == o.error->what());
  CHECK(o.report->profile == profile);
}

TEST_CASE("gallery: local write-write race", "[gallery][checked]") {
  using K = ki_bugs::local_write_write_race;
  const char* f = "local_write_write_race.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::local_write_write_race': work-group (0, 0, 0): write-write race on element 0 "
        "of localmemory at " +
            at(f, K::line_local) + ": work-item (0, 0, 0) wrote it at " + at(f, K::line_write) +
            ", then work-item (1, 0, 0) wrote it at " + at(f, K::line_write) +
            ", with no barrier between them (31 more in this work-group) [checked-access mode]");
  REQUIRE(o.report);
  CHECK(o.report->diagnostics.front().count == 32);
  CHECK(o.report->diagnostics.front().instances.size() == 8);
  CHECK(o.report->diagnostics.front().where == std::vector<std::string>{at(f, K::line_write)});
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::data_race, at(f, K::line_write), p);
}

TEST_CASE("gallery: missing barrier (read-write race, uninitialised read)", "[gallery][checked]") {
  using K = ki_bugs::missing_barrier;
  const char* f = "missing_barrier.hpp";
  auto b = backend_for("cuda");
  auto in = iota_input(b);
  auto o = run(b, K{}, 1, 64, in);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::missing_barrier': work-group (0, 0, 0): read-write race on element 1 of "
        "localmemory at " +
            at(f, K::line_local) + ": work-item (0, 0, 0) read it at " + at(f, K::line_read) +
            ", then work-item (1, 0, 0) wrote it at " + at(f, K::line_write) + ", with no barrier between them " +
            // (without the hooks, in a sanitizer build, the read is known only by its unchanged bytes)
            (KI_CHECKED_HOOKS ? ""
                              : "(the access named a read left the element as it was: without the hooks "
                                "(KI_CHECKED_HOOKS) a store of the value the element held looks the same; "
                                "KI_REFERENCE_SAME_VALUE_WRITES=allowed takes it as such a store) ") +
            "(63 more in this work-group) [checked-access mode]");
  // The reads before any write are also a warning (checked mode sees them precisely).
  REQUIRE(o.warnings.size() == 1);
  CHECK(o.warnings[0].kind == "uninitialized-local-read");
  CHECK(o.warnings[0].where == at(f, K::line_read));
  CHECK(o.warnings[0].count == 63);
  CHECK(o.warnings[0].message ==
        "read at " + at(f, K::line_read) + " of localmemory at " + at(f, K::line_local) +
            " before any work-item of the group wrote the element (e.g. element 1; unspecified "
            "values, filled with the poison word 0xFFBADBAD), 63 times");
  REQUIRE(o.report);
  REQUIRE(o.report->diagnostics.size() == 2);
  CHECK(o.report->diagnostics[1].severity == ki::reference::severity::warning);
  for (const auto& p : all_profiles()) {
    auto bp = backend_for(p);
    auto inp = iota_input(bp);
    check_error(run(bp, K{}, 1, 64, inp), kind::data_race, at(f, K::line_write), p);
  }
}

TEST_CASE("gallery: barrier in a divergent branch", "[gallery]") {
  using K = ki_bugs::barrier_in_divergent_branch;
  const char* f = "barrier_in_divergent_branch.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::barrier_in_divergent_branch': work-group (0, 0, 0) cannot finish: items 0-15 "
        "wait at barrier " +
            at(f, K::line_barrier) + "; items 16-63 exited" + divergence_note);
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::cannot_finish, at(f, K::line_barrier), p);
}

TEST_CASE("gallery: a different barrier in each branch", "[gallery]") {
  using K = ki_bugs::different_barriers;
  const char* f = "different_barriers.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::different_barriers': work-group (0, 0, 0) cannot finish: items 0-31 wait at "
        "barrier " +
            at(f, K::line_then) + "; items 32-63 wait at barrier " + at(f, K::line_else) + divergence_note);
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::barrier_mismatch, at(f, K::line_then), p);
}

TEST_CASE("gallery: race between work-groups", "[gallery][checked]") {
  using K = ki_bugs::race_between_groups;
  const char* f = "race_between_groups.hpp";
  auto o = run(backend_for("cuda"), K{}, 4, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::race_between_groups': write-write race between work-groups on element 0 of a "
        "ki::span of 256 "
        "elements: "
        "work-item (0, 0, 0) of work-group (0, 0, 0) wrote it at " +
            at(f, K::line_write) + ", work-item (0, 0, 0) of work-group (1, 0, 0) wrote it at " + at(f, K::line_write) +
            " (nothing orders the work-groups of a launch: use atomics, or separate launches)");
  CHECK(o.error->group() == ki::xyz<i64>{1, 0, 0});
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 4, 64), kind::data_race, at(f, K::line_write), p);
  // With several threads the groups run concurrently; the report is the same.
  auto bt = backend_for("cuda");
  bt.threads = 2;
  auto ot = run(bt, K{}, 16, 64);
  REQUIRE(ot.error);
  CHECK(ot.error->error_kind() == kind::data_race);
  CHECK(std::string(ot.error->what())
            .find("work-group (0, 0, 0) wrote it at " + at(f, K::line_write) +
                  ", work-item (0, 0, 0) of work-group (1, 0, 0)") != std::string::npos);
}

TEST_CASE("gallery: shuffle in divergent code", "[gallery]") {
  using K = ki_bugs::shuffle_in_divergent_code;
  const char* f = "shuffle_in_divergent_code.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::shuffle_in_divergent_code': work-group (0, 0, 0) cannot finish: items 0-3, "
        "32-35 wait at shfl_down " +
            at(f, K::line_shfl) + " (sub-groups 0-1); items 4-31, 36-63 exited" + divergence_note);
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::cannot_finish, at(f, K::line_shfl), p);
}

TEST_CASE("gallery: reading lanes that have no work-item (a warning)", "[gallery]") {
  using K = ki_bugs::unspecified_lanes;
  const char* f = "unspecified_lanes.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 40);
  CHECK(!o.error);
  REQUIRE(o.warnings.size() == 1);
  CHECK(o.warnings[0].kind == "unspecified-lane-read");
  CHECK(o.warnings[0].message ==
        "shfl at " + at(f, K::line_shfl) +
            " read lanes that have no work-item (unspecified values, filled with the poison word "
            "0xFFBADBAD), 8 times");
  for (const auto& p : all_profiles()) {
    INFO("profile " << p);
    auto op = run(backend_for(p), K{}, 1, 40);
    CHECK(!op.error);
    REQUIRE(op.warnings.size() == 1);
    CHECK(op.warnings[0].kind == "unspecified-lane-read");
    CHECK(op.warnings[0].where == at(f, K::line_shfl));
  }
  // Warnings are in the launch's report too.
  (void)ki::reference::take_reports();
  (void)run(backend_for("cuda"), K{}, 1, 40);
  const auto reps = ki::reference::take_reports();
  REQUIRE(reps.size() == 1);
  REQUIRE(reps[0].diagnostics.size() == 1);
  CHECK(reps[0].diagnostics[0].severity == ki::reference::severity::warning);
  CHECK(reps[0].diagnostics[0].count == 8);
  CHECK(!reps[0].has_errors());
}

TEST_CASE("gallery: a collective after part of the sub-group returned", "[gallery]") {
  using K = ki_bugs::collective_after_return;
  const char* f = "collective_after_return.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 8);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::collective_after_return': work-group (0, 0, 0) cannot finish: items 0, 2, 4, "
        "6 wait at sub_group_reduce " +
            at(f, K::line_reduce) + " (sub-group 0); items 1, 3, 5, 7 exited" + divergence_note);
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::cannot_finish, at(f, K::line_reduce), p);
}

TEST_CASE("gallery: sub-groups executing different collectives", "[gallery]") {
  using K = ki_bugs::different_collectives;
  const char* f = "different_collectives.hpp";
  // Without independent sub-groups (strict): an error naming both functions.
  auto o = run(backend_for("strict"), K{}, 1, 128);
  REQUIRE(o.error);
  CHECK(o.error->error_kind() == kind::collective_mismatch);
  const std::string m = o.error->what();
  CHECK(m.find("without independent sub-groups (profile 'strict'), all sub-groups must execute the same communication "
               "functions in the same order") != std::string::npos);
  CHECK(m.find("shfl_up at " + at(f, K::line_up)) != std::string::npos);
  CHECK(m.find("shfl_down at " + at(f, K::line_down)) != std::string::npos);
  // With independent sub-groups it is legal: no error on those profiles.
  for (const auto& p : all_profiles()) {
    INFO("profile " << p);
    auto op = run(backend_for(p), K{}, 1, 128);
    CHECK(op.error.has_value() == !ki::reference::profile::preset(p).independent_subgroups);
  }
}

TEST_CASE("gallery: non-uniform shuffle offset", "[gallery]") {
  using K = ki_bugs::non_uniform_shuffle;
  const char* f = "non_uniform_shuffle.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::non_uniform_shuffle': work-group (0, 0, 0): sub-group 0: shfl_down at " +
            at(f, K::line_shfl) + ": offset differs: lane 0 passes 1, lane 1 passes 2");
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::collective_mismatch, at(f, K::line_shfl), p);
}

TEST_CASE("gallery: a spin-wait for another work-item of the group (no-progress)", "[gallery][checked]") {
  using K = ki_bugs::spin_wait;
  const char* f = "spin_wait.hpp";
  auto o = run(backend_for("cuda"), K{}, 1, 64);
  REQUIRE(o.error);
  CHECK(std::string(o.error->what()) ==
        "ki::reference: kernel 'ki_bugs::spin_wait': work-item (0, 0, 0) (linear 0) of work-group (0, 0, 0) polled "
        "ki::atomic_load at " +
            at(f, K::line_poll) +
            " 1048576 times in a row, seeing the same value, with no barrier or sub-group function between "
            "(no-progress): a spin-wait that nothing running can end. The model promises no forward progress between "
            "the work-items of a group, and here the others run only when this one reaches a sync point; the atomic "
            "is in the group's local memory. The other work-items of its group (linear local ids): items 1-63 are "
            "released from barrier " +
            at(f, K::line_barrier) +
            ", not yet resumed. (Wait with a barrier, or let each work-item wait only for itself; the limit is "
            "ki::reference::backend::spin_limit or KI_REFERENCE_SPIN_LIMIT, now 1048576) (after barrier " +
            at(f, K::line_barrier) + ")");
  for (const auto& p : all_profiles())
    check_error(run(backend_for(p), K{}, 1, 64), kind::no_progress, at(f, K::line_poll), p);
}

TEST_CASE("gallery: missing trailing barrier in a tiled loop", "[gallery][checked]") {
  using K = ki_bugs::tiled_loop_missing_trailing_barrier;
  const char* f = "tiled_loop.hpp";
  auto b = backend_for("cuda");
  auto in = iota_input(b);
  auto o = run(b, K{}, 1, 64, in, i64{4});
  REQUIRE(o.error);
  CHECK(std::string(o.error->what())
            .rfind("ki::reference: kernel 'ki_bugs::tiled_loop<false>': work-group (0, 0, 0): read-write race on "
                   "element 0 of localmemory at " +
                       at(f, 16) + ": work-item (0, 0, 0) wrote it at " + at(f, K::line_load) +
                       ", then work-item (1, 0, 0) read it at " + at(f, K::line_sum) +
                       ", with no barrier between them (",
                   0) == 0);
  for (const auto& p : all_profiles()) {
    auto bp = backend_for(p);
    auto inp = iota_input(bp);
    check_error(run(bp, K{}, 1, 64, inp, i64{4}), kind::data_race, at(f, K::line_sum), p);
  }
}

TEST_CASE("gallery: the control (a barrier prevents the race) reports nothing", "[gallery][checked]") {
  using K = ki_bugs::tiled_loop_correct;
  for (const auto& p : all_profiles()) {
    INFO("profile " << p);
    for (std::uint64_t seed : {0, 1, 2, 3}) {
      auto b = backend_for(p, seed);
      auto in = iota_input(b);
      (void)ki::reference::take_reports();
      auto o = run(b, K{}, 1, 64, in, i64{4});
      CHECK(!o.error);
      CHECK(o.warnings.empty());
      CHECK(ki::reference::take_reports().empty());
      const i64 expected = 256 * 257 / 2;  // every item sums all four tiles
      CHECK(std::count(o.out.begin(), o.out.end(), expected) == 64);
    }
  }
}

}  // namespace
