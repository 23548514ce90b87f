// Private to the CPU backends' KA launches: the launch as their runtimes see it, type-erased.
#pragma once
#include <cstdint>
#include <tuple>
#include <type_traits>

#include <ki/ka/group.hpp>
#include <ki/ka/ndrange.hpp>
#include <ki/xyz.hpp>

namespace ki::ka::detail {

/// The runner's side of a range of work-groups (ki/cpu/src/ka.cpp): next(st) ends the group
/// that ran in `st` (if any: its checks, its trace) and starts the next one there (its id, its
/// memory, its order), or says that the range is done. Each group of the range runs in the
/// same `st`, so that what does not change from group to group (the launch's geometry, the
/// kernel's typed group, the thread's flags) is set once per range, not once per group.
class group_source {
 public:
  virtual bool next(group_state& st) = 0;

 protected:
  ~group_source() = default;
};

/// One KA launch on a CPU backend: run_groups(ctx, g, src) runs the kernel's body for each
/// group src gives, in g (the runner's group, with the launch's geometry).
struct cpu_launch_desc {
  ndrange range;
  xyz<std::int64_t> groupsize;
  xyz<std::int64_t> groups;
  void (*run_groups)(const void* ctx, cpu_group& g, group_source& src);
  const void* ctx;
  const char* name;
  std::size_t dynamic_local_memory = 0;  ///< bytes (launch_options::dynamic_local_memory), within max_local_memory
  std::uint64_t rand_seed = 0;           ///< the launch's seed (ki/rand.hpp), drawn when it was made
};

/// The kernel and its (converted) arguments, bound for a CPU backend; S is its static
/// work-group size (ki/ka/sizes.hpp) or dynamic_size.
template <class S, class F, class... A>
struct cpu_bound {
  static_assert(std::is_invocable_v<F&, basic_cpu_group<S>&, const A&...>,
                "ki::ka: the kernel cannot be called with these arguments (its operator()(G& g, args...) must "
                "accept them as converted: an array as a ki::span<T>, a ki::ka::Const argument as a "
                "ki::span<const T>)");
  F f;
  std::tuple<A...> args;
  static void run_groups(const void* ctx, cpu_group& g, group_source& src) {
    const auto& self = *static_cast<const cpu_bound*>(ctx);
    if constexpr (!S::is_static) {
      while (src.next(g.state_for_runner())) {
        F fc = self.f;  // the group's own copy of the kernel, as a GPU's parameters
        std::apply([&](const A&... a) { fc(g, a...); }, self.args);
      }
    } else {  // the same groups, typed with their static size
      basic_cpu_group<S> sg(g.state());
      g.set_view(&sg.state());  // (where the runner looks after a fault)
      try {
        while (src.next(sg.state_for_runner())) {
          F fc = self.f;
          std::apply([&](const A&... a) { fc(sg, a...); }, self.args);
        }
      } catch (...) {
        g.set_view(nullptr);
        g.set_failure(sg.failure());
        throw;
      }
      g.set_view(nullptr);
    }
  }
};

}  // namespace ki::ka::detail
