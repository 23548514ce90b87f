// Compiled with KI_TARGET_ATOMICS64=0 and KI_TARGET_FLOAT64=0 (CMakeLists.txt): ki::target says
// so, and a kernel's if-constexpr fallbacks are what runs, here on the oracle's apple profile
// (a device without 64-bit atomics or float64).
#include <cstdint>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace {

using u32 = std::uint32_t;
using u64 = std::uint64_t;

static_assert(!ki::target.atomics64 && !ki::target.float64, "compiled as for a target without them");
static_assert(ki::target.kind == ki::target_kind::cpu);

/// A 64-bit maximum: with 64-bit atomics one atomic_fetch_max; without, a compare-exchange loop
/// on the two 32-bit halves guarded by a 32-bit lock word (the fallback a kernel for such a
/// device would write).
struct max64 {
  void operator()(ki::span<u64> a, ki::span<u32> lock, ki::span<u32> path) const {
    const u64 v = (static_cast<u64>(ki::get_global_id().x) << 33) + 7;
    if constexpr (ki::target.atomics64) {
      (void)ki::atomic_fetch_max(&a[0], v);
      path[0] = 64;
    } else {
      u32 expected = 0;
      while (!ki::atomic_compare_exchange(&lock[0], expected, 1u, ki::memory_order::acquire)) expected = 0;
      if (a[0] < v) a[0] = v;
      ki::atomic_store(&lock[0], 0u, ki::memory_order::release);
      path[0] = 32;
    }
  }
};

}  // namespace

TEST_CASE("a kernel compiled for a target without 64-bit atomics runs its fallback", "[oracle][target]") {
  ki::reference::backend b{.device = ki::reference::profile::preset("apple"), .print_warnings = false};
  REQUIRE_FALSE(ki::supports_atomics64(b));
  auto a = ki::zeros<u64>(b, 1);
  auto lock = ki::zeros<u32>(b, 1), path = ki::zeros<u32>(b, 1);
  ki::launch(b, {.numgroups = 3, .workgroupsize = 32}, max64{}, a, lock, path);
  ki::synchronize(b);
  CHECK(ki::to_host(b, a)[0] == (u64{95} << 33) + 7);
  CHECK(ki::to_host(b, path)[0] == 32);
}
