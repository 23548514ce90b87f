// Constructing and launching a KA kernel (spec: "Launching kernels").
//
//   ki::ka::kernel k(backend, my_kernel{});                  // dynamic sizes
//   k({.ndrange = n}, a, b);                                  //   ndrange (and groupsize) at launch
//   ki::ka::kernel k(backend, my_kernel{}, 256);             // static work-group size
//   ki::ka::kernel k(backend, my_kernel{}, {16, 16}, {ki::range{-2, n + 2}, m});  // both static
//   k(a, b);
//
// Launches are asynchronous like KI launches; ki::synchronize(backend) surfaces the errors.
// Every misuse is std::invalid_argument naming the value, thrown on the host before anything
// runs: no ndrange, a launch ndrange or work-group size other than the static one, a negative
// extent, a work-group size beyond the device's limits. Arguments are converted with
// ki::argconvert (a ki::array becomes a ki::span), as for ki::launch; so is the kernel function,
// once, when the kernel is constructed (as kernel_function does: a functor holding arrays
// becomes its device form through its own argconvert, and the kernel keeps the functor alive).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

#include <ki/argconvert.hpp>
#include <ki/backend.hpp>
#include <ki/dims.hpp>
#include <ki/ka/const.hpp>
#include <ki/launch.hpp>
#include <ki/ka/ndrange.hpp>
#include <ki/ka/sizes.hpp>
#include <ki/xyz.hpp>

namespace ki::ka {

/// What a launch may give (designated initialisers): the index space, the work-group size.
struct launch_options {
  ki::ka::ndrange ndrange{};
  dims workgroupsize{};
  /// Bytes of local memory sized at this launch, from which the group's g.localmem<T>(key,
  /// extents) calls take their memory (ki/ka/group.hpp): every such call site a group runs must
  /// fit. At most the device's local memory per work-group (std::invalid_argument naming both).
  std::int64_t dynamic_local_memory = 0;
  const char* name = nullptr;  ///< for messages (default: the kernel's name)
};

/// The geometry a launch resolved to (the backend runs it), with its dynamic local memory.
struct geometry {
  ki::ka::ndrange range;
  xyz<std::int64_t> groupsize;
  xyz<std::int64_t> groups;
  std::int64_t dynamic_local_memory = 0;
};

namespace detail {
[[noreturn]] inline void bad(const std::string& what) { throw std::invalid_argument("ki::ka: " + what); }

/// The default work-group size of a dynamic kernel launched without one: 256 work-items.
inline dims default_groupsize(int rank) { return rank <= 1 ? dims(256) : rank == 2 ? dims(16, 16) : dims(8, 8, 4); }

/// A work-group size against the device's limits (each dimension at least 1,
/// max_work_group_size, max_work_group_dims): std::invalid_argument naming the value.
template <class B>
void check_groupsize(const B& b, const dims& size) {
  using traits = backend_traits<B>;
  std::int64_t total = 1;
  bool overflow = false;  // (a product beyond INT64_MAX is beyond any device's maximum)
  for (int d = 0; d < size.rank(); ++d) {
    if (size.too_large(d) || size[d] < 1)
      bad("workgroupsize " + size.str() + ": each dimension must be at least 1 (dimension " + std::to_string(d) +
          " is " + size.value_str(d) + ")");
    overflow = overflow || __builtin_mul_overflow(total, size[d], &total);
  }
  const std::int64_t max = traits::max_work_group_size(b);
  if (overflow)
    bad("workgroupsize " + size.str() + " has more than INT64_MAX work-items; the device's max_work_group_size is " +
        std::to_string(max));
  if (total > max)
    bad("workgroupsize " + size.str() + " has " + std::to_string(total) +
        " work-items; the device's max_work_group_size is " + std::to_string(max));
  const auto maxd = traits::max_work_group_dims(b);
  for (int d = 0; d < 3; ++d)
    if (size[d] > maxd[static_cast<std::size_t>(d)])
      bad("workgroupsize " + size.str() + ": dimension " + std::to_string(d) + " exceeds max_work_group_dims[" +
          std::to_string(d) + "] = " + std::to_string(maxd[static_cast<std::size_t>(d)]));
}

/// An ndrange's dimension with more than INT64_MAX indices: std::invalid_argument naming it.
inline void check_not_too_large(const ndrange& r) {
  const int d = r.too_large_dimension();
  if (d >= 0)
    bad("ndrange " + r.str() + ": dimension " + std::to_string(d) + " has more than INT64_MAX (" +
        std::to_string(INT64_MAX) + ") indices");
}

template <class B>
geometry resolve(const B& b, const ndrange& static_range, const dims& static_size, const launch_options& o) {
  using traits = backend_traits<B>;
  if (static_range.given() && o.ndrange.given() && !(static_range == o.ndrange))
    bad("the launch's ndrange " + o.ndrange.str() + " differs from the kernel's static ndrange " + static_range.str());
  const ndrange range = static_range.given() ? static_range : o.ndrange;
  if (!range.given()) bad("no ndrange: give it when constructing the kernel or at launch ({.ndrange = ...})");
  if (range.has_negative_extent()) bad("ndrange " + range.str() + ": an extent must be at least 0");
  check_not_too_large(range);
  if (static_size.given() && o.workgroupsize.given()) {
    bool same = static_size.rank() == o.workgroupsize.rank();
    for (int d = 0; d < 3 && same; ++d) same = static_size[d] == o.workgroupsize[d];
    if (!same)
      bad("the launch's workgroupsize " + o.workgroupsize.str() + " differs from the kernel's static workgroupsize " +
          static_size.str());
  }
  const dims size = static_size.given()       ? static_size
                    : o.workgroupsize.given() ? o.workgroupsize
                                              : default_groupsize(range.rank());
  if (size.rank() > range.rank())
    bad("workgroupsize " + size.str() + " has more dimensions than the ndrange " + range.str());
  check_groupsize(b, size);
  const xyz<std::int64_t> s{size[0], size[1], size[2]}, e = range.extents();
  // (e / s rounded up, without e + s - 1, which overflows near INT64_MAX)
  const xyz<std::int64_t> groups{e.x / s.x + (e.x % s.x != 0), e.y / s.y + (e.y % s.y != 0),
                                 e.z / s.z + (e.z % s.z != 0)};
  const auto maxg = traits::max_num_groups(b);
  const std::int64_t gv[3] = {groups.x, groups.y, groups.z}, sv[3] = {s.x, s.y, s.z};
  for (int d = 0; d < 3; ++d)
    if (gv[d] > maxg[static_cast<std::size_t>(d)])
      bad("ndrange " + range.str() + " needs " + std::to_string(gv[d]) + " work-groups in dimension " +
          std::to_string(d) + "; max_num_groups[" + std::to_string(d) +
          "] = " + std::to_string(maxg[static_cast<std::size_t>(d)]));
  // Every work-item of the launch (the last groups' padding too) has a global index and a linear
  // one in std::int64_t: the padded extents, their product, and first + padded extent fit.
  std::int64_t total = 1;
  for (int d = 0; d < range.rank(); ++d) {
    std::int64_t padded = 0, end = 0;
    if (__builtin_mul_overflow(gv[d], sv[d], &padded) || __builtin_add_overflow(range[d].first, padded, &end) ||
        __builtin_mul_overflow(total, padded, &total))
      bad("ndrange " + range.str() + " with workgroupsize " + size.str() + ": its " + std::to_string(gv[d]) +
          " work-groups of " + std::to_string(sv[d]) + " in dimension " + std::to_string(d) +
          " take the launch's indices beyond INT64_MAX (" + std::to_string(INT64_MAX) + ")");
  }
  if (o.dynamic_local_memory < 0 || o.dynamic_local_memory > traits::max_local_memory(b))
    bad("dynamic_local_memory = " + std::to_string(o.dynamic_local_memory) + " bytes: " +
        (o.dynamic_local_memory < 0 ? std::string("the size must be at least 0")
                                    : "more than the device's local memory per work-group, max_local_memory = " +
                                          std::to_string(traits::max_local_memory(b)) + " bytes"));
  return {range, s, groups, o.dynamic_local_memory};
}
}  // namespace detail

/// A KA kernel for backend B: the kernel function F with optional static sizes. S is the static
/// work-group size as a type (ki::ka::groupsize<...>, ki/ka/sizes.hpp), known to the kernel
/// body at compile time, or dynamic_size (a static size given as a ki::dims value is checked at
/// each launch, but the body sees it only at run time). F is the device form of the function
/// given to the constructor (ki::device_callable_t; the function itself where it has no
/// argconvert of its own).
template <class B, class F, class S = dynamic_size>
class kernel {
  static_assert(ki::detail::device_form_ok<F>());

 public:
  template <class H>
  kernel(const B& b, H&& f) : kernel(b, ki::detail::convert_callable(b, std::forward<H>(f))) {}
  template <class H>
  kernel(const B& b, H&& f, dims groupsize) : kernel(b, std::forward<H>(f)) {
    size_ = groupsize;
    check_size();
  }
  template <class H>
  kernel(const B& b, H&& f, dims groupsize, ki::ka::ndrange range) : kernel(b, std::forward<H>(f)) {
    size_ = groupsize;
    range_ = range;
    check_range();
    check_size();
  }
  /// With a static work-group size as a type: kernel(b, f, ki::ka::groupsize<16, 16>[, ndrange]).
  template <class H, std::int64_t... D>
  kernel(const B& b, H&& f, static_size<D...>) : kernel(b, std::forward<H>(f)) {
    size_ = dims(D...);
    check_size();
  }
  template <class H, std::int64_t... D>
  kernel(const B& b, H&& f, static_size<D...>, ki::ka::ndrange range) : kernel(b, std::forward<H>(f)) {
    size_ = dims(D...);
    range_ = range;
    check_range();
    check_size();
  }

  /// Launch with the static ndrange.
  template <class... A>
  requires(sizeof...(A) == 0 ||
           !std::is_same_v<std::remove_cvref_t<std::tuple_element_t<0, std::tuple<A...>>>, launch_options>) void
  operator()(A&&... args) const {
    launch(launch_options{}, std::forward<A>(args)...);
  }
  /// Launch with a (dynamic) ndrange and work-group size.
  template <class... A>
  void operator()(const launch_options& o, A&&... args) const {
    launch(o, std::forward<A>(args)...);
  }

  const B& backend() const { return b_; }
  /// The kernel function's device form (converted once, at construction).
  const F& function() const { return f_; }
  /// The function as given, where its own argconvert converted it (kept alive by the kernel and
  /// its copies); null otherwise (see ki::kernel::host_callable).
  const std::shared_ptr<const void>& host_callable() const { return host_; }
  /// The static work-group size and ndrange, where given.
  const dims& workgroupsize() const { return size_; }
  const ki::ka::ndrange& static_ndrange() const { return range_; }

 private:
  kernel(const B& b, ki::detail::converted_callable<F>&& c)
      : b_(b), f_(std::move(c.device)), host_(std::move(c.host)) {}
  void check_range() const {
    if (!range_.given()) detail::bad("kernel: the static ndrange is empty (give 1 to 3 extents or ranges)");
    if (range_.has_negative_extent()) detail::bad("kernel: ndrange " + range_.str() + ": an extent must be at least 0");
    detail::check_not_too_large(range_);
  }
  /// A static work-group size, at construction: against the device's limits too (the active
  /// device's now; a launch checks again, on the device active then), and with a static ndrange
  /// the whole geometry (its rank, its number of work-groups).
  void check_size() const {
    if (!size_.given()) detail::bad("kernel: the static workgroupsize is empty (give 1 to 3 sizes)");
    for (int d = 0; d < size_.rank(); ++d)
      if (size_.too_large(d) || size_[d] < 1)
        detail::bad("kernel: workgroupsize " + size_.str() + ": each dimension must be at least 1");
    if (range_.given()) (void)detail::resolve(b_, range_, size_, launch_options{});
    else detail::check_groupsize(b_, size_);
  }
  /// An argument as the kernel receives it: converted by argconvert, a Const one as a span of
  /// const elements.
  template <class A>
  auto convert(A&& a) const {
    using V = std::remove_cvref_t<A>;
    if constexpr (detail::is_const_arg<V>::value) {
      auto c = argconvert(b_, a.a);
      static_assert(detail::span_of<decltype(c)>::value,
                    "ki::ka::Const: the argument must be an array or a span (it becomes a ki::span<const T>)");
      return ki::span<const typename detail::span_of<decltype(c)>::element>(c);
    } else {
      return argconvert(b_, std::forward<A>(a));
    }
  }
  template <class... A>
  void launch(const launch_options& o, A&&... args) const {
    const geometry g = detail::resolve(b_, range_, size_, o);
    const auto launch_with = [&](const auto&... c) {
      if constexpr (sizeof...(A) > 0) {
        const detail::arg_memory m[] = {detail::memory_of(c, detail::is_const_arg<std::remove_cvref_t<A>>::value)...};
        detail::check_const(m, sizeof...(A));
      }
      backend_traits<B>::template ka_launch<S>(b_, g, f_, o.name, c...);
    };
    launch_with(convert(std::forward<A>(args))...);
  }

  B b_;
  F f_;
  std::shared_ptr<const void> host_;
  dims size_{};
  ki::ka::ndrange range_{};
};

template <class B, class F>
kernel(const B&, F) -> kernel<B, ki::device_callable_t<B, F>>;
template <class B, class F>
kernel(const B&, F, dims) -> kernel<B, ki::device_callable_t<B, F>>;
template <class B, class F>
kernel(const B&, F, dims, ki::ka::ndrange) -> kernel<B, ki::device_callable_t<B, F>>;
template <class B, class F, std::int64_t... D>
kernel(const B&, F, static_size<D...>) -> kernel<B, ki::device_callable_t<B, F>, static_size<D...>>;
template <class B, class F, std::int64_t... D>
kernel(const B&, F, static_size<D...>, ki::ka::ndrange) -> kernel<B, ki::device_callable_t<B, F>, static_size<D...>>;

}  // namespace ki::ka
