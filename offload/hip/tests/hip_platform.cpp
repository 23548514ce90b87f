// Compiled by `hip: hipcc compiles for AMD with nvcc and no clang++ on the PATH` (offload/
// CMakeLists.txt): a kernel and its launch through ki::hip, which only the AMD platform of hipcc
// can compile (the NVIDIA one hands the file to nvcc, which rejects `-x hip`).
#include <ki/hip.hpp>

namespace {
struct fill {
  KI_DEVICE void operator()(ki::span<int> out) const {
    const auto i = ki::get_global_id().x;
    if (i < out.size()) out[i] = static_cast<int>(i);
  }
};
}  // namespace

void ki_hip_platform_probe(ki::span<int> out) { ki::launch(ki::hip::backend{}, {.ndrange = out.size()}, fill{}, out); }
