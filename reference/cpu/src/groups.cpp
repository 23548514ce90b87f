// The CPU runtime's loop over a launch's work-groups (ki/cpu/groups.hpp).
#include <ki/cpu/groups.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

namespace ki::detail::cpu {

void for_group_ranges(std::int64_t groups, const group_pool& pool, void (*range)(void*, std::int64_t, std::int64_t),
                      void* ctx) {
  if (groups <= 0) return;
  if (pool.one_thread(groups)) return range(ctx, 0, groups);
  if (pool.parallel != nullptr) return pool.parallel(groups, pool.threads, range, ctx);
  const auto all = [&] {
    tbb::parallel_for(tbb::blocked_range<std::int64_t>(0, groups),
                      [&](const tbb::blocked_range<std::int64_t>& r) { range(ctx, r.begin(), r.end()); });
  };
  if (pool.arena != nullptr) pool.arena->execute(all);
  else all();
}

}  // namespace ki::detail::cpu
