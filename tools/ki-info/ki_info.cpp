// ki-info: every backend this build of ki has, its devices and what they support (like clinfo).
//
//   ki-info                 the backends, with the reference backend's configured profile
//   ki-info --profiles      also every preset profile the reference backend emulates
#include <cstring>
#include <iostream>
#include <string>

#include <ki/config.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "report.hpp"

#if KI_ENABLE_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif

#if KI_ENABLE_CUDA
namespace ki_info {
void report_cuda(std::ostream& os);  // cuda_info.cu
}
#endif
#if KI_ENABLE_HIP
namespace ki_info {
void report_hip(std::ostream& os);  // hip_info.cpp, compiled by hipcc
}
#endif

int main(int argc, char** argv) {
  bool profiles = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--profiles") == 0) {
      profiles = true;
    } else {
      std::cerr << "usage: ki-info [--profiles]\n  unknown argument: " << argv[i] << "\n";
      return 2;
    }
  }
  std::cout << "ki " << KI_VERSION << ": backends in this build: reference" << (KI_ENABLE_CUDA ? ", cuda" : "")
            << (KI_ENABLE_HIP ? ", hip" : "") << (KI_ENABLE_SIMD_CPU ? ", simd_cpu" : "") << "\n\n";
  ki_info::report(std::cout, ki::reference::backend{});
  if (profiles)
    for (const auto& preset : ki::reference::profile::presets()) {
      std::cout << "\n";
      ki_info::report(std::cout, ki::reference::backend{.device = preset});
    }
#if KI_ENABLE_SIMD_CPU
  std::cout << "\n";
  ki_info::report(std::cout, ki::simd_cpu::backend{});
#endif
#if KI_ENABLE_CUDA
  std::cout << "\n";
  ki_info::report_cuda(std::cout);
#endif
#if KI_ENABLE_HIP
  std::cout << "\n";
  ki_info::report_hip(std::cout);
#endif
  return 0;
}
