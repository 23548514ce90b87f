// Compiled by the compile/ka_const_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>:
// case 0 must compile; the others write through a @Const argument, or pass one where the
// kernel's parameter is writable, which must not.
#include <ki/ka.hpp>
#include <ki/reference.hpp>

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

// A launch: x as @Const (its parameter is a span of const elements); y is writable, so
// ki::ka::Const(y) (a ki::span<const double>) must not bind to its parameter.
void launch(const ki::reference::backend& b, ki::array<double, ki::reference::backend>& x,
            ki::array<double, ki::reference::backend>& y) {
#if KI_CASE_const_to_writable
  ki::ka::kernel(b, writes{}, 8, 8)(ki::ka::Const(x), ki::ka::Const(y));
#else
  ki::ka::kernel(b, writes{}, 8, 8)(ki::ka::Const(x), y);
#endif
}
