// reverse_block of kernelabstractions-writing-kernels.txt, in KI style: each work-group writes
// its local ids into local memory, waits at the barrier, and reads them back reversed. The
// values are local id + 1 so that the output is the document's (8, 7, ..., 1, 8, 7, ..., 1).
#include <string>
#include <vector>

#include "example_main.hpp"

struct reverse_block {
  KI_DEVICE void operator()(ki::span<double> a) const {
    const auto I = ki::get_global_id().x;
    const auto i = ki::get_local_id().x;
    const auto N = ki::get_local_size().x;
    auto buf = ki::localmemory<std::int64_t, 8>([] {});
    buf[i] = i + 1;
    ki::barrier();
    a[I] = double(buf[N - 1 - i]);
  }
};

template <ki::backend B>
bool run(const B& backend) {
  std::vector<double> h(16);
  for (int i = 0; i < 16; ++i) h[i] = i + 1.0;
  auto a = ki::to_device(backend, h);
  ki::launch(backend, {.ndrange = 16, .workgroupsize = 8}, reverse_block{}, a);
  const auto r = ki::to_host(backend, a);

  std::string shown;
  bool ok = true;
  for (int i = 0; i < 16; ++i) {
    shown += (i ? " " : "") + std::to_string(int(r[i]));
    ok = ok && r[i] == double(8 - i % 8);
  }
  return ki_example::report("reverse_block", ok, "A = [" + shown + "]");
}

KI_EXAMPLE_MAIN(run)
