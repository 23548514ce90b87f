// Compiled by the compile/ka_const_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>:
// case 0 must compile; the others write through a @Const argument, which must not.
#include <ki/ka.hpp>

struct writes {
  template <class G>
  void operator()(G& g, ki::span<const double> x, ki::span<double> y) const {
    g.items([&](auto i) {
#if KI_CASE_0
      y[i.global_linear()] = x[i.global_linear()];
#elif KI_CASE_write_const
      x[i.global_linear()] = y[i.global_linear()];
#endif
    });
  }
};

void f(ki::ka::cpu_group& g, ki::span<const double> x, ki::span<double> y) { writes{}(g, x, y); }
