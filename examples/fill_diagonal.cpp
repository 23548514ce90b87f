// fill_diagonal of kernelabstractions-writing-kernels.txt, in KI style: a 2-D launch over a
// 4x4 matrix stored x fastest (like Julia's column-major), writing val where x == y.
#include <string>
#include <vector>

#include "example_main.hpp"

struct fill_diagonal {
  KI_DEVICE void operator()(ki::span<double> A, double val) const {
    const auto I = ki::get_global_id();
    if (I.x < A.extents().x && I.y < A.extents().y && I.x == I.y) A(I.x, I.y) = val;
  }
};

template <ki::backend B>
bool run(const B& backend) {
  std::vector<double> h(16);
  for (int i = 0; i < 16; ++i) h[i] = i + 1.0;  // reshape(1.0:16.0, 4, 4)
  auto A = ki::allocate<double>(backend, {4, 4});
  ki::copyto(backend, A, h);
  ki::launch(backend, {.ndrange = {4, 4}, .workgroupsize = {4, 1}}, fill_diagonal{}, A, 42.0);
  const auto r = ki::to_host(backend, A);

  bool ok = true;
  std::string shown;
  for (int row = 0; row < 4; ++row) {
    shown += "\n    ";
    for (int col = 0; col < 4; ++col) {
      const double v = r[row + 4 * col];
      const double expected = row == col ? 42.0 : row + 4.0 * col + 1.0;
      ok = ok && v == expected;
      shown += std::to_string(int(v)) + (col < 3 ? "\t" : "");
    }
  }
  return ki_example::report("fill_diagonal", ok, "A =" + shown + "\n   ");
}

KI_EXAMPLE_MAIN(run)
