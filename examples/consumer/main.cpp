// Built against the installed package: squares 1000 numbers on the reference backend (and on
// simd_cpu where the installed ki has it).
#include <ki/ki.hpp>
#if KI_CONSUMER_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif

#include <cstdio>
#include <vector>

template <class B>
bool squares(const B& backend, const char* name) {
  std::vector<int> h(1000);
  for (int i = 0; i < 1000; ++i) h[i] = i;
  auto a = ki::to_device(backend, h);
  ki::launch(backend, {.ndrange = 1000}, KI_LAMBDA(ki::span<int> x) {
    const auto i = ki::get_global_id().x;
    if (i < x.size()) x[i] = x[i] * x[i];
  }, a);
  const auto r = ki::to_host(backend, a);
  for (int i = 0; i < 1000; ++i)
    if (r[i] != i * i) {
      std::printf("consumer: %s: MISMATCH at %d\n", name, i);
      return false;
    }
  std::printf("consumer: find_package(ki) works, %s: 1000 squares OK\n", name);
  return true;
}

int main() {
  bool ok = squares(ki::reference::backend{}, "reference");
#if KI_CONSUMER_SIMD_CPU
  ok = squares(ki::simd_cpu::backend{}, "simd_cpu") && ok;
#endif
  return ok ? 0 : 1;
}
