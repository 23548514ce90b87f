// ki-info's HIP part, compiled by hipcc (as HIP, through ki_hip_compile).
#include <ki/hip.hpp>

#include "report.hpp"

namespace ki_info {
void report_hip(std::ostream& os) { report(os, ki::hip::backend{}); }
}  // namespace ki_info
