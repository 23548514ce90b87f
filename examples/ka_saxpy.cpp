// saxpy! of kernelabstractions-writing-kernels.txt: Y = a X + Y with X marked @Const (read-only,
// aliasing nothing: ki::ka::Const). Passing Y as both arguments is refused before anything runs.
#include <stdexcept>
#include <string>
#include <vector>

#include <ki/ka.hpp>

#include "example_main.hpp"

struct saxpy {
  template <class G>
  void operator()(G& g, double a, ki::span<const double> x, ki::span<double> y) const {
    g.items([&](auto i) {
      const auto k = i.global_linear();  // @index(Global)
      y[k] = a * x[k] + y[k];
    });
  }
};

template <ki::backend B>
bool run(const B& backend) {
  std::vector<double> hx(8);
  for (int i = 0; i < 8; ++i) hx[i] = i + 1.0;
  auto x = ki::to_device(backend, hx);
  auto y = ki::ones<double>(backend, 8);
  ki::ka::kernel k(backend, saxpy{}, 8, 8);
  k(2.0, ki::ka::Const(x), y);
  const auto r = ki::to_host(backend, y);
  std::string shown;
  bool ok = true;
  for (int i = 0; i < 8; ++i) {
    shown += (i ? " " : "") + std::to_string(int(r[i]));
    ok = ok && r[i] == 2.0 * (i + 1) + 1.0;
  }
  try {
    k(2.0, ki::ka::Const(y), y);  // saxpy!(a, Y, Y): Y would be read through @Const and written
    ok = false;
  } catch (const std::invalid_argument&) {
  }
  return ki_example::report("ka_saxpy", ok, "Y = [" + shown + "]");
}

KI_EXAMPLE_MAIN(run)
