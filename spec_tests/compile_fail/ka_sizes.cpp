// Compiled by the compile/ka_sizes_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>:
// case 0 must compile; the other asks for @localmem T (N,) with N = prod(@groupsize()) in a
// group without a static work-group size (G::static_size_linear is 0), which must not.
#include <ki/ka.hpp>

struct uses_localmem {
  template <class G>
  void operator()(G& g) const {
#if KI_CASE_0
    auto m = g.template localmem<int, 8>([] {});
#elif KI_CASE_dynamic_n
    auto m = g.template localmem<int, G::static_size_linear>([] {});
#endif
    (void)m;
  }
};

void static_group(ki::ka::basic_cpu_group<ki::ka::static_size<8>>& g) { uses_localmem{}(g); }
void dynamic_group(ki::ka::cpu_group& g) { uses_localmem{}(g); }
