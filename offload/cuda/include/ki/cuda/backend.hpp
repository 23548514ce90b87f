// ki::cuda::backend: the minimal CUDA mapping (issue "Foundation", point 7). Compiled by nvcc.
//
// Enough to run the examples on an NVIDIA GPU from the same kernel source as the reference
// backend: index queries, barrier, localmemory (static __shared__ per call site), allocation,
// copies, launch and synchronize. The full offload backend (streams, events, sub-group
// functions, occupancy-based launch_configuration, HIP) is its own issue and will move the
// shared parts to offload/common.
#pragma once
#if !defined(__CUDACC__)
#error "ki/cuda/backend.hpp must be compiled by nvcc (it launches kernels)"
#endif
#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <variant>
#include <stdexcept>
#include <string>

#include <ki/backend.hpp>
#include <ki/launch.hpp>

namespace ki::cuda {

/// The active device is CUDA's current device of the calling thread; the calling thread's
/// queue is its per-thread default stream (cudaStreamPerThread) of that device.
struct backend {};

/// A recorded cudaEvent_t (destroyed with the last copy of the handle).
struct event {
  std::shared_ptr<CUevent_st> e;
};

namespace detail {
/// Every CUDA error becomes an exception naming the call and the error.
inline void check(cudaError_t e, const char* call) {
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("ki::cuda: ") + call + " failed: " + cudaGetErrorName(e) + " (" +
                             cudaGetErrorString(e) + ")");
}
inline int attribute(cudaDeviceAttr a, const char* what) {
  int dev = 0, v = 0;
  check(cudaGetDevice(&dev), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&v, a, dev), what);
  return v;
}
template <class F, class... A>
__global__ void entry(F f, A... args) {
  f(args...);
}
}  // namespace detail

/// Whether a CUDA device can be used; otherwise `why` says why (e.g. cudaErrorInsufficientDriver).
inline bool available(std::string* why = nullptr) {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess || n == 0) {
    if (why) *why = e != cudaSuccess ? std::string(cudaGetErrorName(e)) + ": " + cudaGetErrorString(e) : "no CUDA device";
    return false;
  }
  return true;
}

}  // namespace ki::cuda

template <>
struct ki::backend_traits<ki::cuda::backend> {
  using B = ki::cuda::backend;
  static constexpr const char* name = "cuda";

  // Devices
  static int ndevices(const B&) {
    int n = 0;
    return cudaGetDeviceCount(&n) == cudaSuccess ? n : 0;
  }
  static int device(const B&) {
    int d = 0;
    cuda::detail::check(cudaGetDevice(&d), "cudaGetDevice");
    return d;
  }
  static void set_device(const B&, int id) { cuda::detail::check(cudaSetDevice(id), "cudaSetDevice"); }
  static std::optional<bool> functional(const B&) { return cuda::available(); }
  static void versioninfo(std::ostream& os, const B& b) {
    int driver = 0, runtime = 0;
    (void)cudaDriverGetVersion(&driver);
    (void)cudaRuntimeGetVersion(&runtime);
    os << "backend cuda: runtime " << runtime / 1000 << "." << runtime % 1000 / 10 << ", driver " << driver / 1000
       << "." << driver % 1000 / 10 << "\n";
    std::string why;
    if (!cuda::available(&why)) {
      os << "  no device: " << why << "\n";
      return;
    }
    cudaDeviceProp p{};
    cuda::detail::check(cudaGetDeviceProperties(&p, device(b)), "cudaGetDeviceProperties");
    os << "  device " << device(b) << " of " << ndevices(b) << ": " << p.name << ", compute capability " << p.major
       << "." << p.minor << ", " << p.multiProcessorCount << " SMs, " << (p.totalGlobalMem >> 20) << " MiB\n";
  }
  static std::int64_t multiprocessor_count(const B&) {
    return cuda::detail::attribute(cudaDevAttrMultiProcessorCount, "cudaDeviceGetAttribute(MultiProcessorCount)");
  }
  // Memory
  static void* allocate(const B&, std::size_t bytes, bool unified) {
    void* p = nullptr;
    if (bytes == 0) bytes = 1;  // a unique, freeable pointer
    if (unified) cuda::detail::check(cudaMallocManaged(&p, bytes), "cudaMallocManaged");
    else cuda::detail::check(cudaMalloc(&p, bytes), "cudaMalloc");
    return p;
  }
  static void free(const B&, int, void* p) noexcept { cudaFree(p); }  // synchronizes the device
  // cudaMemcpyAsync from pageable host memory has read the source when it returns, as the
  // backend contract requires.
  static void copy(const B&, void* dst, const void* src, std::size_t bytes, copy_kind) {
    cuda::detail::check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, cudaStreamPerThread), "cudaMemcpyAsync");
  }
  static std::optional<std::monostate> pagelock(const B&, const void* p, std::size_t bytes) {
    const cudaError_t e = cudaHostRegister(const_cast<void*>(p), bytes, cudaHostRegisterDefault);
    if (e != cudaErrorHostMemoryAlreadyRegistered) cuda::detail::check(e, "cudaHostRegister");
    (void)cudaGetLastError();
    return std::monostate{};
  }
  // Queues
  static void synchronize(const B&) {
    cuda::detail::check(cudaStreamSynchronize(cudaStreamPerThread), "cudaStreamSynchronize");
    cuda::detail::check(cudaGetLastError(), "kernel launch");
  }
  using event = cuda::event;
  static event record_event(const B&) {
    cudaEvent_t e = nullptr;
    cuda::detail::check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    event r{std::shared_ptr<CUevent_st>(e, [](cudaEvent_t x) { cudaEventDestroy(x); })};
    cuda::detail::check(cudaEventRecord(e, cudaStreamPerThread), "cudaEventRecord");
    return r;
  }
  static void wait_event(const B&, const event& e) {
    cuda::detail::check(cudaStreamWaitEvent(cudaStreamPerThread, e.e.get(), 0), "cudaStreamWaitEvent");
  }
  /// Accepted; the per-thread default stream has one priority (priority streams: offload issue).
  static void set_priority(const B&, priority) {}
  // Queries
  static bool supports_unified(const B&) { return true; }
  static bool supports_float64(const B&) { return true; }
  // The sub-group functions are not mapped to warps yet (the offload issue): not supported.
  static bool supports_subgroups(const B&) { return false; }
  static bool supports_linear_subgroups(const B&) { return false; }
  static bool supports_independent_subgroups(const B&) { return false; }
  static bool supports_partitionable_subgroups(const B&) { return false; }
  template <class T>
  static bool supports_shuffle(const B&) { return false; }
  static bool supports_atomics(const B&) { return true; }
  static bool supports_atomics64(const B&) { return true; }
  static std::int64_t max_work_group_size(const B&) {
    return cuda::detail::attribute(cudaDevAttrMaxThreadsPerBlock, "cudaDeviceGetAttribute(MaxThreadsPerBlock)");
  }
  static std::array<std::int64_t, 3> max_work_group_dims(const B&) {
    return {cuda::detail::attribute(cudaDevAttrMaxBlockDimX, "cudaDeviceGetAttribute(MaxBlockDimX)"),
            cuda::detail::attribute(cudaDevAttrMaxBlockDimY, "cudaDeviceGetAttribute(MaxBlockDimY)"),
            cuda::detail::attribute(cudaDevAttrMaxBlockDimZ, "cudaDeviceGetAttribute(MaxBlockDimZ)")};
  }
  static std::array<std::int64_t, 3> max_num_groups(const B&) {
    return {cuda::detail::attribute(cudaDevAttrMaxGridDimX, "cudaDeviceGetAttribute(MaxGridDimX)"),
            cuda::detail::attribute(cudaDevAttrMaxGridDimY, "cudaDeviceGetAttribute(MaxGridDimY)"),
            cuda::detail::attribute(cudaDevAttrMaxGridDimZ, "cudaDeviceGetAttribute(MaxGridDimZ)")};
  }
  static std::int64_t sub_group_size(const B&) {
    return cuda::detail::attribute(cudaDevAttrWarpSize, "cudaDeviceGetAttribute(WarpSize)");
  }
  static void check_compile_options(const B&, const kwargs& o) {
    if (!o.empty()) throw std::invalid_argument("ki::cuda: unknown compiler option '" + o.front().name + "'");
  }
  template <class F>
  static std::int64_t kernel_max_work_group_size(const kernel<B, F>& k) {
    return max_work_group_size(k.backend);  // per-kernel limits come with the offload backend
  }
  template <class F>
  static std::int64_t launch_configuration(const kernel<B, F>&, std::optional<std::int64_t>, std::int64_t bound) {
    return bound < 256 ? bound : 256;
  }
  template <class F, class... A>
  static void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
                     const kwargs& o, A... args) {
    if (!o.empty()) throw std::invalid_argument("ki::cuda: unknown launch option '" + o.front().name + "'");
    const auto maxg = max_num_groups(k.backend);
    for (int i = 0; i < 3; ++i)
      if (groups[i] > maxg[i])
        throw std::invalid_argument("ki::cuda: launch: " + std::to_string(groups[i]) + " work-groups in dimension " +
                                    std::to_string(i) + " exceed max_num_groups[" + std::to_string(i) +
                                    "] = " + std::to_string(maxg[i]));
    const dim3 grid{unsigned(groups[0]), unsigned(groups[1]), unsigned(groups[2])};
    const dim3 block{unsigned(items[0]), unsigned(items[1]), unsigned(items[2])};
    cuda::detail::entry<F, A...><<<grid, block, 0, cudaStreamPerThread>>>(k.f, args...);
    cuda::detail::check(cudaGetLastError(), "kernel launch");
  }
};
