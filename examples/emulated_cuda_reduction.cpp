// A plain CUDA kernel on the oracle (ki/emulated/cuda.hpp, docs/offload.md "Plain CUDA
// kernels"): the classic shared-memory block reduction, written as CUDA, compiled by g++ and
// launched with KI_CUDA_LAUNCH in place of <<<...>>>. It runs twice: as written, and with the
// __syncthreads of its loop missing, the mistake of many a first reduction. On a GPU the broken
// one often gives the right sum (the warps happen to run in step); on the oracle, whose threads
// run one at a time from one sync point to the next, thread 0 reads its partners before they
// have added theirs, and the sum comes out wrong. Built with ki::reference_checked as well
// (ki_example_cuda_reduction_emulated_checked), the oracle names the race: both accesses, with
// their lines.
#include <cstdio>
#include <string>
#include <vector>

#include <ki/emulated/cuda.hpp>

__global__ void block_sum(const float* in, float* out, int n, bool synced) {
  __shared__ float partial[256];
  const unsigned t = threadIdx.x, i = blockIdx.x * blockDim.x + t;
  partial[t] = i < static_cast<unsigned>(n) ? in[i] : 0.0f;
  __syncthreads();
  for (unsigned d = blockDim.x / 2; d > 0; d /= 2) {
    if (t < d) partial[t] += partial[t + d];  // reads the partner's sum: it must be complete
    if (synced) __syncthreads();              // the one the broken version leaves out
  }
  if (t == 0) out[blockIdx.x] = partial[0];
}

namespace {
/// The sum of the blocks' sums, or the runtime's error.
bool run(bool synced, const std::vector<float>& host, float expected) {
  const int n = static_cast<int>(host.size()), threads = 256, blocks = (n + threads - 1) / threads;
  float *in = nullptr, *out = nullptr;
  cudaMalloc(&in, host.size() * sizeof(float));
  cudaMalloc(&out, blocks * sizeof(float));
  cudaMemcpy(in, host.data(), host.size() * sizeof(float), cudaMemcpyHostToDevice);
  KI_CUDA_LAUNCH(block_sum, blocks, threads)(in, out, n, synced);
  std::vector<float> sums(static_cast<std::size_t>(blocks));
  const cudaError_t e = cudaMemcpy(sums.data(), out, sums.size() * sizeof(float), cudaMemcpyDeviceToHost);
  const char* what = synced ? "with __syncthreads" : "without it";
  if (e != cudaSuccess) {
    const std::string message = cudaGetErrorString(e);
    std::printf("%-20s the oracle stopped the kernel: %s\n", what, message.c_str());
    cudaDeviceReset();
    return !synced && message.find("race") != std::string::npos;
  }
  float total = 0;
  for (float s : sums) total += s;
  std::printf("%-20s sum %.0f (expected %.0f) -> %s\n", what, total, expected, total == expected ? "OK" : "WRONG");
  cudaFree(in);
  cudaFree(out);
  return synced ? total == expected : total != expected;  // the broken one must be caught
}
}  // namespace

int main() {
  std::vector<float> host(1000);
  for (std::size_t k = 0; k < host.size(); ++k) host[k] = static_cast<float>(k % 7);
  float expected = 0;
  for (float v : host) expected += v;
  const bool ok = run(true, host, expected) && run(false, host, expected);
  std::printf("%s\n", ok ? "the oracle runs plain CUDA, and catches the missing __syncthreads" : "FAILED");
  return ok ? 0 : 1;
}
