// ki::reference::report: what the oracle found in one launch, as data.
//
// Every launch that produced a diagnostic (an error that aborted it, or warnings about
// unspecified values it read) yields a report. It is
//   * attached to the ki::kernel_error that synchronize throws: ki::reference::report_of(e);
//   * kept, process-wide, for ki::reference::take_reports() (the last 64 launches with one);
//   * appended as one JSON line to the file named by KI_REFERENCE_REPORT, if set (this is how
//     tools/ki-check collects the reports of a program it runs).
// Warnings never stop a kernel; an error aborts its launch (the backend stays usable).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ki/errors.hpp>
#include <ki/reference/schedule.hpp>

namespace ki::reference {

enum class severity : std::uint8_t { warning, error };

struct diagnostic {
  /// "data-race", "invalid-seed", "cannot-finish", "barrier-mismatch", "collective-mismatch",
  /// "invalid-collective", "exception", "stack-overflow", "resource", "unsupported",
  /// "no-progress", "unspecified-lane-read", "uninitialized-local-read".
  std::string kind;
  ki::reference::severity severity = ki::reference::severity::error;
  std::vector<std::string> where;      ///< the source locations involved ("file:line")
  std::int64_t count = 1;              ///< instances in the launch (for an error: in its work-group,
                                       ///< or pairs of work-groups)
  std::vector<std::string> instances;  ///< the first ones (at most 8), readable
  std::string message;                 ///< the first instance, as the exception says it
};

struct report {
  std::string kernel;
  ki::reference::schedule schedule;  ///< the execution that produced it (replay: its seed)
  std::string profile;
  std::vector<diagnostic> diagnostics;

  bool empty() const { return diagnostics.empty(); }
  bool has_errors() const;
  /// Several lines: one per diagnostic, then its first instances.
  std::string str() const;
  /// One line of JSON: {"kernel":...,"seed":...,"order":...,"profile":...,"diagnostics":[...]}.
  std::string json() const;
};

/// The report a kernel_error thrown by the reference backend carries (null for other errors).
const report* report_of(const kernel_error& e);

/// The reports of the launches (on any thread) that had diagnostics since the last call, oldest
/// first; at most the last 64 are kept.
std::vector<report> take_reports();

const char* to_string(kernel_error::kind k);  ///< "data-race", ...
const char* to_string(order o);               ///< "forward", "reverse", "random"

}  // namespace ki::reference
