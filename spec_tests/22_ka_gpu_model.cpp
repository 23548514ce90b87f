// KA kernels in the GPU's execution model (docs/offload.md, "The emulated GPU"). A GPU runs a KA
// kernel's group-level code on every thread of the block, each g.items(f) as one guarded
// statement and each g.synchronize() as __syncthreads(); the CPU backends run group-level code
// once per group and each phase as a loop over the work-items. Mistakes in a kernel's structure
// that the CPU's model forgives show on the GPU: a missing @synchronize between phases that
// share local memory, a synchronize inside items (which padding threads never reach), a
// @synchronize(cond) whose cond is not uniform. The emulated GPU runs the GPU's model on the
// oracle, so each mistake is caught here, with its line; the tests run there (the CPU backends
// have their own model, and a real GPU would hang or silently compute something). Tag [ka].
#include <cstdint>
#include <string>

#include <ki/ka.hpp>

#include "backends.hpp"

namespace ki_spec_ka_gpu_model {
using i64 = std::int64_t;

/// reverse_block! as the text writes it, with (sync) or without its @synchronize.
template <bool Sync>
struct reverse_block {
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> a) const {
    const i64 n = g.groupsize_linear();
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) { buf[i.local_linear()] = i.local_linear(); });
    if constexpr (Sync) g.synchronize();
    g.items([&](auto i) { a[i.global_linear()] = buf[n - 1 - i.local_linear()]; });
  }
};

/// g.synchronize() inside items: the padding threads of the last group never reach it.
struct synchronize_in_items {
  static constexpr unsigned line = __LINE__ + 6;  // the synchronize
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> a) const {
    auto buf = g.template localmem<i64, 8>([] {});
    g.items([&](auto i) {
      buf[i.local_linear()] = i.global_linear();
      g.synchronize();
      a[i.global_linear()] = buf[(i.local_linear() + 1) % 8];
    });
  }
};

/// @synchronize(cond) with a cond that is not uniform on a GPU: `last` is the group's on the CPU
/// (the last work-item's), each thread's own on a GPU.
struct synchronize_on_private {
  static constexpr unsigned line = __LINE__ + 6;  // the synchronize
  template <class G>
  KI_DEVICE void operator()(G& g, ki::span<i64> a) const {
    i64 last = 0;
    g.items([&](auto i) { last = i.local_linear(); });
    g.items([&](auto i) { a[i.global_linear()] = last; });
    g.synchronize(last % 2 == 1);
    g.items([&](auto i) { a[i.global_linear()] += 1; });
  }
};

#if KI_GPU_EMULATION
#if KI_TEST_BACKEND_CUDA
using gpu_error = ki::cuda::error;
inline int reset_device() { return cudaDeviceReset(); }
#else
using gpu_error = ki::hip::error;
inline int reset_device() { return hipDeviceReset(); }
#endif
/// The message of the failure that the launch queued on b leaves at synchronize ("" if none);
/// the device is reset after it (the GPU's error is sticky).
template <class B>
std::string failure(const B& b) {
  try {
    ki::synchronize(b);
  } catch (const gpu_error& e) {
    REQUIRE(reset_device() == 0);
    return e.what();
  }
  return "";
}
#endif

template <class B>
void gpu_model_only() {
  if (!KI_GPU_EMULATION)
    SKIP(std::string(ki_test::config<B>::name) +
         ": the GPU's execution model of KA kernels is the emulated GPU's (the CPU backends run group-level code "
         "once per group; a real GPU would hang or compute something unspecified)");
}

}  // namespace ki_spec_ka_gpu_model

using namespace ki_spec_ka_gpu_model;

TEMPLATE_LIST_TEST_CASE("ka, GPU model: a missing @synchronize between phases that share local memory shows", "[ka]",
                        ki_test::backends) {
  gpu_model_only<TestType>();
#if KI_GPU_EMULATION
  auto b = ki_test::make<TestType>();
  auto a = ki_test::filled<i64>(b, 16, -1);
  ki::ka::kernel(b, reverse_block<true>{}, 8, 16)(a);
  ki::synchronize(b);
  ki_test::check_all(
      ki_test::read(b, a), [](i64 i) { return 7 - i % 8; }, "with @synchronize");
  // Without it, thread 0 of each block runs its second phase before thread 7 has run its first:
  // it reads buf[7] as the block's shared memory starts, not 7.
  ki::ka::kernel(b, reverse_block<false>{}, 8, 16)(a);
  ki::synchronize(b);
  const auto h = ki_test::read(b, a);
  CHECK(h[0] != 7);
  CHECK(h[8] != 7);
#endif
}

TEMPLATE_LIST_TEST_CASE("ka, GPU model: a synchronize inside items is a barrier the padding threads never reach",
                        "[ka]", ki_test::backends) {
  gpu_model_only<TestType>();
#if KI_GPU_EMULATION
  auto b = ki_test::make<TestType>();
  auto a = ki_test::filled<i64>(b, 12, -1);
  ki::ka::kernel(b, synchronize_in_items{}, 8, 12)(a);  // the second group: 4 work-items, 4 padding threads
  const std::string what = failure(b);
  KI_INFO(what);
  CHECK(what.find("cannot finish") != std::string::npos);
  CHECK(what.find("work-group (1, 0, 0)") != std::string::npos);
  CHECK(what.find("22_ka_gpu_model.cpp:" + std::to_string(synchronize_in_items::line)) != std::string::npos);
#endif
}

TEMPLATE_LIST_TEST_CASE("ka, GPU model: @synchronize(cond) with a cond that is not uniform is a divergent barrier",
                        "[ka]", ki_test::backends) {
  gpu_model_only<TestType>();
#if KI_GPU_EMULATION
  auto b = ki_test::make<TestType>();
  auto a = ki_test::filled<i64>(b, 16, -1);
  ki::ka::kernel(b, synchronize_on_private{}, 8, 16)(a);
  const std::string what = failure(b);
  KI_INFO(what);
  CHECK(what.find("cannot finish") != std::string::npos);
  CHECK(what.find("22_ka_gpu_model.cpp:" + std::to_string(synchronize_on_private::line)) != std::string::npos);
#endif
}
