// Checked-access mode that keeps going (docs/debugging.md, "Every race of a launch" and "Races
// the kernel means"): a kernel with a debug flag that every work-item sets on purpose, declared
// with ki::intended_race, and two races it does not mean, in every work-group. By default a
// launch stops at its first work-group with races; with race_reports::all it runs every group
// and its error lists every race of the launch, per pair of lines, while the intended one is
// only counted, as a warning. Built with ki::reference_checked (the accesses are recorded).
#include <cstdint>
#include <cstdio>
#include <string>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {
using i64 = std::int64_t;

struct smooth_with_debug_flag {
  KI_DEVICE void operator()(ki::span<i64> out, ki::span<i64> seen, ki::span<i64> last) const {
    auto tile = ki::localmemory<i64, 64>([] {});
    const i64 l = ki::get_local_id().x, n = ki::get_local_size().x, i = ki::get_global_id().x;
    seen[ki::intended_race(0)] = 1;  // a debug flag: every work-item sets it, on purpose
    tile[l] = i;
    out[i] = tile[l] + tile[(l + 1) % n];  // BUG: no ki::barrier() before reading the neighbour
    last[ki::get_group_id().x] = l;        // BUG: every work-item of the group, different values
  }
};

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }
}  // namespace

int main() {
  ki::reference::backend b{.print_warnings = false};
  auto out = ki::zeros<i64>(b, 256), seen = ki::zeros<i64>(b, 1), last = ki::zeros<i64>(b, 4);
  bool ok = true;
  for (const auto mode : {ki::reference::race_reports::first_group, ki::reference::race_reports::all}) {
    b.races = mode;
    ki::launch(b, {.numgroups = 4, .workgroupsize = 64}, smooth_with_debug_flag{}, out, seen, last);
    std::string what;
    try {
      ki::synchronize(b);
    } catch (const ki::kernel_error& e) {
      what = e.what();
    }
    const auto warnings = ki::reference::take_warnings();
    const bool all = mode == ki::reference::race_reports::all;
    std::printf("race_reports::%s:\n%s\n", all ? "all" : "first_group", what.c_str());
    for (const auto& w : warnings)
      if (w.kind == "intended-race")
        std::printf("  warning %s at %s, %lld times\n", w.kind.c_str(), w.where.c_str(),
                    static_cast<long long>(w.count));
    // The report names the races the kernel does not mean, never the flag's; with `all`, every
    // pair of lines of the launch (the tile's two orders and the `last` store) in its 4 groups.
    ok = ok && has(what, "race on element 1 of localmemory") && !has(what, "race on element 0 of a ki::span of 1") &&
         (!all || has(what, "in 4 work-groups, at 3 pairs of lines")) && (all || !has(what, "KI_REFERENCE_RACES=all"));
    bool flagged = false;
    for (const auto& w : warnings) flagged = flagged || w.kind == "intended-race";
    ok = ok && flagged;
  }
  std::printf("race_report      the debug flag counted as intended; with race_reports::all every race listed -> %s\n",
              ok ? "OK" : "FAILED");
  return ok ? 0 : 1;
}
