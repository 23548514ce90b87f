// Spec (kernelabstractions-writing-kernels.txt): the KA layer's @print. Tag [ka].
//
// Compiled for every backend: the kernels' operator() are KI_DEVICE (the GPU pass runs them on
// ki::ka::gpu_group). The tests of what only a CPU backend reports are CPU-only
// (KI_KA_TEST_CPU, ka_kernels.hpp). Kernels and helpers several files use are in ka_kernels.hpp.
#include <algorithm>
#include <string>
#include <vector>

#include "ka_kernels.hpp"

// (After ki's headers, as in the other files: included before them, nvcc 13.0's cudafe++ spins
// on this file without end; docs/offload.md, "Known problems".)
#include "capture_stdout.hpp"

using namespace ki_spec_ka;

namespace ki_spec_ka {
// @print: each work-item prints "<global index>;" with no newline of its own; the last one
// (in local linear order) ends the line it printed with "\n" given as an argument.
struct prints {
  template <class G>
  KI_DEVICE void operator()(G& g) const {
    g.items([&](auto i) { ki::ka::print(i.global_linear(), i.global_linear() == 7 ? ";\n" : ";"); });
  }
};
}  // namespace ki_spec_ka

TEMPLATE_LIST_TEST_CASE("ka: @print prints its arguments without an implied newline", "[ka]", ki_test::backends) {
  auto b = ki_test::make<TestType>();
  ki_test::capture_stdout cap;
  ki::ka::kernel(b, prints{}, 8, 8)();
  ki::synchronize(b);
  const std::string s = cap.finish();
  // Eight "k;" pieces in some order, one newline (the one passed): "0;1;...7;\n" on a CPU.
  CHECK(std::count(s.begin(), s.end(), '\n') == 1);
  std::vector<std::string> pieces;
  std::string cur;
  for (char c : s) {
    if (c == '\n') continue;
    cur += c;
    if (c == ';') pieces.push_back(cur), cur.clear();
  }
  std::sort(pieces.begin(), pieces.end());
  CHECK(pieces == std::vector<std::string>{"0;", "1;", "2;", "3;", "4;", "5;", "6;", "7;"});
  CHECK(cur.empty());
}
