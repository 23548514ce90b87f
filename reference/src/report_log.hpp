// Private: how the executor hands a launch's report to the rest of the library.
#pragma once
#include <memory>

#include <ki/reference/report.hpp>

namespace ki::reference::detail {

/// Records r (take_reports, KI_REFERENCE_REPORT) and returns it shared, to attach to an error.
std::shared_ptr<const report> publish(report r);
/// Whether p is a report returned by publish (and still alive).
bool is_report(const void* p);

}  // namespace ki::reference::detail
