// reverse_block! of kernelabstractions-writing-kernels.txt in the KA layer: the kernel's body is
// the work-group's code; each items() is a phase that every work-item runs (a plain loop on the
// CPU, no fibers), and synchronize() separates the phases. Compare examples/reverse_block.cpp,
// the same algorithm in KI style. The values are local id + 1 so that the output is the text's.
// The work-group size is fixed when the kernel is constructed, as a type (ki::ka::groupsize<8>),
// so that N = prod(@groupsize()) is a constant the local memory's size can use.
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

struct reverse_block {
  template <class G>
  void operator()(G& g, ki::span<double> a) const {
    constexpr auto n = G::static_size_linear;                // @uniform N = prod(@groupsize())
    auto buf = g.template localmem<std::int64_t, n>([] {});  // @localmem Int (N,)
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear() + 1; });
    g.synchronize();  // @synchronize()
    g.items([&](auto i) { a[i.global_linear()] = double(buf[n - 1 - i.local_linear()]); });
  }
};

template <ki::backend B>
bool run(const B& backend) {
  auto a = ki::zeros<double>(backend, 16);
  ki::ka::kernel(backend, reverse_block{}, ki::ka::groupsize<8>, 16)(a);  // static work-group size and ndrange
  const auto r = ki::to_host(backend, a);
  std::string shown;
  bool ok = true;
  for (int i = 0; i < 16; ++i) {
    shown += (i ? " " : "") + std::to_string(int(r[i]));
    ok = ok && r[i] == double(8 - i % 8);
  }
  return ki_example::report("ka_reverse_block", ok, "A = [" + shown + "]");
}

KI_EXAMPLE_MAIN(run)
