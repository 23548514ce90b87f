// The CPU runtime's KA launches (ki/cpu/ka.hpp).
#include <ki/cpu/ka.hpp>

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <memory>
#include <mutex>
#include <numeric>
#include <tuple>
#include <vector>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/support.hpp>

namespace ki::detail::cpu {
using i64 = std::int64_t;
namespace {

/// One thread's KA group runner: the group's memory and the phases' order.
class ka_runner final : public ki::ka::detail::cpu_services {
 public:
  ka_runner() = default;
  /// Per launch (the runner is the thread's, kept across launches: its arena stays allocated).
  void prepare(const ka_config& c, const ki::ka::detail::cpu_launch_desc& d) {
    c_ = &c;
    group_.emplace(d.range, d.groupsize, d.groups, *this);
    if (!fibers_ || fibers_->stack_size() != c.stack_size) fibers_.emplace(c.stack_size);
  }

  /// Runs the groups [begin, end) (those below `stop` when each starts) on one fiber; the first
  /// failure, with its group's linear id.
  struct range_result {
    std::optional<kernel_error> error;
    i64 group = -1;
  };
  range_result run_range(const ki::ka::detail::cpu_launch_desc& d, i64 begin, i64 end, const std::atomic<i64>& stop,
                         reporter& rep) {
    job_ = {&d, begin, end, &stop, &rep, {}, begin};
    fibers_->reset(2);  // slot 0: the groups' fiber; slot 1: this thread's stack
    const fiber_core::fault f = fibers_->run_guarded(&drive, this);
    if (!f.happened) return std::move(job_.result);
    // The fiber is gone (not unwound): undo what it had set, and say where it was.
    ka_running = false;
    private_begin = private_end = 0;
    const auto& own = group_->state();
    const auto& st = own.view != nullptr ? *own.view : own;  // a statically sized kernel's copy
    const std::string what = rep.fault_message(f, fibers_->stack_size());
    const kernel_error::kind kind = reporter::fault_kind(f);
    item_state first;
    range_result r;
    r.group = job_.current;
    if (!st.in_phase) {
      r.error = rep.group_error(kind, first, sync_point{group_where_, nullptr}, "its group-level code " + what);
    } else if (st.current >= 0) {
      item_state it;
      const auto& g = d.groupsize;
      it.local_linear = st.current;
      it.local_id = {st.current % g.x, st.current / g.x % g.y, st.current / (g.x * g.y)};
      r.error = rep.phase_error(kind, it, st.phase, what);
    } else {
      r.error = rep.group_error(kind, first, sync_point{st.phase, nullptr},
                                "a work-item of the phase at " + to_string(st.phase) + " " + what +
                                    " (this backend runs the phase as one loop; the reference backend names the "
                                    "work-item)");
    }
    return r;
  }

  std::optional<kernel_error> run(const ki::ka::detail::cpu_launch_desc& d, i64 linear, reporter& rep) {
    const auto& n = d.groups;
    const xyz<i64> id{linear % n.x, (linear / n.x) % n.y, linear / (n.x * n.y)};
    arena_.reset();
    locals_.clear();
    group_where_ = {};
    local_bytes_ = 0;
    group_->start(id, nullptr, 0, c_->track_items);
    const xyz<i64> a = group_->active();
    if (c_->order != ka_order::forward) {
      order_.clear();
      for (i64 z = 0; z < a.z; ++z)
        for (i64 y = 0; y < a.y; ++y)
          for (i64 x = 0; x < a.x; ++x) order_.push_back(x + d.groupsize.x * (y + d.groupsize.y * z));
      if (c_->order == ka_order::reverse) {
        std::reverse(order_.begin(), order_.end());
      } else if (c_->order == ka_order::random) {
        std::uint64_t s = c_->seed ^ (static_cast<std::uint64_t>(linear) * 0xD1B54A32D192ED03ull);
        for (std::size_t i = order_.size(); i > 1; --i) {
          std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
          z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
          z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
          std::swap(order_[i - 1], order_[static_cast<std::size_t>((z ^ (z >> 31)) % i)]);
        }
      }
      group_->start(id, order_.data(), static_cast<i64>(order_.size()), c_->track_items);
    }
    rep.set_group(id);
    // While this thread runs the group, only it touches the group's local and private memory:
    // atomics on it may be plain operations (ki/atomic.hpp says why that is exact).
    std::tie(private_begin, private_end) = arena_.first();
    try {
      ka_running = true;  // (a KI device function called in the kernel says so)
      d.run_group(d.ctx, *group_);
      ka_running = false;
      private_begin = private_end = 0;
    } catch (...) {
      ka_running = false;
      private_begin = private_end = 0;
      const item_failure f = current_failure();
      const auto& pf = group_->failure();
      if (pf.happened) {
        item_state it;
        it.local_id = pf.local;
        it.local_linear = pf.local.x + d.groupsize.x * (pf.local.y + d.groupsize.y * pf.local.z);
        return rep.phase_error(f.kind, it, pf.where, f.message);
      }
      item_state first;
      return rep.group_error(f.kind, first, sync_point{group_where_, nullptr}, "its group-level code " + f.message);
    }
    return std::nullopt;
  }

  void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) override {
    for (const auto& l : locals_)
      if (l.key == key) return l.p;
    if (local_bytes_ + bytes > c_->max_local_memory) {
      group_where_ = where;
      throw reporter::local_memory_exceeded(where, bytes, local_bytes_, c_->max_local_memory);
    }
    void* p = arena_.alloc(bytes, align);
    if (c_->fill) c_->fill(p, bytes);
    locals_.push_back({key, p});
    local_bytes_ += bytes;
    return p;
  }
  void* private_memory(std::size_t bytes, std::size_t align, const source_location&) override {
    void* p = arena_.alloc(bytes, align);
    if (c_->fill) c_->fill(p, bytes);
    return p;
  }
  [[noreturn]] void bound_exceeded(const char* what, i64 bound, i64 size, const source_location& where) override {
    group_where_ = where;
    throw item_failure{kernel_error::kind::invalid_collective,
                       "called " + std::string(what) + " at " + to_string(where) +
                           " with groupsize = " + std::to_string(bound) + ", a bound below the work-group's " +
                           std::to_string(size) + " work-items"};
  }

 private:
  struct local {
    const void* key;
    void* p;
  };
  /// The range of groups the fiber runs, and how far it got.
  struct range_job {
    const ki::ka::detail::cpu_launch_desc* d = nullptr;
    i64 begin = 0, end = 0;
    const std::atomic<i64>* stop = nullptr;
    reporter* rep = nullptr;
    range_result result;
    i64 current = 0;
  };
  // On the thread's own stack, inside run_guarded: the fiber runs the groups, then resumes it.
  static void drive(void* self) { static_cast<ka_runner*>(self)->fibers_->spawn(1, &entry, self); }
  static int entry(void* self) {
    auto& r = *static_cast<ka_runner*>(self);
    auto& j = r.job_;
    for (i64 g = j.begin; g < j.end && g < j.stop->load(std::memory_order_relaxed); ++g) {
      j.current = g;
      if (auto e = r.run(*j.d, g, *j.rep)) {
        j.result = {std::move(e), g};
        break;
      }
    }
    return 1;
  }

  std::optional<fiber_core> fibers_;
  range_job job_;
  const ka_config* c_ = nullptr;
  std::optional<ki::ka::cpu_group> group_;
  local_arena arena_{1 << 20};  // (its first chunk is the memory whose atomics may be plain)
  std::vector<local> locals_;
  std::size_t local_bytes_ = 0;
  std::vector<i64> order_;
  source_location group_where_{};  ///< where the group-level code failed, when the runtime knows
};

}  // namespace

std::optional<kernel_error> run_ka(const ki::ka::detail::cpu_launch_desc& d, const ka_config& c) {
  const i64 ngroups = d.groups.x * d.groups.y * d.groups.z;
  if (ngroups == 0 || d.range.count() == 0) return std::nullopt;
  // The error reported is the lowest failing group's, whatever the threads' timing: after a
  // failure only groups with lower ids still run.
  std::mutex m;
  std::optional<kernel_error> first;
  i64 first_group = ngroups;
  std::atomic<i64> stop{ngroups};
  auto body = [&](const tbb::blocked_range<i64>& r) {
    thread_local ka_runner runner;
    runner.prepare(c, d);
    reporter rep(c.names);
    rep.set_kernel(d.name);
    auto res = runner.run_range(d, r.begin(), r.end(), stop, rep);
    if (res.error) {
      std::lock_guard lock(m);
      if (res.group < first_group) first_group = res.group, first = std::move(res.error), stop = res.group;
    }
  };
  fiber_core::recheck_fault_handlers();
  if (c.threads == 1 || ngroups == 1) body(tbb::blocked_range<i64>(0, ngroups));
  else if (c.arena != nullptr) c.arena->execute([&] { tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body); });
  else tbb::parallel_for(tbb::blocked_range<i64>(0, ngroups), body);
  return first;
}

}  // namespace ki::detail::cpu
