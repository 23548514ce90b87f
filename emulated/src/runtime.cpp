// The emulated GPU's runtime (ki/emulated/runtime.hpp): devices, memory, streams, events and
// launches on the reference backend's oracle.
#include <ki/emulated/runtime.hpp>

#include <algorithm>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <thread>
#include <vector>

#include <ki/cpu/checked_support.hpp>
#include <ki/ki.hpp>
#include <ki/reference.hpp>

namespace ki::emulated {

const char* status_name(status s) {
  switch (s) {
    case status::success: return "cudaSuccess";
    case status::invalid_value: return "cudaErrorInvalidValue";
    case status::memory_allocation: return "cudaErrorMemoryAllocation";
    case status::invalid_configuration: return "cudaErrorInvalidConfiguration";
    case status::no_device: return "cudaErrorNoDevice";
    case status::invalid_device: return "cudaErrorInvalidDevice";
    case status::invalid_resource_handle: return "cudaErrorInvalidResourceHandle";
    case status::not_ready: return "cudaErrorNotReady";
    case status::illegal_address: return "cudaErrorIllegalAddress";
    case status::launch_out_of_resources: return "cudaErrorLaunchOutOfResources";
    case status::host_memory_already_registered: return "cudaErrorHostMemoryAlreadyRegistered";
    case status::host_memory_not_registered: return "cudaErrorHostMemoryNotRegistered";
    case status::launch_failure: return "cudaErrorLaunchFailure";
  }
  return "cudaErrorUnknown";
}

const char* status_text(status s) {
  switch (s) {
    case status::success: return "no error";
    case status::invalid_value: return "invalid argument";
    case status::memory_allocation: return "out of memory";
    case status::invalid_configuration: return "invalid configuration argument";
    case status::no_device: return "no CUDA-capable device is detected";
    case status::invalid_device: return "invalid device ordinal";
    case status::invalid_resource_handle: return "invalid resource handle";
    case status::not_ready: return "device not ready";
    case status::illegal_address: return "an illegal memory access was encountered";
    case status::launch_out_of_resources: return "too many resources requested for launch";
    case status::host_memory_already_registered: return "part or all of the requested memory range is already mapped";
    case status::host_memory_not_registered: return "pointer does not correspond to a registered memory region";
    case status::launch_failure: return "unspecified launch failure";
  }
  return "unknown error";
}

namespace {

/// A device's sticky error: the first failed kernel's, kept until the device is reset.
struct sticky_error {
  status code = status::success;
  std::string message;
};

struct allocation {
  std::size_t bytes;
  memory_kind kind;
  int device;
  bool owned;  ///< allocated here (else registered host memory)
};

/// The whole runtime: one per process, per dialect's devices (devices are shared by dialects:
/// a program uses one).
struct runtime {
  std::mutex m;
  std::map<std::uintptr_t, allocation> memory;  // by start address
  std::vector<sticky_error> sticky;
  std::vector<stream> default_streams;
  std::vector<stream> all_streams;

  static runtime& get() {
    static runtime* r = new runtime;  // never destroyed: streams' workers may outlive statics
    return *r;
  }
};

int device_total() {
  static const int n = [] {
    const char* v = std::getenv("KI_EMULATED_GPU_DEVICES");
    if (v == nullptr || *v == '\0') return 1;
    char* end = nullptr;
    const long k = std::strtol(v, &end, 10);
    if (end == v || *end != '\0' || k < 1 || k > 16)
      throw std::invalid_argument(std::string("ki::emulated: KI_EMULATED_GPU_DEVICES = '") + v +
                                  "' must be a number of devices between 1 and 16");
    return static_cast<int>(k);
  }();
  return n;
}

thread_local int current_device = 0;
thread_local status last = status::success;
thread_local std::vector<std::string> launch_names;

device_info info_of(int dialect, int d) {
  device_info i;
  i.dialect = dialect;
  if (dialect == 2) {
    i.name = "ki emulated MI250X (oracle, device " + std::to_string(d) + ")";
    i.warp_size = 64;
    i.max_threads_per_block = 1024;
    i.max_threads_dim[2] = 1024;
    i.shared_mem_per_block = 64 * 1024;
    i.total_global_mem = std::size_t{64} << 30;
    i.multiprocessor_count = 110;
    i.major = 9, i.minor = 0;
    i.least_priority = 0, i.greatest_priority = -1;
  } else {
    i.name = "ki emulated H100 (oracle, device " + std::to_string(d) + ")";
  }
  return i;
}

}  // namespace
}  // namespace ki::emulated

// The program's plain CUDA __shared__ variables (ki/emulated/cuda.hpp puts them in this section;
// the linker defines its bounds where it exists, else they are null).
extern "C" {
extern char __start_ki_cuda_shared[] __attribute__((weak));
extern char __stop_ki_cuda_shared[] __attribute__((weak));
}

namespace ki::emulated {
namespace {

/// The reference backend that runs device d's launches.
ki::reference::backend backend_of(int dialect, int d) {
  const device_info i = info_of(dialect, d);
  ki::reference::backend b;
  ki::reference::profile& p = b.device;
  p = {};
  p.sub_group_width = i.warp_size;
  p.max_work_group_size = i.max_threads_per_block;
  p.max_work_group_dims = {i.max_threads_dim[0], i.max_threads_dim[1], i.max_threads_dim[2]};
  p.max_num_groups = {i.max_grid_size[0], i.max_grid_size[1], i.max_grid_size[2]};
  p.max_local_memory = i.shared_mem_per_block;
  p.linear_subgroups = true;
  p.unpromised_layout = ki::reference::layout::linear;
  p.independent_subgroups = true;
  p.partitionable_subgroups = dialect == 1;  // HIP's wavefronts run in lockstep
  p.multiprocessor_count = i.multiprocessor_count;
  p.name = dialect == 2 ? "emulated-hip" : "emulated-cuda";
  p.gpu_dialect = dialect;
  b.device_profiles.clear();
  b.queue = ki::reference::queue_mode::immediate;  // (on the stream's worker)
  if (static_cast<char*>(__start_ki_cuda_shared) != nullptr &&
      static_cast<char*>(__stop_ki_cuda_shared) > static_cast<char*>(__start_ki_cuda_shared)) {
    // One copy of the __shared__ variables: one block at a time.
    p.shared_section = __start_ki_cuda_shared;
    p.shared_section_bytes = static_cast<std::size_t>(static_cast<char*>(__stop_ki_cuda_shared) -
                                                      static_cast<char*>(__start_ki_cuda_shared));
    b.threads = 1;
  }
  return b;
}

sticky_error& sticky_of(runtime& r, int d) {
  if (r.sticky.size() < static_cast<std::size_t>(d) + 1) r.sticky.resize(static_cast<std::size_t>(d) + 1);
  return r.sticky[static_cast<std::size_t>(d)];
}

status sticky_status(int d) {
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  return sticky_of(r, d).code;
}

/// The code a kernel's failure gets (its message is the oracle's).
status code_of(const ki::kernel_error&) { return status::launch_failure; }

}  // namespace

/// A stream: an in-order queue of jobs, run by its worker thread.
struct stream_impl {
  int dialect;
  int device;
  int priority;
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::function<void()>> jobs;
  std::uint64_t queued = 0, done = 0;
  bool stopping = false;
  std::thread worker;

  stream_impl(int dl, int d, int p) : dialect(dl), device(d), priority(p) {
    worker = std::thread([this] { work(); });
  }
  ~stream_impl() {
    {
      std::lock_guard lock(m);
      stopping = true;
    }
    cv.notify_all();
    worker.join();
  }
  std::uint64_t push(std::function<void()> job) {
    std::lock_guard lock(m);
    jobs.push_back(std::move(job));
    cv.notify_all();
    return ++queued;
  }
  void wait_for(std::uint64_t position) {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return done >= position; });
  }
  void work() {
    std::unique_lock lock(m);
    for (;;) {
      cv.wait(lock, [&] { return stopping || !jobs.empty(); });
      if (jobs.empty()) return;  // stopping, and drained
      auto job = std::move(jobs.front());
      jobs.pop_front();
      lock.unlock();
      job();
      lock.lock();
      ++done;
      cv.notify_all();
    }
  }
};

struct event_impl {
  std::mutex m;
  stream s = nullptr;
  std::uint64_t position = 0;
};

status record(status s) {
  if (s != status::success) last = s;
  return s;
}

status last_error(bool clear) {
  const status s = last;
  if (clear) last = status::success;
  return s;
}

status device_count(int, int* n) {
  if (n == nullptr) return record(status::invalid_value);
  *n = device_total();
  return status::success;
}
status get_device(int* d) {
  if (d == nullptr) return record(status::invalid_value);
  *d = current_device;
  return status::success;
}
status set_device(int, int d) {
  if (d < 0 || d >= device_total()) return record(status::invalid_device);
  current_device = d;
  return status::success;
}
status properties(int dialect, int d, device_info* out) {
  if (out == nullptr) return record(status::invalid_value);
  if (d < 0 || d >= device_total()) return record(status::invalid_device);
  *out = info_of(dialect, d);
  return status::success;
}

status allocate(int, void** p, std::size_t bytes, memory_kind kind) {
  if (p == nullptr) return record(status::invalid_value);
  if (const status s = sticky_status(current_device); s != status::success) return record(s);
  const std::size_t size = (std::max<std::size_t>(bytes, 1) + 255) / 256 * 256;
  void* q = std::aligned_alloc(256, size);
  if (q == nullptr) return record(status::memory_allocation);
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  r.memory[reinterpret_cast<std::uintptr_t>(q)] = {bytes, kind, current_device, true};
  if (kind != memory_kind::host) ki::detail::cpu::checked_allocation_added(q, bytes);  // (checked-access mode)
  *p = q;
  return status::success;
}

status free_memory(void* p, memory_kind expected) {
  if (p == nullptr) return status::success;
  runtime& r = runtime::get();
  std::unique_lock lock(r.m);
  auto it = r.memory.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == r.memory.end() || !it->second.owned ||
      (expected == memory_kind::host) != (it->second.kind == memory_kind::host))
    return record(status::invalid_value);
  const bool device = it->second.kind != memory_kind::host;
  r.memory.erase(it);
  lock.unlock();
  if (device) ki::detail::cpu::checked_allocation_removed(p);
  std::free(p);
  return status::success;
}

status register_host(void* p, std::size_t bytes) {
  if (p == nullptr || bytes == 0) return record(status::invalid_value);
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  auto it = r.memory.upper_bound(a + bytes - 1);
  if (it != r.memory.begin()) {
    --it;
    if (it->first + std::max<std::size_t>(it->second.bytes, 1) > a)
      return record(status::host_memory_already_registered);
  }
  r.memory[a] = {bytes, memory_kind::host, current_device, false};
  return status::success;
}

status unregister_host(void* p) {
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  auto it = r.memory.find(reinterpret_cast<std::uintptr_t>(p));
  if (it == r.memory.end() || it->second.owned) return record(status::host_memory_not_registered);
  r.memory.erase(it);
  return status::success;
}

status pointer_kind(const void* p, memory_kind* kind, int* device) {
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  const auto a = reinterpret_cast<std::uintptr_t>(p);
  *kind = memory_kind::unregistered;
  *device = -1;
  auto it = r.memory.upper_bound(a);
  if (it != r.memory.begin()) {
    --it;
    if (a < it->first + std::max<std::size_t>(it->second.bytes, 1)) {
      *kind = it->second.kind;
      *device = it->second.device;
    }
  }
  return status::success;
}

namespace {
/// The device's legacy default stream (null handle).
stream resolve(int dialect, stream s) {
  if (s != nullptr) return s;
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  const int d = current_device;
  if (r.default_streams.size() < static_cast<std::size_t>(d) + 1)
    r.default_streams.resize(static_cast<std::size_t>(d) + 1, nullptr);
  stream& slot = r.default_streams[static_cast<std::size_t>(d)];
  if (slot == nullptr) slot = new stream_impl(dialect, d, 0);
  return slot;
}
}  // namespace

status stream_create(int dialect, stream* s, int priority) {
  if (s == nullptr) return record(status::invalid_value);
  const device_info i = info_of(dialect, current_device);
  priority = std::clamp(priority, i.greatest_priority, i.least_priority);
  *s = new stream_impl(dialect, current_device, priority);
  return status::success;
}
status stream_destroy(stream s) {
  if (s == nullptr) return record(status::invalid_resource_handle);
  delete s;  // drains its jobs first
  return status::success;
}
status stream_synchronize(int dialect, stream s) {
  s = resolve(dialect, s);
  std::uint64_t upto = 0;
  {
    std::lock_guard lock(s->m);
    upto = s->queued;
  }
  s->wait_for(upto);
  return record(sticky_status(s->device));
}
status stream_query(int dialect, stream s) {
  s = resolve(dialect, s);
  std::lock_guard lock(s->m);
  if (const status e = sticky_status(s->device); e != status::success) return record(e);
  return s->done == s->queued ? status::success : status::not_ready;
}
status stream_wait_event(int dialect, stream s, event e) {
  if (e == nullptr) return record(status::invalid_resource_handle);
  s = resolve(dialect, s);
  stream other = nullptr;
  std::uint64_t position = 0;
  {
    std::lock_guard lock(e->m);
    other = e->s, position = e->position;
  }
  if (other == nullptr || other == s) return status::success;
  s->push([other, position] { other->wait_for(position); });
  return status::success;
}
status device_synchronize(int dialect) {
  runtime& r = runtime::get();
  std::vector<stream> streams;
  {
    std::lock_guard lock(r.m);
    for (stream s : r.default_streams)
      if (s != nullptr && s->device == current_device) streams.push_back(s);
  }
  for (stream s : streams) (void)stream_synchronize(dialect, s);
  return record(sticky_status(current_device));
}
status device_reset(int) {
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  sticky_of(r, current_device) = {};
  return status::success;
}

status event_create(event* e) {
  if (e == nullptr) return record(status::invalid_value);
  *e = new event_impl;
  return status::success;
}
status event_destroy(event e) {
  if (e == nullptr) return record(status::invalid_resource_handle);
  delete e;
  return status::success;
}
status event_record(int dialect, event e, stream s) {
  if (e == nullptr) return record(status::invalid_resource_handle);
  s = resolve(dialect, s);
  std::uint64_t position = 0;
  {
    std::lock_guard lock(s->m);
    position = s->queued;
  }
  std::lock_guard lock(e->m);
  e->s = s, e->position = position;
  return status::success;
}
status event_synchronize(event e) {
  if (e == nullptr) return record(status::invalid_resource_handle);
  stream s = nullptr;
  std::uint64_t position = 0;
  {
    std::lock_guard lock(e->m);
    s = e->s, position = e->position;
  }
  if (s != nullptr) s->wait_for(position);
  return status::success;
}
status event_query(event e) {
  if (e == nullptr) return record(status::invalid_resource_handle);
  std::lock_guard lock(e->m);
  if (e->s == nullptr) return status::success;
  std::lock_guard slock(e->s->m);
  return e->s->done >= e->position ? status::success : status::not_ready;
}

status memcpy_async(int dialect, void* dst, const void* src, std::size_t bytes, stream s) {
  if (bytes == 0) return status::success;
  if (dst == nullptr || src == nullptr) return record(status::invalid_value);
  s = resolve(dialect, s);
  if (const status e = sticky_status(s->device); e != status::success) return record(e);
  memory_kind sk{}, dk{};
  int sd = 0, dd = 0;
  (void)pointer_kind(src, &sk, &sd);
  (void)pointer_kind(dst, &dk, &dd);
  if (sk == memory_kind::unregistered) {
    // From pageable memory the runtime stages the source before the call returns.
    auto staged = std::make_shared<std::vector<unsigned char>>(static_cast<const unsigned char*>(src),
                                                               static_cast<const unsigned char*>(src) + bytes);
    s->push([dst, staged] { std::memcpy(dst, staged->data(), staged->size()); });
  } else {
    s->push([dst, src, bytes] { std::memmove(dst, src, bytes); });
  }
  if (dk == memory_kind::unregistered) {
    // Into pageable memory the call returns once the copy is done.
    std::uint64_t upto = 0;
    {
      std::lock_guard lock(s->m);
      upto = s->queued;
    }
    s->wait_for(upto);
  }
  return status::success;
}

status memset_async(int dialect, void* dst, int value, std::size_t bytes, stream s) {
  if (bytes == 0) return status::success;
  if (dst == nullptr) return record(status::invalid_value);
  s = resolve(dialect, s);
  s->push([dst, value, bytes] { std::memset(dst, value, bytes); });
  return status::success;
}

void push_launch_name(const char* name) { launch_names.emplace_back(name != nullptr ? name : ""); }
void pop_launch_name() {
  if (!launch_names.empty()) launch_names.pop_back();
}

namespace detail {

namespace {
/// Every thread of the grid: a work-item of the reference launch.
struct grid_thread {
  void (*run)(const void*);
  const void* ctx;
  void operator()() const { run(ctx); }
};
}  // namespace

status enqueue_launch(int dialect, stream s, launch_job job) {
  const int d = current_device;
  const device_info i = info_of(dialect, d);
  const unsigned g[3] = {job.grid.x, job.grid.y, job.grid.z}, b[3] = {job.block.x, job.block.y, job.block.z};
  std::uint64_t threads = 1;
  for (int k = 0; k < 3; ++k) {
    if (g[k] == 0 || b[k] == 0 || g[k] > static_cast<unsigned>(i.max_grid_size[k]) ||
        b[k] > static_cast<unsigned>(i.max_threads_dim[k]))
      return record(status::invalid_configuration);
    threads *= b[k];
  }
  if (threads > static_cast<std::uint64_t>(i.max_threads_per_block)) return record(status::invalid_configuration);
  // (CUDA: more dynamic shared memory than a block may have, without the opt-in, is an invalid value)
  if (job.shared_bytes > i.shared_mem_per_block) return record(status::invalid_value);
  s = resolve(dialect, s);
  if (const status e = sticky_status(s->device); e != status::success) return record(e);
  if (job.name.empty() && !launch_names.empty()) job.name = launch_names.back();
  s->push([dialect, device = s->device, job = std::move(job)] {
    if (sticky_status(device) != status::success) return;  // the context is lost: nothing runs
    try {
      const ki::reference::backend rb = backend_of(dialect, device);
      auto k = ki::kernel_function(rb, grid_thread{job.run, job.ctx.get()},
                                   ki::compile_options{job.name.empty() ? std::string("kernel") : job.name});
      ki::launch(k, {job.grid.x, job.grid.y, job.grid.z}, {job.block.x, job.block.y, job.block.z}, std::tuple<>{}, {},
                 static_cast<std::int64_t>(job.shared_bytes));
      ki::synchronize(rb);
    } catch (const ki::kernel_error& e) {
      runtime& r = runtime::get();
      std::lock_guard lock(r.m);
      sticky_error& st = sticky_of(r, device);
      if (st.code == status::success) st = {code_of(e), e.what()};
    } catch (const std::exception& e) {
      runtime& r = runtime::get();
      std::lock_guard lock(r.m);
      sticky_error& st = sticky_of(r, device);
      if (st.code == status::success) st = {status::launch_failure, e.what()};
    }
  });
  return status::success;
}

}  // namespace detail

std::string sticky_message() {
  runtime& r = runtime::get();
  std::lock_guard lock(r.m);
  return sticky_of(r, current_device).message;
}

}  // namespace ki::emulated
