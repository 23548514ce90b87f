// The CPU runtime's loop over a launch's work-groups, for both CPU backends and both layers:
// where the groups run (the calling thread, a oneTBB arena, or the backend's own threads), in
// ranges of consecutive groups, and which failure the launch reports: the lowest failing
// group's, whatever the threads' timing (after a failure only groups below it still start).
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <type_traits>
#include <utility>

#include <tbb/task_arena.h>

namespace ki::detail::cpu {

/// Runs range(ctx, begin, end) for ranges of consecutive groups that together cover
/// [0, groups), on the backend's own threads (e.g. simd_cpu's OpenMP scheduler): `threads`
/// of them, 0 for all.
using parallel_ranges = void (*)(std::int64_t groups, int threads, void (*range)(void*, std::int64_t, std::int64_t),
                                 void* ctx);

/// Where a launch's groups run.
struct group_pool {
  /// 1: every group in order on the calling thread; otherwise the threads of `arena` (null: the
  /// calling thread's current arena, all cores), or those of `parallel` where it is set.
  int threads = 0;
  tbb::task_arena* arena = nullptr;
  parallel_ranges parallel = nullptr;
  /// The groups run one after another on the calling thread.
  bool one_thread(std::int64_t groups) const { return threads == 1 || groups == 1; }
};

/// The failure a launch reports, E (kernel_error, a backend's richer record): the lowest failing
/// group's. Ranges check stopped() before each group; offer() lowers the bound.
template <class E>
class lowest_failure {
 public:
  explicit lowest_failure(std::int64_t groups) : group_(groups), stop_(groups) {}
  /// Group g failed with e: kept if g is the lowest failing group so far.
  void offer(std::int64_t g, E&& e) {
    std::lock_guard lock(m_);
    if (g >= group_) return;
    group_ = g;
    error_ = std::move(e);
    stop_.store(g, std::memory_order_relaxed);
  }
  /// Group g need not start: a group below it (or g itself) failed.
  bool stopped(std::int64_t g) const { return g >= stop_.load(std::memory_order_relaxed); }
  /// The bound itself, for runners that check it between the groups of a range.
  const std::atomic<std::int64_t>& stop() const { return stop_; }
  /// After the loop: the lowest failure, if any.
  std::optional<E>& error() { return error_; }

 private:
  std::mutex m_;
  std::optional<E> error_;
  std::int64_t group_;
  std::atomic<std::int64_t> stop_;
};

/// Calls range(ctx, begin, end) for ranges of consecutive groups that together cover
/// [0, groups) on the pool's threads; one range [0, groups) on the calling thread where the
/// pool has one thread or the launch one group. Several ranges may run at once, each on one
/// thread; returns when all have.
void for_group_ranges(std::int64_t groups, const group_pool& pool, void (*range)(void*, std::int64_t, std::int64_t),
                      void* ctx);

/// The same for a callable: f(begin, end).
template <class F>
void for_group_ranges(std::int64_t groups, const group_pool& pool, F&& f) {
  using fn = std::remove_reference_t<F>;
  for_group_ranges(
      groups, pool, [](void* c, std::int64_t begin, std::int64_t end) { (*static_cast<fn*>(c))(begin, end); },
      const_cast<void*>(static_cast<const void*>(&f)));
}

}  // namespace ki::detail::cpu
