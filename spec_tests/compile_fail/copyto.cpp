// Compiled by the compile/copyto_* tests (spec_tests/CMakeLists.txt) with one KI_CASE_<name>:
// case 0 must compile; the others copy into a const array, or between arrays of two backends
// (whose memory one backend's queue can neither order nor keep alive), which must not.
#include <vector>

#include <ki/ki.hpp>
#include <ki/reference.hpp>
#if KI_CASE_other_backend
#include <ki/simd_cpu.hpp>
#endif

void copies(const ki::reference::backend& b, ki::array<int, ki::reference::backend>& a,
            const ki::array<int, ki::reference::backend>& c, std::vector<int>& host) {
#if KI_CASE_0
  ki::copyto(b, a, c);
  ki::copyto(b, host, c);
  ki::copyto(b, a, host);
#elif KI_CASE_const_dest
  ki::copyto(b, c, a);
  (void)host;
#elif KI_CASE_other_backend
  ki::array<int, ki::simd_cpu::backend> s;
  ki::copyto(b, a, s);
  (void)c, (void)host;
#endif
}
