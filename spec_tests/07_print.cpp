// Spec: _print(args...) / ki::print: "Print args from a kernel". Each call prints one line;
// lines of different work-items may come in any order but never interleave.
// Output is captured by pointing file descriptor 1 at a temporary file around launch +
// synchronize (so it also works for GPU printf, which writes to the process's stdout).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "backends.hpp"
#include "capture_stdout.hpp"

namespace ki_spec_print {

using i64 = std::int64_t;

using ki_test::capture_stdout;

inline std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::size_t start = 0;
  for (std::size_t i = 0; i < s.size(); ++i)
    if (s[i] == '\n') {
      lines.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  if (start < s.size()) lines.push_back(s.substr(start));  // an unterminated last line
  return lines;
}

/// A function, not a namespace-scope variable: device code cannot read host variables.
KI_DEVICE constexpr const char* filler() {
  return "<----------------------------------- a long part of the line ----------------------------------->";
}

/// Two lines per work-item, one before and one after a barrier.
struct say {
  KI_DEVICE void operator()(int tag) const {
    const i64 g = ki::get_global_id().x;
    ki::print("item ", g, " of group ", ki::get_group_id().x, " says ", 3 * g, " ", filler(), " tag ", tag);
    ki::barrier();
    ki::print("again ", g);
  }
};

/// ki::print_inline: work-item 0 builds one line from three calls, then prints a part without
/// any newline; every work-item prints one whole line of its own in one call, "\n" included.
struct inline_parts {
  KI_DEVICE void operator()() const {
    const i64 g = ki::get_global_id().x;
    if (g == 0) {
      ki::print_inline("x = ", 5);
      ki::print_inline(", y = ", 2.5, ",");
      ki::print_inline(" done\n");
    }
    ki::barrier();
    ki::print_inline("whole ", g, " ", filler(), "\n");
    ki::barrier();
    if (g == 0) ki::print_inline("no newline at the end ", 7);
  }
};
}  // namespace ki_spec_print

using namespace ki_spec_print;

TEMPLATE_LIST_TEST_CASE("print: print_inline does not end the line", "[print]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 n = 64;
  std::string out;
  {
    capture_stdout cap;
    ki::launch(b, {.numgroups = 1, .workgroupsize = n}, inline_parts{});
    ki::synchronize(b);
    out = cap.finish();
  }
  // The three calls of work-item 0 made one line (only work-item 0 printed before the barrier).
  REQUIRE(out.rfind("x = 5, y = 2.5, done\n", 0) == 0);
  // No newline was added: the output ends with the last call's text.
  const std::string tail = "no newline at the end 7";
  REQUIRE(out.size() > tail.size());
  CHECK(out.substr(out.size() - tail.size()) == tail);
  // Between them, one intact line per work-item, in any order.
  auto lines = split_lines(out.substr(0, out.size() - tail.size()));
  REQUIRE(!lines.empty());
  lines.erase(lines.begin());
  std::vector<std::string> expected;
  for (i64 g = 0; g < n; ++g) expected.push_back("whole " + std::to_string(g) + " " + filler());
  std::sort(lines.begin(), lines.end());
  std::sort(expected.begin(), expected.end());
  CHECK(lines == expected);
}

TEMPLATE_LIST_TEST_CASE("print: one intact line per call, from many work-items", "[print]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 groups = 8, n = 128;
  std::string out;
  {
    capture_stdout cap;
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, say{}, 42);
    ki::synchronize(b);
    out = cap.finish();
  }
  REQUIRE(!out.empty());
  CHECK(out.back() == '\n');
  auto lines = split_lines(out);
  CHECK(lines.size() == static_cast<std::size_t>(2 * groups * n));
  std::vector<std::string> expected;
  for (i64 g = 0; g < groups * n; ++g) {
    expected.push_back("item " + std::to_string(g) + " of group " + std::to_string(g / n) + " says " +
                       std::to_string(3 * g) + " " + filler() + " tag 42");
    expected.push_back("again " + std::to_string(g));
  }
  std::sort(lines.begin(), lines.end());
  std::sort(expected.begin(), expected.end());
  // The same multiset of lines: every line intact, none split, merged or duplicated.
  std::size_t differ = 0;
  for (std::size_t i = 0; i < std::min(lines.size(), expected.size()); ++i)
    if (lines[i] != expected[i]) ++differ;
  CHECK(differ == 0);
  CHECK(lines == expected);
}

TEMPLATE_LIST_TEST_CASE("print: lines of one work-item keep their order", "[print]", ki_test::backends) {
  const auto b = ki_test::make<TestType>();
  const i64 groups = 4, n = 64;
  std::string out;
  {
    capture_stdout cap;
    ki::launch(b, {.numgroups = groups, .workgroupsize = n}, say{}, 7);
    ki::synchronize(b);
    out = cap.finish();
  }
  const auto lines = split_lines(out);
  REQUIRE(lines.size() == static_cast<std::size_t>(2 * groups * n));
  // The line after the barrier comes after the item's line before it.
  std::vector<std::size_t> first(static_cast<std::size_t>(groups * n), lines.size()), second = first;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const auto& l = lines[i];
    if (l.rfind("item ", 0) == 0) first[std::stoul(l.substr(5))] = i;
    else if (l.rfind("again ", 0) == 0) second[std::stoul(l.substr(6))] = i;
  }
  std::size_t bad = 0;
  for (std::size_t g = 0; g < first.size(); ++g)
    if (!(first[g] < second[g] && second[g] < lines.size())) ++bad;
  CHECK(bad == 0);
}
