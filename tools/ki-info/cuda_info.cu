// ki-info's CUDA part, compiled by nvcc.
#include <ki/cuda.hpp>

#include "report.hpp"

namespace ki_info {
void report_cuda(std::ostream& os) { report(os, ki::cuda::backend{}); }
}  // namespace ki_info
