// Shared by the examples: picks the backend the example was built for and reports the result.
//
// The same example source is compiled up to three times: as C++ for the reference backend, by
// nvcc for ki::cuda (KI_EXAMPLE_CUDA) and by hipcc for ki::hip (KI_EXAMPLE_HIP). Without a
// usable GPU the GPU builds say "skipped" and exit with 77, which CTest reports as a skipped test.
#pragma once
#include <cstdio>
#include <string>

#include <ki/ki.hpp>  // the kernels need nothing else; the backend is the build's:
#if KI_EXAMPLE_CUDA
#include <ki/cuda.hpp>
#elif KI_EXAMPLE_HIP
#include <ki/hip.hpp>
#else
#include <ki/reference.hpp>
#endif

namespace ki_example {

/// Prints "name: what ... OK" or "... MISMATCH" and returns ok.
inline bool report(const char* name, bool ok, const std::string& detail) {
  std::printf("%-16s %s -> %s\n", name, detail.c_str(), ok ? "OK (matches the expected result)" : "MISMATCH");
  return ok;
}

/// For examples that need a capability the device does not promise.
inline bool skipped(const char* name, const std::string& why) {
  std::printf("%-16s skipped: %s\n", name, why.c_str());
  return true;
}

template <class Run>
int main(Run run) {
  try {
#if KI_EXAMPLE_CUDA
    std::string why;
    if (!ki::cuda::available(&why)) {
      std::printf("skipped: no CUDA device (%s)\n", why.c_str());
      return 77;
    }
    return run(ki::cuda::backend{}) ? 0 : 1;
#elif KI_EXAMPLE_HIP
    std::string why;
    if (!ki::hip::available(&why)) {
      std::printf("skipped: no HIP device (%s)\n", why.c_str());
      return 77;
    }
    return run(ki::hip::backend{}) ? 0 : 1;
#else
    return run(ki::reference::backend{}) ? 0 : 1;
#endif
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
}

}  // namespace ki_example

#define KI_EXAMPLE_MAIN(run_fn)                                                   \
  int main() {                                                                    \
    return ki_example::main([](const auto& backend) { return run_fn(backend); }); \
  }
