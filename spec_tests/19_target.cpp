// Metal's feature checks: "metal_version, air_version and apple_family return the Metal version,
// AIR version and Apple GPU family targeted by the kernel. These values are known at compile
// time, so unsupported operations can be placed in branches that are compiled out." In ki:
// ki::target (ki/target.hpp), a constant of the pass that compiles the kernel. Each backend's
// kernels see their own target (the CPU, or the CUDA / HIP device pass with its architecture and
// fixed sub-group width), and the text's update_max! runs the branch its target has.
// (compile_fail/target.cpp: without the check, compilation fails naming the feature.)
#include <cstdint>
#include <string>
#include <vector>

#include "backends.hpp"

namespace ki_spec_target {

using i64 = std::int64_t;
using u64 = std::uint64_t;

/// The target as the kernel sees it.
struct describe_target {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    constexpr ki::target_description t = ki::target;
    static_assert(t.kind == ki::target_kind::cpu || t.sub_group_width > 0, "a GPU target fixes the width");
    out[0] = static_cast<i64>(t.kind);
    out[1] = t.cuda_arch;
    out[2] = t.hip_gfx;
    out[3] = t.sub_group_width;
    out[4] = t.atomics64 ? 1 : 0;
    out[5] = t.float64 ? 1 : 0;
  }
};

/// The text's update_max!: the 64-bit atomic where the target has it, a fallback otherwise
/// (every target compiled here has it; compile_fail/target.cpp and the oracle's target test
/// compile the fallback).
struct update_max {
  KI_DEVICE void operator()(ki::span<u64> a, ki::span<i64> which) const {
    const u64 v = 5 + ki::get_global_id().x;
    if constexpr (ki::target.atomics64) {
      (void)ki::atomic_fetch_max(&a[0], v);
      which[0] = 64;
    } else {
      (void)ki::atomic_fetch_max(reinterpret_cast<std::uint32_t*>(&a[0]), static_cast<std::uint32_t>(v));
      which[0] = 32;
    }
  }
};

}  // namespace ki_spec_target

using namespace ki_spec_target;

TEMPLATE_LIST_TEST_CASE("target: kernels see the target they are compiled for, at compile time", "[target]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  auto out = ki_test::filled<i64>(b, 6, -1);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 1}, describe_target{}, out);
  const auto h = ki_test::read(b, out);
  const std::string backend = ki_test::config<TestType>::name;
  KI_INFO(backend << ": kind " << h[0] << ", cuda_arch " << h[1] << ", hip_gfx " << h[2] << ", width " << h[3]);
  if (KI_GPU_EMULATION) {
    // The emulated GPU's kernels are compiled by the host compiler: ki::target, a compile-time
    // description, is the host's, in both passes (docs/offload.md, "What the emulation does
    // not show").
    CHECK(h[0] == static_cast<i64>(ki::target_kind::cpu));
    CHECK(h[3] == 0);
  } else if (backend == "cuda") {
    CHECK(h[0] == static_cast<i64>(ki::target_kind::cuda));
    CHECK(h[1] >= 700);  // __CUDA_ARCH__ of the device pass (900 for the sm_90 build)
    CHECK(h[3] == 32);
    CHECK(h[3] == ki::sub_group_size(b));
  } else if (backend == "hip") {
    CHECK(h[0] == static_cast<i64>(ki::target_kind::hip));
    CHECK(h[2] != 0);  // e.g. 0x90a for gfx90a
    CHECK(h[3] == ki::sub_group_size(b));
  } else {
    CHECK(h[0] == static_cast<i64>(ki::target_kind::cpu));
    CHECK(h[1] == 0);
    CHECK(h[2] == 0);
    CHECK(h[3] == 0);  // the CPU backends choose the width at run time
  }
  CHECK(h[4] == 1);
  CHECK(h[5] == 1);
}

TEMPLATE_LIST_TEST_CASE("target: update_max! takes the branch of its target's 64-bit atomics", "[target]",
                        ki_test::backends) {
  ki_test::make<TestType>();
  const auto b = ki_test::config<TestType>::make();
  auto a = ki_test::filled<u64>(b, 1, 0);
  auto which = ki_test::filled<i64>(b, 1, 0);
  ki::launch(b, {.numgroups = 4, .workgroupsize = 8}, update_max{}, a, which);
  if (!ki::supports_atomics64(b)) {
    // The host target has 64-bit atomics but the emulated device does not (the reference
    // backend's apple profile): the oracle reports the branch the compile-time check took.
    try {
      ki::synchronize(b);
      FAIL("a 64-bit atomic ran on a device without supports_atomics64");
    } catch (const ki::kernel_error& e) {
      KI_INFO(e.what());
      CHECK(e.error_kind() == ki::kernel_error::kind::unsupported);
    }
    return;
  }
  CHECK(ki_test::read(b, a)[0] == 5 + 31);
  CHECK(ki_test::read(b, which)[0] == 64);
}
