// A KA kernel with a planted missing @synchronize, for `ki-check --gpu`: its two phases share
// local memory without a synchronize() between them. On the CPU backends each phase runs as a
// loop over the whole group, so every work-item's write is done before any read and the output
// is right under every schedule. On a GPU the group-level code runs on every thread at once, and
// a thread reads its neighbour's slot whenever it gets there: the build of this program for the
// emulated GPU (ki_bug_ka_missing_synchronize_emulated_cuda) runs it that way and reads poison.
//
//   ki-check --seeds 2 --gpu ./ki_bug_ka_missing_synchronize_emulated_cuda -- ./ki_bug_ka_missing_synchronize
//
// It prints its output as "out: v0 v1 ...", the format ki-check compares element-wise.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <vector>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#if KI_EXAMPLE_CUDA
#include <ki/cuda.hpp>
#else
#include <ki/reference.hpp>
#endif

/// out[i] = in[the next work-item of the group, cyclically] + 1.
struct rotate_left {
  template <class G>
  void operator()(G& g, ki::span<std::int64_t> out, ki::span<const std::int64_t> in) const {
    constexpr auto n = G::static_size_linear;
    auto buf = g.template localmem<std::int64_t, n>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = in[i.global_linear()]; });
    // The missing g.synchronize(): the next phase reads what other work-items wrote.
    g.items([&](auto i) { out[i.global_linear()] = buf[(i.local_linear() + 1) % n] + 1; });
  }
};

int main() {
#if KI_EXAMPLE_CUDA
  const ki::cuda::backend b;
#else
  const ki::reference::backend b;
#endif
  const std::int64_t n = 64;
  std::vector<std::int64_t> h(n);
  for (std::int64_t k = 0; k < n; ++k) h[static_cast<std::size_t>(k)] = 10 * k;
  auto in = ki::allocate<std::int64_t>(b, n);
  ki::copyto(b, in, h);
  auto out = ki::zeros<std::int64_t>(b, n);
  try {
    ki::ka::kernel(b, rotate_left{}, ki::ka::groupsize<32>)({.ndrange = n}, out, ki::ka::Const(in));
    ki::synchronize(b);
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
    return 1;
  }
  std::printf("out:");
  for (const auto v : ki::to_host(b, out)) std::printf(" %lld", static_cast<long long>(v));
  std::printf("\n");
}
