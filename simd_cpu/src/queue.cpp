// The host side of simd_cpu: one device (the host), and every launch and copy done before its
// call returns, which the spec allows ("synchronous execution"). What remains of a queue is
// per host thread: the failed launches, kept until that thread's next synchronize (like every
// backend: a launch's errors surface at synchronize), and the priority (recorded; the work runs
// on the calling thread and the scheduler's workers at their own OS priority).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>
#include <utility>
#include <vector>

#include <ki/config.hpp>
#include <ki/simd_cpu/backend.hpp>

#include <ki/rand.hpp>

#include "executor.hpp"

namespace ki::simd_cpu::detail {
namespace {

struct thread_queue {
  std::vector<kernel_error> errors;
  std::uint64_t done = 0;  // launches and copies run so far
  priority prio = priority::normal;
  ~thread_queue() {
    for (const auto& e : errors)
      std::fprintf(stderr, "ki::simd_cpu: a launch failed and was never synchronized: %s\n", e.what());
  }
};

thread_queue& queue() {
  thread_local thread_queue q;
  return q;
}

const char* scheduler_name(scheduler s) { return s == scheduler::openmp ? "openmp" : "tbb"; }

}  // namespace

void launch(const backend& b, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items, run_items_fn run,
            run_one_fn one, const void* ctx, const std::string& name, std::size_t dynamic_local_memory) {
  ki::detail::cpu::host_only("ki::launch");
  check_environment(b);
  const std::uint64_t seed = ki::detail::next_launch_seed(backend_traits<backend>::name);
  auto error = execute({groups, items, run, one, ctx, &b, name.c_str(), seed, dynamic_local_memory});
  auto& q = queue();
  ++q.done;
  if (error) q.errors.push_back(std::move(*error));
}

void launch_ka(const backend& b, const ki::ka::detail::cpu_launch_desc& d) {
  ki::detail::cpu::host_only("a KA kernel's launch");
  check_environment(b);
  auto error = execute_ka(d, b);
  auto& q = queue();
  ++q.done;
  if (error) q.errors.push_back(std::move(*error));
}

void synchronize(const backend&) {
  ki::detail::cpu::host_only("ki::synchronize");
  auto& q = queue();
  if (q.errors.empty()) return;
  kernel_error e = std::move(q.errors.front());
  q.errors.clear();
  throw e;
}

void* allocate(const backend&, std::size_t bytes) {
  ki::detail::cpu::host_only("ki::allocate (or ki::zeros, ki::ones, ki::fill)");
  const std::size_t n = (bytes + 63) / 64 * 64;  // 64-byte aligned, at least one line
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (p == nullptr) throw std::bad_alloc();
  return p;
}

void free(void* p) noexcept { std::free(p); }

void copy(const backend& b, void* dst, const void* src, std::size_t bytes) {
  ki::detail::cpu::host_only("ki::copyto (or ki::to_host)");
  copy_bytes(b, dst, src, bytes);  // (on b's threads: executor.cpp)
  ++queue().done;
}

event record_event(const backend&) {
  ki::detail::cpu::host_only("ki::record_event");
  return event{queue().done};
}

void set_priority(const backend&, priority p) { queue().prio = p; }

void validate(const backend& b) {
  const auto w = b.sub_group_width;
  if (w < 1 || w > 64 || (w & (w - 1)) != 0)
    throw std::invalid_argument("ki::simd_cpu: sub_group_width = " + std::to_string(w) +
                                " must be a power of two between 1 and 64");
  if (b.threads < 0)
    throw std::invalid_argument("ki::simd_cpu: threads = " + std::to_string(b.threads) + " must be at least 0");
#if !KI_SIMD_CPU_HAS_OPENMP
  if (b.scheduler == scheduler::openmp)
    throw std::invalid_argument("ki::simd_cpu: scheduler openmp requested, but this build of ki has no OpenMP");
#endif
}

void versioninfo(std::ostream& os, const backend& b) {
  os << "ki " << KI_VERSION << ", backend simd_cpu (work-groups in parallel, lazy fibers, xsimd collectives)\n"
     << "  devices:            1 (the host)\n"
     << "  scheduler:          " << scheduler_name(b.scheduler) << "\n"
     << "  host threads:       " << host_threads(b) << "\n"
     << "  fiber stack:        " << (b.stack_size != 0 ? std::to_string(b.stack_size) + " bytes" : "default") << "\n"
     << "  sub-group width:    " << b.sub_group_width << ", linear, independent, partitionable\n"
     << "  max work-group:     " << max_work_group_size << " items\n"
     << "  local memory:       " << max_local_memory << " bytes per work-group\n"
     << "  execution:          synchronous (launches and copies finish before they return)\n";
}

}  // namespace ki::simd_cpu::detail

namespace ki::simd_cpu {

ki::simd_cpu::scheduler backend::scheduler_from_environment() {
  static const ki::simd_cpu::scheduler s = [] {
    const char* v = std::getenv("KI_SIMD_CPU_SCHEDULER");
    if (v == nullptr || *v == '\0' || std::strcmp(v, "tbb") == 0) return ki::simd_cpu::scheduler::tbb;
    if (std::strcmp(v, "openmp") == 0) return ki::simd_cpu::scheduler::openmp;
    ki::detail::cpu::bad_environment("ki::simd_cpu", "KI_SIMD_CPU_SCHEDULER", v, "tbb or openmp");
    return ki::simd_cpu::scheduler::tbb;
  }();
  return s;
}

}  // namespace ki::simd_cpu
