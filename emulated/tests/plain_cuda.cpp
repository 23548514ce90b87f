// Plain CUDA kernels on the emulated GPU (ki/emulated/cuda.hpp): what a block's __shared__
// variables hold before it writes them. By default the poison word 0xFFBADBAD, every block
// afresh; with KI_REFERENCE_LOCAL_MEMORY=leftovers (CTest runs this file both ways) what the
// previous block left, as a GPU's multiprocessor leaves shared memory to the next block. The
// same for ki::localmemory in a KI kernel's GPU pass.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include <catch2/catch_test_macros.hpp>

#include <ki/emulated/cuda.hpp>
#include <ki/ki.hpp>

namespace {
constexpr std::uint32_t poison = 0xFFBADBADu;
constexpr unsigned threads = 64, blocks = 4;

bool leftovers() {
  const char* v = std::getenv("KI_REFERENCE_LOCAL_MEMORY");
  return v != nullptr && std::string(v) == "leftovers";
}

/// What block b, thread t reads: the poison, or (leftovers) what block b - 1 wrote. Block 0 is
/// not checked under leftovers (whatever an earlier kernel of this program left, or poison).
void check(const std::vector<std::uint32_t>& h) {
  for (unsigned b = leftovers() ? 1 : 0; b < blocks; ++b)
    for (unsigned t = 0; t < threads; ++t) {
      INFO("block " << b << ", thread " << t);
      CHECK(h[b * threads + t] == (leftovers() ? 1000 * b + t : poison));
    }
}
}  // namespace

/// Reads its slot of a __shared__ array before writing it, then writes 1000 (block + 1) + thread.
__global__ void read_then_write(std::uint32_t* out) {
  __shared__ std::uint32_t slot[threads];
  const unsigned t = threadIdx.x;
  out[blockIdx.x * threads + t] = slot[t];
  slot[t] = 1000 * (blockIdx.x + 1) + t;
}

TEST_CASE("plain CUDA: a block's __shared__ array starts as poison, or as the previous block's leftovers",
          "[emulated][shared]") {
  std::uint32_t* out = nullptr;
  REQUIRE(cudaMalloc(&out, blocks * threads * sizeof(std::uint32_t)) == cudaSuccess);
  KI_CUDA_LAUNCH(read_then_write, blocks, threads)(out);
  std::vector<std::uint32_t> h(blocks * threads);
  REQUIRE(cudaMemcpy(h.data(), out, h.size() * sizeof h[0], cudaMemcpyDeviceToHost) == cudaSuccess);
  check(h);
  REQUIRE(cudaFree(out) == cudaSuccess);
}

namespace {
/// The same as a KI kernel: its ki::localmemory in the GPU pass (KI_GPU_SHARED).
struct read_then_write_local {
  KI_DEVICE void operator()(ki::span<std::uint32_t> out) const {
    auto slot = ki::localmemory<std::uint32_t, threads>([] {});
    const std::int64_t t = ki::get_local_id().x, b = ki::get_group_id().x;
    out[b * threads + t] = slot[t];
    slot[t] = static_cast<std::uint32_t>(1000 * (b + 1) + t);
  }
};
}  // namespace

TEST_CASE("KI on the emulated GPU: localmemory starts as poison, or as the previous block's leftovers",
          "[emulated][shared]") {
  const ki::cuda::backend b;
  auto out = ki::zeros<std::uint32_t>(b, blocks * threads);
  ki::launch(b, {.numgroups = blocks, .workgroupsize = threads}, read_then_write_local{}, out);
  check(ki::to_host(b, out));
}
