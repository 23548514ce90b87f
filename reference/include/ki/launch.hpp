// Kernels and launches: kernel_function, ki::kernel, the one-call ki::launch (the spec's
// @launch), and the lower-level ki::launch(kernel, groups, items, args).
//
//   auto k = ki::kernel_function(backend, vadd{});
//   k({.ndrange = n}, c, a, b);                         // queued; returns immediately
//   ki::launch(backend, {.ndrange = n}, vadd{}, c, a, b);  // compile + launch in one call
//   ki::synchronize(backend);                           // waits; rethrows kernel errors
//
// A kernel is a callable (a struct with a KI_DEVICE operator() const, a KI_LAMBDA, or a
// KI_LAMBDA_CAPTURE that captures arrays). kernel_function converts it with ki::argconvert, as it
// converts the arguments (the spec: argconvert is "called for every kernel argument, and for the
// kernel function itself"), once, when the kernel is made: a functor holding ki::arrays becomes
// its device form through its own argconvert (found by ADL), and that device form must be
// trivially copyable. Each work-item calls its own copy of the device form with its own copies
// of the converted arguments, as GPUs pass kernel parameters by value.
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
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

/// The launch keywords of calling a kernel. Designated initialisers follow this order, the spec's
/// (ndrange first), which ki::ka::launch_options shares: {.ndrange = n, .workgroupsize = 64}
/// is written the same in both layers.
struct launch_options {
  dims ndrange{};
  dims numgroups{};
  dims workgroupsize{};
  std::int64_t max_work_group_size = std::numeric_limits<std::int64_t>::max();
  /// Bytes of local memory sized at this launch, which the kernel reaches with
  /// ki::dynamic_localmemory<T>() (ki/local_memory.hpp): CUDA's dynamic shared memory, OpenCL's
  /// __local kernel arguments. Counted with the kernel's localmemory against the device's local
  /// memory per work-group; more than the device has, or a negative value, is
  /// std::invalid_argument naming both numbers.
  std::int64_t dynamic_local_memory = 0;
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
/// launch_options::dynamic_local_memory against the device's local memory per work-group
/// (std::invalid_argument naming both).
inline void check_dynamic_local_memory(std::int64_t bytes, std::int64_t max_local_memory) {
  if (bytes < 0) bad_launch("dynamic_local_memory = " + std::to_string(bytes) + " bytes: the size must be at least 0");
  if (bytes > max_local_memory)
    bad_launch("dynamic_local_memory = " + std::to_string(bytes) + " bytes exceeds the device's local memory per " +
               "work-group, max_local_memory = " + std::to_string(max_local_memory) + " bytes");
}
}  // namespace detail

namespace detail {
/// The one check of a kernel's device form (kept in one place for its message).
template <class D>
consteval bool device_form_ok() {
  static_assert(
      std::is_trivially_copyable_v<D>,
      "ki::kernel_function, ki::ka::kernel: the kernel's device form (the callable after ki::argconvert) must be "
      "trivially copyable: capture arrays with KI_LAMBDA_CAPTURE(a, ...) (or ki::device_capture(a)), "
      "hold ki::spans and numbers rather than ki::arrays, or give a functor that holds arrays an "
      "argconvert(backend, f) found by ADL that returns a trivially copyable device struct");
  return true;
}

/// A callable's launch hints are part of its type: its device form must declare the same ones.
template <class H, class D>
constexpr void check_device_hints() {
  static_assert(
      !hints_of<H>.any() || hints_of<H> == hints_of<D>,
      "ki::kernel_function, ki::ka::kernel: the kernel declares launch hints that its device form (its argconvert's "
      "result) does not: declare the same static constexpr ki::launch_hints hints on the device form");
}

template <class T>
struct is_reference_wrapper : std::false_type {};
template <class T>
struct is_reference_wrapper<std::reference_wrapper<T>> : std::true_type {};

/// The device form of a kernel callable read through the lvalue R (H& or const H&): the result
/// of its own argconvert where it has one, else the callable as it is.
template <class B, class R>
struct device_form_of {
  using type = std::remove_cvref_t<R>;
};
template <class B, class R>
requires custom_argconvert<B, R>
struct device_form_of<B, R> {
  using type = std::remove_cvref_t<decltype(argconvert_fn{}(std::declval<const B&>(), std::declval<R>()))>;
};
/// The callable F given to kernel_function (a std::reference_wrapper is read through).
template <class B, class F>
struct device_callable : device_form_of<B, std::remove_cvref_t<F>&> {};
template <class B, class F>
requires is_reference_wrapper<std::remove_cvref_t<F>>::value struct device_callable<B, F>
    : device_form_of<B, typename std::remove_cvref_t<F>::type&> {
};
}  // namespace detail

/// The kernel type that kernel_function(b, f) returns for a callable of type F: ki::kernel of
/// F's device form.
template <class B, class F>
using device_callable_t = typename detail::device_callable<B, F>::type;

namespace detail {
template <class D>
struct converted_callable {
  D device;
  std::shared_ptr<const void> host;  // the host form, where the kernel keeps one
};

/// Converts a kernel callable for kernel_function: once, from the copy the kernel keeps.
///  - a callable with its own argconvert (ADL or member): f is moved or copied into a shared
///    holder that the kernel keeps (the spec: "the returned kernel keeps f alive"), and converted
///    from there (a non-const lvalue, so that its arrays become span<T>);
///  - std::ref(f) / std::cref(f): f is converted in place and the caller keeps it alive (for a
///    callable that cannot be copied, or whose arrays the caller reads afterwards);
///  - anything else passes on as it is, and must be trivially copyable.
template <class B, class F>
converted_callable<device_callable_t<B, F>> convert_callable(const B& b, F&& f) {
  using H = std::remove_cvref_t<F>;
  using D = device_callable_t<B, F>;
  if constexpr (is_reference_wrapper<H>::value) {
    auto& src = f.get();
    using R = decltype(src);
    static_assert(custom_argconvert<B, R> || device_form_ok<D>());
    check_device_hints<std::remove_cvref_t<R>, D>();
    if constexpr (custom_argconvert<B, R>) return {D(ki::argconvert(b, src)), nullptr};
    else return {D(src), nullptr};
  } else if constexpr (custom_argconvert<B, H&>) {
    static_assert(std::is_constructible_v<H, F&&>,
                  "ki::kernel_function, ki::ka::kernel: the kernel keeps its own copy of a callable that converts with "
                  "argconvert, and this one cannot be copied: pass it with std::move(f), or as std::ref(f) "
                  "to keep it alive yourself");
    check_device_hints<H, D>();
    auto held = std::make_shared<H>(std::forward<F>(f));
    D d = ki::argconvert(b, *held);  // once per kernel
    return {std::move(d), std::shared_ptr<const void>(std::move(held))};
  } else {
    static_assert(device_form_ok<H>());
    return {H(std::forward<F>(f)), nullptr};
  }
}
}  // namespace detail

/// Made by kernel_function (constrained by ki::backend), never constrained itself: the concept
/// ki::backend names kernel<B, F> in its requirements (ki/backend.hpp declares it).
template <class B, class F>
class kernel {
  static_assert(detail::device_form_ok<F>());

 public:
  /// F is the device form; host is what keeps the host form alive (see kernel_function).
  kernel(B b, F f, std::string name, kwargs options = {}, std::shared_ptr<const void> host = {})
      : backend(std::move(b)),
        f(std::move(f)),
        name(std::move(name)),
        options(std::move(options)),
        host_callable(std::move(host)) {}

  /// The backend value that was passed to kernel_function.
  B backend;
  /// The kernel callable's device form: the callable given to kernel_function, converted once
  /// with ki::argconvert when the kernel was made (the callable itself where it has no
  /// conversion of its own). Every launch copies it to the work-items.
  F f;
  std::string name;
  /// The backend-specific compiler options it was compiled with.
  kwargs options;
  /// The callable as given to kernel_function, where it was converted by its own argconvert: the
  /// kernel keeps it alive (shared by copies of the kernel), since f may point into it (a
  /// functor's arrays). Null where f is the callable itself, or for std::ref(f).
  std::shared_ptr<const void> host_callable;
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
    detail::check_dynamic_local_memory(o.dynamic_local_memory, traits::max_local_memory(backend));
    if (g.empty) {
      // Nothing runs, but a count of work-groups the device cannot launch is still an error (the
      // backend validates them at a launch that runs): never a silent empty run of a bad size.
      const auto maxg = traits::max_num_groups(backend);
      for (std::size_t i = 0; i < 3; ++i)
        if (g.groups[i] > maxg[i])
          throw std::invalid_argument("ki: launch: " + std::to_string(g.groups[i]) + " work-groups in dimension " +
                                      std::to_string(i) + " exceed max_num_groups[" + std::to_string(i) +
                                      "] = " + std::to_string(maxg[i]) + " (the launch is empty: another is 0)");
      return;
    }
    const auto launch_converted = [&](auto... c) {
      detail::check_const_args(c...);  // a ki::Const argument aliases no writable one
      traits::launch(*this, g.groups, g.items, {o.dynamic_local_memory, o.options}, c...);
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

/// Compiles f for the active device of b (on CPU backends: validates the options). f is converted
/// with ki::argconvert here, once (see ki::detail::convert_callable): the kernel's f is its
/// device form, and the kernel keeps the host form alive where they differ.
template <backend B, class F>
kernel<B, device_callable_t<B, F>> kernel_function(const B& b, F&& f, const compile_options& o = {}) {
  backend_traits<B>::check_compile_options(b, o.options);
  auto c = detail::convert_callable(b, std::forward<F>(f));
  return kernel<B, device_callable_t<B, F>>(b, std::move(c.device), o.name, o.options, std::move(c.host));
}

/// The keywords of the one-call form (the spec's @launch).
struct launch_spec {
  /// false: only compile and return the kernel; the launch keywords must then be left empty.
  bool launch = true;
  dims ndrange{};
  dims numgroups{};
  dims workgroupsize{};
  std::int64_t max_work_group_size = std::numeric_limits<std::int64_t>::max();
  std::int64_t dynamic_local_memory = 0;
  /// Passed to kernel_function.
  std::string name{};
  kwargs options{};
};

/// Compile f for b and launch it with args (f and args converted with argconvert). Returns the
/// kernel.
template <backend B, class F, class... Args>
kernel<B, device_callable_t<B, F>> launch(const B& b, const launch_spec& s, F&& f, Args&&... args) {
  auto k = kernel_function(b, std::forward<F>(f), compile_options{s.name, s.options});
  if (!s.launch) {
    if (s.numgroups.given() || s.workgroupsize.given() || s.ndrange.given() ||
        s.max_work_group_size != std::numeric_limits<std::int64_t>::max() || s.dynamic_local_memory != 0)
      throw std::invalid_argument(
          "ki::launch: launch = false only compiles; the launch keywords "
          "(ndrange, numgroups, workgroupsize, max_work_group_size, dynamic_local_memory) can't be used");
    return k;
  }
  k(launch_options{.ndrange = s.ndrange,
                   .numgroups = s.numgroups,
                   .workgroupsize = s.workgroupsize,
                   .max_work_group_size = s.max_work_group_size,
                   .dynamic_local_memory = s.dynamic_local_memory},
    std::forward<Args>(args)...);
  return k;
}

/// The lower-level launch: exactly groups x items, no geometry rules beyond the spec's
/// preconditions (checked: positive, within the limits, no int64 overflow). dynamic_local_memory:
/// as launch_options::dynamic_local_memory.
template <backend B, class F, class... Args>
void launch(const kernel<B, F>& k, std::array<std::int64_t, 3> groups, std::array<std::int64_t, 3> items,
            std::tuple<Args...> args, const kwargs& options = {}, std::int64_t dynamic_local_memory = 0) {
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
  detail::check_dynamic_local_memory(dynamic_local_memory, traits::max_local_memory(k.backend));
  const auto launch_converted = [&](auto... c) {
    detail::check_const_args(c...);
    traits::launch(k, groups, items, {dynamic_local_memory, options}, c...);
  };
  std::apply([&](auto&... a) { launch_converted(argconvert(k.backend, a)...); }, args);
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
