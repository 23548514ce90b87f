// Plain CUDA kernels on the oracle (docs/offload.md, "Plain CUDA kernels"): a __global__
// function written with threadIdx / blockIdx / blockDim / gridDim, __syncthreads, the warp
// intrinsics (__shfl*_sync, __ballot_sync, __any_sync, __all_sync, __syncwarp), atomicAdd and
// friends and __shared__ variables, compiled by the host compiler against this one header (CMake
// target ki::emulated_cuda) and launched with KI_CUDA_LAUNCH(kernel, grid, block)(args...) in
// place of kernel<<<grid, block>>>(args...). Each thread is a work-item of the oracle: a divergent
// __syncthreads, a bad warp mask, a lane that never arrives, a spin-wait and (with
// ki::reference_checked) a data race are reported with the block, the thread and the lines, as
// CUDA's sticky error (cudaGetErrorString names what the oracle found).
//
// The subset: the launch geometry built-ins; __syncthreads; __syncwarp, __shfl_sync,
// __shfl_up_sync, __shfl_down_sync, __shfl_xor_sync, __ballot_sync, __any_sync, __all_sync (with
// their width argument); atomicAdd, atomicSub, atomicExch, atomicMin, atomicMax, atomicAnd,
// atomicOr, atomicXor, atomicCAS on int, unsigned, unsigned long long (and float / double for
// add and exchange); __threadfence, __threadfence_block; static __shared__ variables and arrays;
// device printf; the runtime calls of ki/emulated/cuda_runtime.hpp (cudaMalloc, cudaMemcpy,
// streams, events, cudaDeviceSynchronize, cudaGetLastError, ...). Not: dynamic shared memory
// (extern __shared__), textures, cooperative groups, __activemask's convergence, clock().
//
// __shared__ variables live in one section of the program (ki_cuda_shared), which the runtime
// gives every block as its local memory: poisoned at the block's start (KI_REFERENCE_LOCAL_MEMORY=leftovers:
// what the previous block left), counted against the
// device's 48 KiB, its accesses checked in checked-access mode. There being one copy, a program
// with such variables runs its emulated launches one block at a time.
#pragma once
#include <ki/macros.hpp>
#if KI_GPU_EMULATION != 1
#error "ki/emulated/cuda.hpp: plain CUDA kernels on the emulated GPU need KI_GPU_EMULATION=1 (link ki::emulated_cuda)"
#endif
#include <cstdint>
#include <string>
#include <utility>

#include <ki/atomic.hpp>
#include <ki/cuda.hpp>
#include <ki/emulated/runtime.hpp>

#define __shared__ static __attribute__((section("ki_cuda_shared")))

namespace ki::emulated::cuda_device {
template <class T>
T cas(T* p, T compare, T value, const source_location& where) {
  T expected = compare;
  (void)ki::atomic_compare_exchange(p, expected, value, memory_order::relaxed, where);
  return expected;  // the old value either way
}

/// kernel<<<grid, block>>>: launches on the calling thread's stream 0 under the kernel's name.
template <class K>
struct launcher {
  K kernel;
  dim3 grid, block;
  const char* name;
  template <class... A>
  void operator()(A&&... args) const {
    ki::emulated::push_launch_name(name);
    ki::emulated::launch(kernel, grid, block, 0, nullptr, std::forward<A>(args)...);
    ki::emulated::pop_launch_name();
  }
};
}  // namespace ki::emulated::cuda_device

#define atomicAdd(p, v) ::ki::atomic_fetch_add((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicSub(p, v) ::ki::atomic_fetch_sub((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicExch(p, v) ::ki::atomic_exchange((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicMin(p, v) ::ki::atomic_fetch_min((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicMax(p, v) ::ki::atomic_fetch_max((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicAnd(p, v) ::ki::atomic_fetch_and((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicOr(p, v) ::ki::atomic_fetch_or((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicXor(p, v) ::ki::atomic_fetch_xor((p), (v), ::ki::memory_order::relaxed, ::ki::source_location::current())
#define atomicCAS(p, c, v) ::ki::emulated::cuda_device::cas((p), (c), (v), ::ki::source_location::current())
#define __any_sync(mask, pred) (__ballot_sync((mask), (pred)) != 0)
#define __all_sync(mask, pred) (__ballot_sync((mask), (pred)) == (mask))
inline void __threadfence() { ki::atomic_thread_fence(ki::memory_order::seq_cst); }
inline void __threadfence_block() { ki::atomic_thread_fence(ki::memory_order::seq_cst); }

/// In place of kernel<<<grid, block>>>(args...): KI_CUDA_LAUNCH(kernel, grid, block)(args...).
#define KI_CUDA_LAUNCH(kernel, grid, block) \
  (::ki::emulated::cuda_device::launcher<decltype(&(kernel))>{&(kernel), dim3(grid), dim3(block), #kernel})
