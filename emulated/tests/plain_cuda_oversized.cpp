// Plain CUDA kernels on the emulated GPU: __shared__ variables larger than the device's shared
// memory (48 KiB on the emulated CUDA device) fail the launch with an error naming both sizes,
// and the device is usable again after cudaDeviceReset. (A binary of its own: the __shared__
// variables are the whole program's.)
#include <cstdint>
#include <string>

#include <catch2/catch_test_macros.hpp>
#include <catch2/matchers/catch_matchers_string.hpp>

#include <ki/emulated/cuda.hpp>

__global__ void too_much_shared(std::int32_t* out) {
  __shared__ std::int32_t big[16 * 1024 + 1];  // 65540 bytes
  big[threadIdx.x] = 1;
  __syncthreads();
  out[threadIdx.x] = big[threadIdx.x];
}

TEST_CASE("plain CUDA: __shared__ variables beyond the device's shared memory fail the launch, naming both sizes",
          "[emulated][shared]") {
  using Catch::Matchers::ContainsSubstring;
  std::int32_t* out = nullptr;
  REQUIRE(cudaMalloc(&out, 32 * sizeof(std::int32_t)) == cudaSuccess);
  KI_CUDA_LAUNCH(too_much_shared, 1, 32)(out);
  const cudaError_t e = cudaDeviceSynchronize();
  REQUIRE(e != cudaSuccess);
  const std::string m = cudaGetErrorString(e);
  CHECK_THAT(m, ContainsSubstring("65540 bytes") && ContainsSubstring("49152 bytes"));
  REQUIRE(cudaDeviceReset() == cudaSuccess);
  std::int32_t* again = nullptr;
  CHECK(cudaMalloc(&again, 4) == cudaSuccess);
  CHECK(cudaFree(again) == cudaSuccess);
}
