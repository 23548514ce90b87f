// Compiled with -fsanitize=undefined (reference/tests/CMakeLists.txt): every public header of
// the CPU backends and both layers must compile under it. A kernel of each layer is
// instantiated too, so that the templates the headers define are compiled, not only declared.
#include <cstdint>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>
#if KI_UBSAN_SIMD_CPU
#include <ki/simd_cpu.hpp>
#endif

namespace {
struct ki_kernel {
  KI_DEVICE void operator()(ki::span<int> a) const {
    const auto i = ki::get_global_id().x;
    a[i] = ki::sub_group_reduce([](int x, int y) { return x + y; }, static_cast<int>(i));
    ki::barrier();
  }
};
struct ka_kernel {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<int> a) const {
    g.items([&](auto i) { a[i.global_linear()] = 1; });
    g.synchronize();
  }
};
template <class B>
void instantiate(const B& b) {
  auto a = ki::zeros<int>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 64}, ki_kernel{}, a);
  ki::ka::kernel(b, ka_kernel{})({.ndrange = 64, .workgroupsize = 64}, a);
  ki::synchronize(b);
}
}  // namespace

void ki_headers_under_ubsan() {
  instantiate(ki::reference::backend{});
#if KI_UBSAN_SIMD_CPU
  instantiate(ki::simd_cpu::backend{});
#endif
}
