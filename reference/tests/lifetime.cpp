// The fault suite: lifetime and alignment mistakes the library can see. On the reference
// backend (the debugging configuration) memory in use by queued work is never released under
// it: a ki::span kept past its array's life is refused when a launch is queued, and an array
// another host thread destroys while a copy or launch of it is queued makes that operation fail
// with std::invalid_argument at synchronize (it does not run) instead of reading freed memory.
// An atomic on a misaligned address is an error naming the call and its line, on both CPU
// backends and in both layers.
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <catch2/catch_template_test_macros.hpp>
#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/ka.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

#include "fault_support.hpp"

using ki_test::faults::cpu_backends;

namespace {
using ki_test::faults::ka_ones;
using ki_test::faults::ki_ones;
using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;
using Catch::Matchers::MessageMatches;

ki::reference::backend delayed() {
  ki::reference::backend b{};
  b.queue = ki::reference::queue_mode::delayed;  // (queued work runs at synchronize)
  return b;
}
}  // namespace

TEST_CASE("faults: a span kept past ki::unsafe_free is refused when a launch is queued", "[faults][lifetime]") {
  const ki::reference::backend b{};
  auto a = ki::zeros<int>(b, 64);
  const ki::span<int> kept = a.argconvert(b);
  ki::unsafe_free(a);
  CHECK_THROWS_MATCHES(ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_ones{}, kept), std::invalid_argument,
                       MessageMatches(ContainsSubstring("argument 0 (a ki::span) of kernel") &&
                                      ContainsSubstring("is memory that was released")));
  ki::ka::kernel k(b, ka_ones{}, 32);
  CHECK_THROWS_MATCHES(k({.ndrange = 64}, kept), std::invalid_argument,
                       MessageMatches(ContainsSubstring("is memory that was released")));
  // The backend goes on.
  auto c = ki::zeros<int>(b, 64);
  k({.ndrange = 64}, c);
  CHECK(ki::to_host(b, c) == std::vector<int>(64, 1));
}

TEST_CASE("faults: an array another thread destroys while a copy or launch of it is queued", "[faults][lifetime]") {
  const auto b = delayed();
  for (const bool launch : {false, true}) {
    INFO((launch ? "launch" : "copy"));
    std::vector<int> host(64, 7);
    auto a = ki::ones<int>(b, 64);
    ki::synchronize(b);  // (its fill has run: only what follows is queued)
    if (launch) ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_ones{}, a);
    else ki::copyto(b, host, a);                   // queued: it runs at synchronize
    std::thread([gone = std::move(a)] {}).join();  // destroyed there, its copy still queued here
    CHECK_THROWS_MATCHES(
        ki::synchronize(b), std::invalid_argument,
        MessageMatches(ContainsSubstring(launch ? "argument 0 (a ki::span) of kernel" : "the source of ki::copyto") &&
                       ContainsSubstring("was released by another host thread") &&
                       ContainsSubstring("it did not run")));
    if (!launch) CHECK(host == std::vector<int>(64, 7));  // (not written from freed memory)
  }
  // The same thread may destroy an array right after queueing work on it: the work comes first.
  std::vector<int> host(64, 0);
  {
    auto a = ki::ones<int>(b, 64);
    ki::copyto(b, host, a);
  }
  ki::synchronize(b);
  CHECK(host == std::vector<int>(64, 1));
}

namespace {
/// An atomic on an int one byte past an aligned one.
struct ki_misaligned {
  static constexpr unsigned line = __LINE__ + 4;
  void operator()(ki::span<int> out, int bad) const {
    char* bytes = reinterpret_cast<char*>(out.data());
    int* p = reinterpret_cast<int*>(bytes + (bad != 0 && ki::get_global_id().x == 37 ? 1 : 0));
    ki::atomic_fetch_add(p, 1);
  }
};
struct ka_misaligned {
  static constexpr unsigned line = __LINE__ + 6;
  template <class G>
  void operator()(G& g, ki::span<int> out, int bad) const {
    g.items([&](auto i) {
      char* bytes = reinterpret_cast<char*>(out.data());
      int* p = reinterpret_cast<int*>(bytes + (bad != 0 && i.global_linear() == 37 ? 1 : 0));
      ki::atomic_fetch_add(p, 1);
    });
  }
};
}  // namespace

TEMPLATE_LIST_TEST_CASE("faults: an atomic on a misaligned address names the call and its line", "[faults]",
                        cpu_backends) {
  const TestType b{};
  auto out = ki::zeros<int>(b, 2);
  ki::ka::kernel k(b, ka_misaligned{}, 32);
  for (const bool ka : {false, true}) {
    INFO((ka ? "KA" : "KI"));
    if (ka) k({.ndrange = 64}, out, 1);
    else ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_misaligned{}, out, 1);
    const ki::kernel_error e = ki_test::faults::failure_of(b);
    const std::string msg = e.what();
    INFO(msg);
    CHECK(e.error_kind() == ki::kernel_error::kind::exception);
    CHECK(e.group() == ki::xyz<i64>{1, 0, 0});
    CHECK(e.local() == ki::xyz<i64>{5, 0, 0});
    CHECK_THAT(msg, ContainsSubstring("ki::atomic_fetch_add at lifetime.cpp:" +
                                      std::to_string(ka ? ka_misaligned::line : ki_misaligned::line) + " on int"));
    CHECK_THAT(msg, ContainsSubstring("which is not aligned to 4 bytes"));
  }
  auto fresh = ki::zeros<int>(b, 2);
  ki::launch(b, {.numgroups = 2, .workgroupsize = 32}, ki_misaligned{}, fresh, 0);
  ki::synchronize(b);
  CHECK(ki::to_host(b, fresh) == std::vector<int>{64, 0});
}
