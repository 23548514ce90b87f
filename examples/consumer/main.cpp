// Built against the installed package: squares 1000 numbers on each backend the project asked
// for (examples/consumer/CMakeLists.txt: KI_CONSUMER_BACKENDS). <ki/ki.hpp> is the portable API;
// each backend is its own include. Built a second time with ki::reference_checked
// (KI_CONSUMER_CHECKED, ki_consumer_checked): the same squares, and a kernel with a race, which
// the oracle in checked-access mode must report; simd_cpu in the same program runs the same
// (instrumented) kernels unchecked.
#include <ki/ki.hpp>
#if KI_CONSUMER_REFERENCE
#include <ki/reference.hpp>
#endif
#if KI_CONSUMER_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif
#if KI_CONSUMER_CUDA
#include <ki/cuda.hpp>
#endif

#include <cstdio>
#include <string>
#include <vector>

namespace {
struct square {
  KI_DEVICE void operator()(ki::span<int> x) const {
    const auto i = ki::get_global_id().x;
    if (i < x.size()) x[i] = x[i] * x[i];
  }
};

template <class B>
bool squares(const B& backend, const char* name) {
  std::vector<int> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i;
  auto a = ki::to_device(backend, h);
  ki::launch(backend, {.ndrange = 1000}, square{}, a);
  const auto r = ki::to_host(backend, a);
  for (int i = 0; i < 1000; ++i)
    if (r[i] != i * i) {
      std::printf("consumer: %s: MISMATCH at %d\n", name, i);
      return false;
    }
  std::printf("consumer: find_package(ki) works, %s: 1000 squares OK\n", name);
  return true;
}

#if KI_CONSUMER_CHECKED
/// x[i] += x[i + 1]: item i reads what item i + 1 writes, with no barrier between them.
struct shift_add {
  KI_DEVICE void operator()(ki::span<int> x) const {
    const auto i = ki::get_global_id().x;
    if (i + 1 < x.size()) x[i] += x[i + 1];
  }
};

/// ki::reference_checked reports the race, naming it; true if it did.
bool race_reported() {
  const ki::reference::backend backend;
  auto a = ki::to_device(backend, std::vector<int>(64, 1));
  try {
    ki::launch(backend, {.ndrange = 64, .workgroupsize = 64}, shift_add{}, a);
    ki::synchronize(backend);
  } catch (const ki::kernel_error& e) {
    if (e.error_kind() == ki::kernel_error::kind::data_race) {
      std::printf("consumer: ki::reference_checked reports the race of shift_add OK\n");
      return true;
    }
    std::printf("consumer: ki::reference_checked: unexpected error: %s\n", e.what());
    return false;
  }
  std::printf("consumer: ki::reference_checked: the race of shift_add was NOT reported\n");
  return false;
}
#endif
}  // namespace

int main() {
  bool ok = true;
#if KI_CONSUMER_REFERENCE
  ok = squares(ki::reference::backend{}, "reference") && ok;
#endif
#if KI_CONSUMER_SIMD_CPU
  ok = squares(ki::simd_cpu::backend{}, "simd_cpu") && ok;
#endif
#if KI_CONSUMER_CHECKED
  ok = race_reported() && ok;
#endif
#if KI_CONSUMER_CUDA
  if (std::string why; ki::cuda::available(&why)) ok = squares(ki::cuda::backend{}, "cuda") && ok;
  else std::printf("consumer: find_package(ki COMPONENTS cuda) works; cuda: skipped, no device (%s)\n", why.c_str());
#endif
  return ok ? 0 : 1;
}
