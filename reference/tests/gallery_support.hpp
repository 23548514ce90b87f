// What the bug-gallery tests share: running a gallery kernel on a profile and collecting what
// the oracle said (the error synchronize throws, the warnings, the launch report).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>
#include <ki/reference/report.hpp>

namespace ki_test::gallery {

using i64 = std::int64_t;

struct outcome {
  std::optional<ki::kernel_error> error;
  std::vector<ki::reference::warning> warnings;
  std::optional<ki::reference::report> report;  // the error's
  std::vector<i64> out;
};

/// The profile `name`, run deterministically (one thread), warnings not printed.
inline ki::reference::backend backend_for(const std::string& name, std::uint64_t seed = 0) {
  ki::reference::backend b{.device = ki::reference::profile::preset(name), .threads = 1, .print_warnings = false};
  b.schedule = ki::reference::schedule::from_seed(seed);
  return b;
}

/// Launches k over `groups` x `n` work-items with out (groups * n elements, zeroed) and the
/// extra arguments (a const array as a span of const elements, another as a span the kernel may
/// write), synchronizes, and returns what happened.
template <class K, class... A>
outcome run(const ki::reference::backend& b, K k, i64 groups, i64 n, A&&... args) {
  outcome o;
  (void)ki::reference::take_warnings();
  auto out = ki::zeros<i64>(b, groups * n);
  ki::launch(b, {.numgroups = groups, .workgroupsize = n}, k, out, args...);
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    o.error = e;
    if (const auto* r = ki::reference::report_of(e)) o.report = *r;
  }
  o.warnings = ki::reference::take_warnings();
  o.out = ki::to_host(b, out);
  return o;
}

/// The names of every preset (ki::reference::profile::presets()), in the table's order.
inline const std::vector<std::string>& all_profiles() {
  static const std::vector<std::string> p = [] {
    std::vector<std::string> r;
    for (const auto& preset : ki::reference::profile::presets()) r.emplace_back(preset.name);
    return r;
  }();
  return p;
}

}  // namespace ki_test::gallery
