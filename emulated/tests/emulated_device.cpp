// The emulated GPU's own duties (docs/offload.md, "The emulated GPU"): CUDA's masked warp
// intrinsics as a rendezvous of the lanes a mask names, every misuse that CUDA leaves undefined
// reported with the warp, the lane and the line, and a kernel's failure as CUDA's sticky error
// carrying the oracle's diagnostic. Kernels here call the intrinsics directly (threadIdx,
// __shfl_sync, ...), as a CUDA kernel does; they are compiled for the emulated CUDA dialect only.
#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_exception.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/cuda.hpp>
#include <ki/ki.hpp>

namespace {
using i64 = std::int64_t;
using Catch::Matchers::ContainsSubstring;

/// The failure the queued launch leaves at synchronize, then the device reset ("" if none).
std::string failure(const ki::cuda::backend& b) {
  try {
    ki::synchronize(b);
  } catch (const ki::cuda::error& e) {
    REQUIRE(cudaDeviceReset() == cudaSuccess);
    return e.what();
  }
  return "";
}

// Lanes meet by mask, any mask: even lanes read lane 2 among themselves, odd lanes their xor
// partner at distance 2 (both within their own mask), and every lane votes with its half.
struct split_masks {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const unsigned lane = threadIdx.x;
    const i64 v = 100 + lane;
    i64 r = 0;
    unsigned bits = 0;
    if (lane % 2 == 0) {
      r = __shfl_sync(0x55555555u, v, 2);
      bits = __ballot_sync(0x55555555u, lane >= 16);
    } else {
      r = __shfl_xor_sync(0xAAAAAAAAu, v, 2);
      bits = __ballot_sync(0xAAAAAAAAu, lane < 8);
    }
    __syncwarp();
    out[lane] = r;
    out[32 + lane] = bits;
  }
};

struct mask_without_caller {
  static constexpr unsigned line = __LINE__ + 3;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const unsigned lane = threadIdx.x;
    out[lane] = __shfl_sync(0x1u, i64(lane), 0);  // lane 1 is not in the mask
  }
};

struct mask_beyond_the_block {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const unsigned lane = threadIdx.x;
    out[lane] = __shfl_sync(0xFFFFFFFFu, i64(lane), 0);  // a block of 8 threads
  }
};

struct lane_exits {
  KI_DEVICE void operator()(ki::span<i64> out, bool exits) const {
    const unsigned lane = threadIdx.x;
    if (exits && lane == 3) return;
    out[lane] = __shfl_sync(0xFFu, i64(lane), 0);
  }
};

/// ki's own shuffle (its GPU pass: __shfl_sync over the whole warp) in code that half the warp
/// has left: the report names this line, not the intrinsic's inside ki.
struct ki_shfl_after_half_exit {
  static constexpr unsigned line = __LINE__ + 5;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const i64 lane = ki::get_sub_group_local_id();
    if (lane >= 4) return;
    i64 r = 0;
    r = ki::shfl(lane + 100, 0);
    out[lane] = r;
  }
};

struct waits_elsewhere {
  static constexpr unsigned barrier_line = __LINE__ + 4, shfl_line = __LINE__ + 5;
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const unsigned lane = threadIdx.x;
    i64 r = 0;
    if (lane < 4) __syncthreads();
    else r = __shfl_sync(0xFFu, i64(lane), 0);
    out[lane] = r;
  }
};

struct different_intrinsics {
  KI_DEVICE void operator()(ki::span<i64> out) const {
    const unsigned lane = threadIdx.x;
    if (lane < 4) out[lane] = __shfl_sync(0xFFu, i64(lane), 0);
    else out[lane] = __ballot_sync(0xFFu, true);
  }
};

struct spins {
  static constexpr unsigned line = __LINE__ + 3;
  KI_DEVICE void operator()(ki::span<int> flag) const {
    if (threadIdx.x == 0)
      while (ki::atomic_load(&flag[0], ki::memory_order::acquire) == 0) {
      }
    else if (threadIdx.x == 1) ki::atomic_store(&flag[1], 1);  // not the flag thread 0 waits for
  }
};

void noop_kernel(int) {}

}  // namespace

TEST_CASE("emulated GPU: lanes meet by mask, any mask, and exchange within it", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 64);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, split_masks{}, out);
  ki::synchronize(b);
  const auto h = ki::to_host(b, out);
  for (i64 lane = 0; lane < 32; ++lane) {
    const i64 expect = lane % 2 == 0 ? 102 : 100 + (lane ^ 2);
    CHECK(h[lane] == expect);
    const i64 bits = lane % 2 == 0 ? 0x55550000 : 0xAA;  // even lanes >= 16, odd lanes < 8
    CHECK(h[32 + lane] == bits);
  }
}

TEST_CASE("emulated GPU: a mask that does not name the calling lane is reported", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 32);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 32}, mask_without_caller{}, out);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("cudaErrorLaunchFailure"));
  CHECK_THAT(what, ContainsSubstring("warp 0, lane 1: __shfl_sync at emulated_device.cpp:" +
                                     std::to_string(mask_without_caller::line) + " with mask 0x1"));
  CHECK_THAT(what, ContainsSubstring("does not name the calling lane"));
}

TEST_CASE("emulated GPU: a mask naming lanes without a thread is reported", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, mask_beyond_the_block{}, out);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("names lanes without a thread (0xffffff00; the warp has 8 threads)"));
}

TEST_CASE("emulated GPU: a lane that the mask names and that has exited is reported", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, lane_exits{}, out, true);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("lane 3 (thread 3), which the mask names, has exited"));
}

TEST_CASE("emulated GPU: a ki sub-group function's rendezvous is reported at the user's line", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, ki_shfl_after_half_exit{}, out);
  const std::string what = failure(b);
  INFO(what);
  CHECK_THAT(what, ContainsSubstring("emulated_device.cpp:" + std::to_string(ki_shfl_after_half_exit::line)));
  CHECK_THAT(what, ContainsSubstring("items 4-7 exited"));
  CHECK(what.find("intrinsics.hpp") == std::string::npos);
}

TEST_CASE("emulated GPU: a lane that the mask names and that waits elsewhere: the block cannot finish", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, waits_elsewhere{}, out);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("cannot finish"));
  CHECK_THAT(what, ContainsSubstring("emulated_device.cpp:" + std::to_string(waits_elsewhere::barrier_line)));
  CHECK_THAT(what, ContainsSubstring("__shfl_sync emulated_device.cpp:" + std::to_string(waits_elsewhere::shfl_line)));
}

TEST_CASE("emulated GPU: lanes of one rendezvous at different intrinsics are reported", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, different_intrinsics{}, out);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("different communication functions"));
  CHECK_THAT(what, ContainsSubstring("__shfl_sync"));
  CHECK_THAT(what, ContainsSubstring("__ballot_sync"));
}

TEST_CASE("emulated GPU: a thread spinning on an atomic is reported, not hung", "[emulated]") {
  ki::cuda::backend b;
  auto flag = ki::zeros<int>(b, 2);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 2}, spins{}, flag);
  const std::string what = failure(b);
  CHECK_THAT(what, ContainsSubstring("emulated_device.cpp:" + std::to_string(spins::line)));
}

TEST_CASE("emulated GPU: the error is sticky until the device is reset, and says what the oracle found", "[emulated]") {
  ki::cuda::backend b;
  auto out = ki::zeros<i64>(b, 8);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, lane_exits{}, out, true);
  CHECK_THROWS_AS(ki::synchronize(b), ki::cuda::error);
  // Every later call fails the same way: a launch, a copy, an allocation.
  CHECK_THROWS_WITH(ki::zeros<int>(b, 4), ContainsSubstring("cudaErrorLaunchFailure"));
  CHECK_THROWS_AS(ki::synchronize(b), ki::cuda::error);
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  ki::launch(b, {.numgroups = 1, .workgroupsize = 8}, lane_exits{}, out, false);
  CHECK_NOTHROW(ki::synchronize(b));
  CHECK(ki::to_host(b, out) == std::vector<i64>(8, 0));
}

TEST_CASE("emulated GPU: a bad launch configuration is the thread's last error, and not sticky", "[emulated]") {
  // kernel<<<1, 2048>>>(...) through the launch seam: more threads than a block may have.
  ki::emulated::launch(&noop_kernel, dim3{1}, dim3{2048}, 0, nullptr, 1);
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  CHECK(cudaGetLastError() == cudaSuccess);                              // read and cleared
  ki::emulated::launch(&noop_kernel, dim3{0}, dim3{32}, 0, nullptr, 1);  // an empty grid
  CHECK(cudaGetLastError() == cudaErrorInvalidConfiguration);
  ki::emulated::launch(&noop_kernel, dim3{2}, dim3{32}, 0, nullptr, 1);
  CHECK(cudaGetLastError() == cudaSuccess);
  CHECK(cudaDeviceSynchronize() == cudaSuccess);
}

TEST_CASE("emulated GPU: streams run in order, asynchronously, and events order them", "[emulated]") {
  cudaStream_t s1 = nullptr, s2 = nullptr;
  REQUIRE(cudaStreamCreateWithPriority(&s1, cudaStreamNonBlocking, 0) == cudaSuccess);
  REQUIRE(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, -1) == cudaSuccess);
  int* d = nullptr;
  REQUIRE(cudaMalloc(&d, 4 * sizeof(int)) == cudaSuccess);
  std::vector<int> a{1, 2, 3, 4}, back(4, 0);
  REQUIRE(cudaMemcpyAsync(d, a.data(), 16, cudaMemcpyHostToDevice, s1) == cudaSuccess);
  cudaEvent_t e = nullptr;
  REQUIRE(cudaEventCreateWithFlags(&e, cudaEventDisableTiming) == cudaSuccess);
  REQUIRE(cudaEventRecord(e, s1) == cudaSuccess);
  REQUIRE(cudaStreamWaitEvent(s2, e, 0) == cudaSuccess);
  REQUIRE(cudaMemcpyAsync(back.data(), d, 16, cudaMemcpyDeviceToHost, s2) == cudaSuccess);
  REQUIRE(cudaStreamSynchronize(s2) == cudaSuccess);
  CHECK(back == a);
  cudaPointerAttributes attr{};
  REQUIRE(cudaPointerGetAttributes(&attr, d + 1) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeDevice);
  REQUIRE(cudaPointerGetAttributes(&attr, back.data()) == cudaSuccess);
  CHECK(attr.type == cudaMemoryTypeUnregistered);
  CHECK(cudaEventDestroy(e) == cudaSuccess);
  CHECK(cudaFree(d) == cudaSuccess);
  CHECK(cudaStreamDestroy(s1) == cudaSuccess);
  CHECK(cudaStreamDestroy(s2) == cudaSuccess);
}

// Run by CTest with KI_EMULATED_GPU_DEVICES=0 (a hidden test: not part of a plain run).
TEST_CASE("emulated GPU: a bad KI_EMULATED_GPU_DEVICES is an error naming it", "[.bad-devices]") {
  const char* v = std::getenv("KI_EMULATED_GPU_DEVICES");
  REQUIRE(v != nullptr);
  REQUIRE(std::string(v) == "0");
  int n = -1;
  CHECK_THROWS_MATCHES(cudaGetDeviceCount(&n), std::invalid_argument,
                       Catch::Matchers::MessageMatches(ContainsSubstring("KI_EMULATED_GPU_DEVICES = '0'") &&
                                                       ContainsSubstring("between 1 and 16")));
  const ki::cuda::backend b;
  CHECK_THROWS_AS(ki::zeros<int>(b, 4), std::invalid_argument);
}
