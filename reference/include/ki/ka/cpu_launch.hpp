// Private to the CPU backends' KA launches: the launch as their runtimes see it, type-erased.
#pragma once
#include <cstdint>
#include <tuple>

#include <ki/ka/group.hpp>
#include <ki/ka/ndrange.hpp>
#include <ki/xyz.hpp>

namespace ki::ka::detail {

/// One KA launch on a CPU backend: run_group(ctx, g) runs the kernel's body for the group g.
struct cpu_launch_desc {
  ndrange range;
  xyz<std::int64_t> groupsize;
  xyz<std::int64_t> groups;
  void (*run_group)(const void* ctx, cpu_group& g);
  const void* ctx;
  const char* name;
};

/// The kernel and its (converted) arguments, bound for a CPU backend; S is its static
/// work-group size (ki/ka/sizes.hpp) or dynamic_size.
template <class S, class F, class... A>
struct cpu_bound {
  F f;
  std::tuple<A...> args;
  static void run_group(const void* ctx, cpu_group& g) {
    const auto& self = *static_cast<const cpu_bound*>(ctx);
    F fc = self.f;  // the group's own copy of the kernel, as a GPU's parameters
    if constexpr (!S::is_static) {
      std::apply([&](const A&... a) { fc(g, a...); }, self.args);
    } else {  // the same group, typed with its static size
      basic_cpu_group<S> sg(g.state());
      g.set_view(&sg.state());  // (where the runner looks after a fault)
      try {
        std::apply([&](const A&... a) { fc(sg, a...); }, self.args);
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
