// Kernels and launches: kernel_function, ki::kernel, the one-call ki::launch (the spec's
// @launch), and the lower-level ki::launch(kernel, groups, items, args).
//
//   auto k = ki::kernel_function(backend, vadd{});
//   k({.ndrange = n}, c, a, b);                         // queued; returns immediately
//   ki::launch(backend, {.ndrange = n}, vadd{}, c, a, b);  // compile + launch in one call
//   ki::synchronize(backend);                           // waits; rethrows kernel errors
//
// A kernel is a trivially copyable callable (a struct with a KI_DEVICE operator() const, or a
// KI_LAMBDA). Each work-item calls its own copy with its own copies of the converted arguments,
// as GPUs pass kernel parameters by value.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <array>
#include <cstdint>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

#include <ki/argconvert.hpp>
#include <ki/backend.hpp>
#include <ki/const_span.hpp>
#include <ki/detail/geometry.hpp>
#include <ki/detail/type_name.hpp>
#include <ki/dims.hpp>
#include <ki/hints.hpp>

namespace ki {

/// The launch keywords of calling a kernel.
struct launch_options {
  dims numgroups{};
  dims workgroupsize{};
  dims ndrange{};
  std::int64_t max_work_group_size = std::numeric_limits<std::int64_t>::max();
  /// Backend-specific launch options; a backend throws for names it does not support.
  kwargs options{};
};

/// The keyword arguments of kernel_function.
struct compile_options {
  /// Override the kernel's name in generated code (and in diagnostics).
  std::string name{};
  /// Backend-specific compiler options; a backend throws for names it does not support.
  kwargs options{};
};

template <backend B, class F>
class kernel;

namespace detail {
/// max_work_group_size(kernel): the backend's bound for k, lowered by the kernel's hints.
template <backend B, class F>
std::int64_t kernel_limit(const kernel<B, F>& k) {
  const std::int64_t m = backend_traits<B>::kernel_max_work_group_size(k);
  constexpr std::int64_t h = hints_of<F>.bound();
  return h > 0 && h < m ? h : m;
}
/// A launch's work-group size against the kernel's required one (std::invalid_argument naming
/// both).
inline void check_required_size(const launch_hints& h, const std::array<std::int64_t, 3>& items,
                                const std::string& name) {
  if (!h.has_required() || items == h.required_size) return;
  const auto str = [](const std::array<std::int64_t, 3>& a) {
    std::string s = "(";  // (appends, not "(" + std::to_string(...): GCC 12 warns falsely there, -Wrestrict)
    s.append(std::to_string(a[0])).append(", ").append(std::to_string(a[1])).append(", ");
    return s.append(std::to_string(a[2])).append(")");
  };
  bad_launch((name.empty() ? std::string("the kernel") : "kernel '" + name + "'") + " requires work-groups of " +
             str(h.required_size) + " work-items (launch_hints::required_size); this launch has " + str(items));
}
}  // namespace detail

template <backend B, class F>
class kernel {
  static_assert(std::is_trivially_copyable_v<F>,
                "ki::kernel_function: the kernel must be trivially copyable (a struct of plain members or "
                "a KI_LAMBDA capturing spans and numbers, not ki::arrays)");

 public:
  kernel(B b, F f, std::string name, kwargs options = {})
      : backend(std::move(b)), f(std::move(f)), name(std::move(name)), options(std::move(options)) {}

  /// The backend value that was passed to kernel_function.
  B backend;
  /// The kernel callable (kept alive by the kernel object).
  F f;
  std::string name;
  /// The backend-specific compiler options it was compiled with.
  kwargs options;
  /// The kernel's launch hints (ki/hints.hpp), part of its type.
  static constexpr launch_hints hints = hints_of<F>;

  /// Launch: validates the geometry on the host (std::invalid_argument before anything runs),
  /// converts args with argconvert, and queues the launch on the calling thread's queue.
  template <class... Args>
  void operator()(const launch_options& o, Args&&... args) const {
    using traits = backend_traits<B>;
    const std::int64_t kmax = detail::kernel_limit(*this);
    // A required work-group size is the default one.
    const dims wgs = hints.has_required() && !o.workgroupsize.given()
                         ? dims(hints.required_size[0], hints.required_size[1], hints.required_size[2])
                         : o.workgroupsize;
    const auto g = detail::resolve_geometry(o.numgroups, wgs, o.ndrange, o.max_work_group_size, kmax,
                                            traits::max_work_group_dims(backend),
                                            [&](std::optional<std::int64_t> nitems, std::int64_t bound) {
                                              return traits::launch_configuration(*this, nitems, bound);
                                            });
    detail::check_required_size(hints, g.items, name);
    if (g.empty) return;
    const auto launch_converted = [&](auto... c) {
      detail::check_const_args(c...);  // a ki::Const argument aliases no writable one
      traits::launch(*this, g.groups, g.items, o.options, c...);
    };
    launch_converted(argconvert(backend, std::forward<Args>(args))...);
  }
  /// Launch one work-group of one work-item (numgroups and workgroupsize default to 1).
  template <class... Args>
  requires(sizeof...(Args) == 0 ||
           !std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, std::tuple<Args..., int>>>, launch_options>) void
  operator()(Args&&... args) const {
    (*this)(launch_options{}, std::forward<Args>(args)...);
  }
};

/// Compiles f for the active device of b (on CPU backends: validates the options).
template <backend B, class F>
kernel<B, std::decay_t<F>> kernel_function(const B& b, F&& f, const compile_options& o = {}) {
  backend_traits<B>::check_compile_options(b, o.options);
  return kernel<B, std::decay_t<F>>(b, std::forward<F>(f), o.name, o.options);
}

/// The keywords of the one-call form (the spec's @launch).
struct launch_spec {
  /// false: only compile and return the kernel; the launch keywords must then be left empty.
  bool launch = true;
  dims numgroups{};
  dims workgroupsize{};
  dims ndrange{};
  std::int64_t max_work_group_size = std::numeric_limits<std::int64_t>::max();
  /// Passed to kernel_function.
  std::string name{};
  kwargs options{};
};

/// Compile f for b and launch it with args (converted with argconvert). Returns the kernel.
template <backend B, class F, class... Args>
kernel<B, std::decay_t<F>> launch(const B& b, const launch_spec& s, F&& f, Args&&... args) {
  auto k = kernel_function(b, std::forward<F>(f), compile_options{s.name, s.options});
  if (!s.launch) {
    if (s.numgroups.given() || s.workgroupsize.given() || s.ndrange.given() ||
        s.max_work_group_size != std::numeric_limits<std::int64_t>::max())
      throw std::invalid_argument(
          "ki::launch: launch = false only compiles; the launch keywords "
          "(numgroups, workgroupsize, ndrange, max_work_group_size) can't be used");
    return k;
  }
  k(launch_options{s.numgroups, s.workgroupsize, s.ndrange, s.max_work_group_size, {}}, std::forward<Args>(args)...);
  return k;
}

/// The lower-level launch: exactly groups x items, no geometry rules beyond the spec's
/// preconditions (checked: positive, within the limits, no int64 overflow).
template <backend B, class F, class... Args>
void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
            std::tuple<Args...> args, const kwargs& options = {}) {
  using traits = backend_traits<B>;
  for (int i = 0; i < 3; ++i) {
    if (groups[i] <= 0)
      detail::bad_launch("groups[" + std::to_string(i) + "] = " + std::to_string(groups[i]) + " must be positive");
    if (items[i] <= 0)
      detail::bad_launch("items[" + std::to_string(i) + "] = " + std::to_string(items[i]) + " must be positive");
    if (items[i] > detail::int64_max / groups[i])
      detail::bad_launch("dimension " + std::to_string(i) + ": groups * items overflows std::int64_t");
  }
  detail::check_group_size(items, "items", detail::kernel_limit(k), traits::max_work_group_dims(k.backend));
  detail::check_required_size(k.hints, items, k.name);
  const auto launch_converted = [&](auto... c) {
    detail::check_const_args(c...);
    traits::launch(k, groups, items, options, c...);
  };
  std::apply([&](auto&... a) { launch_converted(argconvert(k.backend, a)...); }, args);
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
