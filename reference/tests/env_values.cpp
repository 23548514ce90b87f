// The fault suite: malformed KI_* environment values. Run by CTest once per variable with a bad
// value (reference/tests/CMakeLists.txt, faults/env-*): KI_TEST_BAD_VARIABLE names it. A launch
// of either layer on the backend that reads it is std::invalid_argument naming the variable and
// its value, on the host; the other CPU backend is unaffected. (Hidden: without the variable set
// there is nothing to test.)
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "fault_support.hpp"

namespace {
using Catch::Matchers::ContainsSubstring;
using ki_test::faults::ka_ones;
using ki_test::faults::ki_ones;

/// Both layers' launches on b: refused naming `name`='value' (bad), or run correctly.
template <class B>
void check_launches(const B& b, const std::string& name, const std::string& value, bool bad) {
  auto out = ki::zeros<int>(b, 64);
  ki::ka::kernel k(b, ka_ones{}, 32);
  const std::string named = name + "='" + value + "'";
  if (bad) {
    CHECK_THROWS_MATCHES(ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_ones{}, out), std::invalid_argument,
                         Catch::Matchers::MessageMatches(ContainsSubstring(named)));
    CHECK_THROWS_MATCHES(k({.ndrange = 64}, out), std::invalid_argument,
                         Catch::Matchers::MessageMatches(ContainsSubstring(named)));
    ki::synchronize(b);  // (nothing was queued)
    CHECK(ki::to_host(b, out) == std::vector<int>(64, 0));
  } else {
    ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_ones{}, out);
    ki::synchronize(b);
    CHECK(ki::to_host(b, out) == std::vector<int>(64, 1));
    auto out2 = ki::zeros<int>(b, 64);
    k({.ndrange = 64}, out2);
    ki::synchronize(b);
    CHECK(ki::to_host(b, out2) == std::vector<int>(64, 1));
  }
}
}  // namespace

TEST_CASE("faults: a malformed KI_* value is std::invalid_argument at the next launch, naming it", "[.env_values]") {
  const char* name = std::getenv("KI_TEST_BAD_VARIABLE");
  REQUIRE(name != nullptr);
  const char* value = std::getenv(name);
  REQUIRE(value != nullptr);
  const std::string n = name;
  const bool reference = n.rfind("KI_REFERENCE_", 0) == 0;
  INFO(n << "=" << value);
  check_launches(ki::reference::backend{}, n, value, reference);
#if KI_FAULTS_SIMD_CPU
  check_launches(ki::simd_cpu::backend{}, n, value, !reference);
#endif
}
