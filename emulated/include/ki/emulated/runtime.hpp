// The emulated GPU's runtime (docs/offload.md, "The emulated GPU"): devices, memory, streams,
// events and launches of a CUDA- or HIP-like runtime, on the host, on top of the reference
// backend's oracle. ki/emulated/cuda_runtime.hpp and hip_runtime.hpp give it the runtime API's
// names (cudaMalloc, hipStreamSynchronize, ...), so that ki's offload backends (offload/common)
// compile unchanged for a host compiler with KI_GPU_EMULATION.
//
//   devices  KI_EMULATED_GPU_DEVICES of them (default 1), each with the dialect's profile: an
//            H100-like one for CUDA (warps of 32, 1024 threads per block, 48 KiB of shared
//            memory, 132 multiprocessors), an MI250-like one for HIP (wavefronts of 64, 64 KiB);
//   memory   host memory, tracked (device, managed, pinned and registered ranges) so that pointer
//            attributes answer as the GPU's runtime does;
//   streams  in-order queues, each run by a worker thread of its own, concurrently with the
//            host; events are positions in a stream;
//   launches the entry's threads are work-items of a reference-backend launch whose profile
//            has the dialect (profile::gpu_dialect): the GPU pass runs, checked by the oracle;
//   errors   CUDA's model: a bad call returns its error (and sets the thread's last error); a
//            failed kernel is a sticky error of its device that every later call returns until
//            the device is reset, and its message is the oracle's diagnostic (block, thread,
//            line).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <utility>

#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <ki/detail/gpu/emulated.hpp>  // dim3
#include <ki/detail/public_end.hpp>

namespace ki::emulated {

/// The runtime's error codes (CUDA's numbers; the HIP names map onto them).
enum class status : int {
  success = 0,
  invalid_value = 1,
  memory_allocation = 2,
  invalid_configuration = 9,
  no_device = 100,
  invalid_device = 101,
  invalid_resource_handle = 400,
  not_ready = 600,
  illegal_address = 700,
  launch_out_of_resources = 701,
  host_memory_already_registered = 712,
  host_memory_not_registered = 713,
  launch_failure = 719,
};
const char* status_name(status s);
const char* status_text(status s);

/// What a device looks like (the runtime's device properties).
struct device_info {
  std::string name;
  int dialect = 1;  ///< 1 CUDA, 2 HIP
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_dim[3] = {1024, 1024, 64};
  int max_grid_size[3] = {2147483647, 65535, 65535};
  std::size_t shared_mem_per_block = 48 * 1024;
  std::size_t total_global_mem = std::size_t{80} << 30;
  int multiprocessor_count = 132;
  int major = 9, minor = 0;
  int least_priority = 0, greatest_priority = -5;
};

/// Kinds of memory the runtime knows (pointer attributes).
enum class memory_kind { unregistered, host, device, managed };

struct stream_impl;
struct event_impl;
using stream = stream_impl*;
using event = event_impl*;

/// The runtime of one dialect (1 CUDA, 2 HIP): every call returns a status, as the GPU's does.
/// Thread-safe; the calling thread has a current device and a last error.
status device_count(int dialect, int* n);
status get_device(int* d);
status set_device(int dialect, int d);
status properties(int dialect, int d, device_info* out);
status last_error(bool clear);
status record(status s);  ///< sets the thread's last error (not success) and returns s

status allocate(int dialect, void** p, std::size_t bytes, memory_kind kind);
status free_memory(void* p, memory_kind expected);
status register_host(void* p, std::size_t bytes);
status unregister_host(void* p);
status pointer_kind(const void* p, memory_kind* kind, int* device);

status stream_create(int dialect, stream* s, int priority);
status stream_destroy(stream s);
status stream_synchronize(int dialect, stream s);
status stream_query(int dialect, stream s);
status stream_wait_event(int dialect, stream s, event e);
status device_synchronize(int dialect);
status device_reset(int dialect);
status event_create(event* e);
status event_destroy(event e);
status event_record(int dialect, event e, stream s);
status event_synchronize(event e);
status event_query(event e);
status memcpy_async(int dialect, void* dst, const void* src, std::size_t bytes, stream s);
status memset_async(int dialect, void* dst, int value, std::size_t bytes, stream s);

/// The oracle's diagnostic of the kernel that failed on the calling thread's device ("" if none).
std::string sticky_message();

/// NVTX-like names of the launches being made on this thread (the oracle's reports name them).
void push_launch_name(const char* name);
void pop_launch_name();

namespace detail {
/// One queued launch: runs `run(ctx)` in every thread of the grid, on the oracle.
struct launch_job {
  dim3 grid, block;
  std::size_t shared_bytes = 0;  ///< dynamic shared memory
  void (*run)(const void* ctx) = nullptr;
  std::shared_ptr<const void> ctx;
  std::string name;
};
status enqueue_launch(int dialect, stream s, launch_job job);

template <class Fn, class Tuple>
struct bound_entry {
  Fn fn;
  Tuple args;
  static void run(const void* self) {
    const auto* b = static_cast<const bound_entry*>(self);
    std::apply(b->fn, b->args);
  }
};
}  // namespace detail

/// kernel<<<grid, block, shared, s>>>(args...): the arguments converted to the entry's
/// parameters (as a launch copies them), queued on s, with `shared` bytes of dynamic shared
/// memory. A bad configuration is the thread's last error, as after a launch on the GPU.
template <class... P, class... A>
void launch(void (*kernel)(P...), dim3 grid, dim3 block, std::size_t shared, stream s, A&&... args) {
  using B = detail::bound_entry<void (*)(P...), std::tuple<P...>>;
  auto b = std::make_shared<B>(B{kernel, std::tuple<P...>(static_cast<P>(std::forward<A>(args))...)});
  (void)detail::enqueue_launch(KI_GPU_EMULATION, s, {grid, block, shared, &B::run, std::move(b), {}});
}

}  // namespace ki::emulated
