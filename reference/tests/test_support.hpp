// What the oracle's diagnostics tests (diagnostics.cpp, sub_group_diagnostics.cpp) share: the
// kernel_error a synchronize throws, and how the oracle names a call site of a test file
// ("file:line", the file name without directories; a column may follow on compilers that
// provide one, e.g. with __builtin_COLUMN).
//
// Line numbers are checked against __LINE__: each kernel records the line of its calls in a
// `static constexpr unsigned line... = __LINE__ + k` a fixed number of lines above them.
#pragma once
#include <cctype>
#include <optional>
#include <string>
#include <string_view>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace ki_test::oracle {

/// The kernel_error that synchronize throws now (none: nullopt).
inline std::optional<ki::kernel_error> sync_error(const ki::reference::backend& b) {
  try {
    ki::synchronize(b);
  } catch (const ki::kernel_error& e) {
    return e;
  }
  return std::nullopt;
}

/// One test file's call sites as the oracle prints them: `source_file{"diagnostics.cpp"}`.
class source_file {
 public:
  explicit constexpr source_file(std::string_view name) : name_(name) {}

  /// "<file>:<line>".
  std::string loc(unsigned line) const { return std::string(name_) + ":" + std::to_string(line); }

  /// Whether s contains `prefix + loc(line)` not followed by another digit (42 is not 421).
  bool names(const std::string& s, const std::string& prefix, unsigned line) const {
    const std::string needle = prefix + loc(line);
    for (auto p = s.find(needle); p != std::string::npos; p = s.find(needle, p + 1)) {
      const auto end = p + needle.size();
      if (end == s.size() || !std::isdigit(static_cast<unsigned char>(s[end]))) return true;
    }
    return false;
  }

  /// Whether `where` (a kernel_error's where(), a warning's where) is "file:line" or
  /// "file:line:column".
  bool at_line(const std::string& where, unsigned line) const {
    return where == loc(line) || where.rfind(loc(line) + ":", 0) == 0;
  }

 private:
  std::string_view name_;
};

}  // namespace ki_test::oracle
