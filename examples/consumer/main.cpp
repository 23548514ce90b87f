// Built against the installed package: squares 1000 numbers on the reference backend.
#include <ki/ki.hpp>

#include <cstdio>
#include <vector>

int main() {
  ki::reference::backend backend;
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
      std::printf("consumer: MISMATCH at %d\n", i);
      return 1;
    }
  std::printf("consumer: find_package(ki) works, 1000 squares OK\n");
  return 0;
}
