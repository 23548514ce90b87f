// The KA layer's kernel body: group-level code, with the per-work-item statements explicit.
//
// A KA kernel is a callable `template <class G> void operator()(G& g, args...) const`. Its body
// is the code of a work-group (@uniform values are its plain local variables); per-work-item
// statements are g.items([&](auto i) { ... }), run for each work-item inside the ndrange (KA's
// bounds checking: the padding items of a partial group run the group-level code, and the
// collectives, but no item statement). g.synchronize() separates phases (@synchronize).
//
// How a CPU backend runs it (this file: cpu_group): the group-level code once per work-group,
// each items() as a plain loop over the group's work-items (x innermost), so phases are loops the
// compiler can vectorise and no work-item ever needs a stack of its own. The oracle runs a
// phase's work-items in the order its exploration seed picks (forward, reverse, random), so
// that a dependence on order inside a phase shows up under ki-check.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <type_traits>

#include <ki/ka/ndrange.hpp>
#include <ki/local_memory.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#include <ki/xyz.hpp>

namespace ki::ka {

namespace detail {
using i64 = std::int64_t;

/// What the backend's runner provides to a running group (memory that lives until it ends).
class cpu_services {
 public:
  /// The group's local memory for the call site `key` (uninitialised; the oracle poisons it).
  virtual void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) = 0;
  /// Private memory: `bytes` for the group's work-items together (uninitialised).
  virtual void* private_memory(std::size_t bytes, std::size_t align, const source_location& where) = 0;

 protected:
  ~cpu_services() = default;
};

/// Where a phase failed: the work-item (local id) and the items() call.
struct phase_failure {
  xyz<i64> local{};
  source_location where{};
  bool happened = false;
};
}  // namespace detail

class cpu_group;

/// A work-item inside items(): its indices (spec: @index). Global / Group / Local x Linear /
/// Cartesian (ki::xyz, the shifted indices) / NTuple (std::array of 3).
class cpu_item {
 public:
  KI_ALWAYS_INLINE cpu_item(const cpu_group& g, std::int64_t x, std::int64_t y, std::int64_t z) : g_(g), l_{x, y, z} {}
  /// @index(Local, Cartesian): within the work-group.
  xyz<std::int64_t> local() const { return l_; }
  /// @index(Local, Linear): x fastest, from 0.
  inline std::int64_t local_linear() const;
  /// @index(Global, Cartesian): the index in the ndrange, shifted by its ranges' firsts.
  inline xyz<std::int64_t> global() const;
  /// @index(Global, Linear): the region's indices counted from 0, x fastest.
  inline std::int64_t global_linear() const;
  /// @index(Group, Cartesian) and (Group, Linear).
  inline xyz<std::int64_t> group() const;
  inline std::int64_t group_linear() const;
  /// The NTuple forms.
  std::array<std::int64_t, 3> local_tuple() const { return {l_.x, l_.y, l_.z}; }
  std::array<std::int64_t, 3> global_tuple() const {
    const auto g = global();
    return {g.x, g.y, g.z};
  }

 private:
  friend class cpu_group;
  const cpu_group& g_;
  xyz<std::int64_t> l_;
};

/// Per work-item storage that survives synchronize (@private T (N,)): element k of work-item i
/// is p[i][k] (p(i) for k = 0).
template <class T, std::size_t N>
class private_array {
 public:
  private_array(T* p, std::int64_t group_items) : p_(p), items_(group_items) {}
  ki::span<T> operator[](const cpu_item& i) const {
    return {p_ + i.local_linear() * static_cast<std::int64_t>(N), static_cast<std::int64_t>(N)};
  }
  T& operator()(const cpu_item& i) const { return p_[i.local_linear() * static_cast<std::int64_t>(N)]; }
  static constexpr std::size_t size() { return N; }

 private:
  T* p_;
  std::int64_t items_;
};

/// The group a CPU backend runs (the `G` of a KA kernel's operator() on reference and simd_cpu).
class cpu_group {
 public:
  /// The launch's geometry, and this group's id; `order` (if not null) lists the local linear ids
  /// of the group's work-items inside the ndrange in the order each phase runs them.
  cpu_group(const ndrange& range, xyz<std::int64_t> groupsize, xyz<std::int64_t> groups, detail::cpu_services& s)
      : range_(range), size_(groupsize), groups_(groups), services_(&s) {
    extents_ = range.extents();
    firsts_ = range.firsts();
  }

  /// Per group (the runner calls it before the kernel runs).
  void start(xyz<std::int64_t> id, const std::int64_t* order, std::int64_t order_count) {
    id_ = id;
    base_ = {id.x * size_.x, id.y * size_.y, id.z * size_.z};
    active_ = {clip(extents_.x - base_.x, size_.x), clip(extents_.y - base_.y, size_.y),
               clip(extents_.z - base_.z, size_.z)};
    order_ = order;
    order_count_ = order_count;
    failure_ = {};
  }

  // --- group-level queries (@groupsize, @ndrange, @index(Group, ...)) ---
  xyz<std::int64_t> groupsize() const { return size_; }
  std::int64_t groupsize_linear() const { return size_.x * size_.y * size_.z; }
  /// @ndrange(): the extents of the index space.
  xyz<std::int64_t> ndrange_extents() const { return extents_; }
  xyz<std::int64_t> group() const { return id_; }
  std::int64_t group_linear() const { return id_.x + groups_.x * (id_.y + groups_.y * id_.z); }
  xyz<std::int64_t> num_groups() const { return groups_; }
  /// The work-items of this group inside the ndrange, per dimension (a partial group has fewer).
  xyz<std::int64_t> active() const { return active_; }

  /// Runs f(item) for every work-item of the group inside the ndrange: one phase. x innermost,
  /// in order (or in the oracle's chosen order). An exception thrown by f is the work-item's.
  template <class F>
  KI_ALWAYS_INLINE void items(F&& f, source_location where = source_location::current()) {
    std::int64_t x = 0, y = 0, z = 0;
    try {
      if (order_ == nullptr) [[likely]] {
        for (z = 0; z < active_.z; ++z)
          for (y = 0; y < active_.y; ++y)
            for (x = 0; x < active_.x; ++x) f(cpu_item(*this, x, y, z));
      } else {
        for (std::int64_t k = 0; k < order_count_; ++k) {
          const std::int64_t l = order_[k];
          x = l % size_.x, y = l / size_.x % size_.y, z = l / (size_.x * size_.y);
          f(cpu_item(*this, x, y, z));
        }
      }
    } catch (...) {
      failure_ = {{x, y, z}, where, true};
      throw;
    }
  }

  /// A phase over the first `count` work-items in local linear order (of those inside the
  /// ndrange): what items(f) does with `if (i.local_linear() < count)` around the body, as a loop
  /// over just those work-items. Not a construct of the spec, a way to write its masked phases
  /// so that the CPU runs a short loop the compiler can vectorise (a tree's halving step is
  /// g.items(step, f) instead of a mask over every work-item); a GPU runs it as the masked form.
  template <class F>
  KI_ALWAYS_INLINE void items(std::int64_t count, F&& f, source_location where = source_location::current()) {
    std::int64_t x = 0, y = 0, z = 0;
    try {
      if (order_ == nullptr) [[likely]] {
        if (size_.y == 1 && size_.z == 1) {
          const std::int64_t n = count < active_.x ? count : active_.x;
          for (x = 0; x < n; ++x) f(cpu_item(*this, x, 0, 0));
        } else {
          for (z = 0; z < active_.z; ++z)
            for (y = 0; y < active_.y; ++y) {
              const std::int64_t row = size_.x * (y + size_.y * z);  // the local linear id of (0, y, z)
              const std::int64_t n = count - row < active_.x ? count - row : active_.x;
              for (x = 0; x < n; ++x) f(cpu_item(*this, x, y, z));
            }
        }
      } else {
        for (std::int64_t k = 0; k < order_count_; ++k) {
          const std::int64_t l = order_[k];
          if (l >= count) continue;
          x = l % size_.x, y = l / size_.x % size_.y, z = l / (size_.x * size_.y);
          f(cpu_item(*this, x, y, z));
        }
      }
    } catch (...) {
      failure_ = {{x, y, z}, where, true};
      throw;
    }
  }

  /// @groupreduce(op, val, neutral): op over every work-item's f(item), to the whole group (the
  /// value is group-level: every work-item sees it). Padding work-items of a partial group
  /// contribute `neutral` without f being called for them. The fold runs in local linear order
  /// (the spec asks op to be associative and commutative, so any order would do; this one is
  /// exact for the others too). A collective: every work-item reaches it.
  template <class Op, class T, class F>
  T reduce(Op op, T neutral, F&& f, source_location where = source_location::current()) {
    T acc = neutral;
    fold_in_order(op, neutral, f, where, [&](const cpu_item&, const T& v) { acc = op(acc, v); });
    return acc;
  }

  /// @groupscan(op, val, neutral): for each work-item, op over the values of the work-items up to
  /// it (inclusive) or before it (exclusive: `inclusive` false), in @index(Local, Linear) order,
  /// exact for non-commutative operators; padding work-items contribute `neutral` unevaluated.
  /// The results are per work-item: r(i).
  template <class Op, class T, class F>
  private_array<T, 1> scan(Op op, T neutral, F&& f, bool inclusive = true,
                           source_location where = source_location::current()) {
    private_array<T, 1> r = private_<T, 1>(where);
    T acc = neutral;
    fold_in_order(op, neutral, f, where, [&](const cpu_item& i, const T& v) {
      if (!inclusive) r(i) = acc;
      acc = op(acc, v);
      if (inclusive) r(i) = acc;
    });
    return r;
  }

  /// @synchronize(): on a CPU backend phases already run one after another; nothing to do.
  void synchronize() const {}
  /// @synchronize(cond): on the CPU the synchronisation always happens (cond is not evaluated
  /// for its effects: the spec forbids them).
  void synchronize(bool) const {}

  /// @localmem T (Dims...): the group's memory for the call site `key` (a fresh lambda, as for
  /// ki::localmemory), uninitialised, shared by the group's work-items.
  template <class T, std::size_t... Dims, class Key>
  local_array<T, Dims...> localmem(Key, source_location where = source_location::current()) {
    static_assert(std::is_class_v<Key>, "ki::ka: g.localmem<T, N>(key): pass a fresh lambda as the call-site key");
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: localmem<T>: T must be trivially constructible and destructible");
    constexpr std::size_t count = (Dims * ...);
    void* p = services_->local_memory(&ki::detail::call_site_tag<Key>, sizeof(T) * count, alignof(T), where);
    return local_array<T, Dims...>(static_cast<T*>(p));
  }

  /// @private T (N,): N values per work-item that survive synchronize.
  template <class T, std::size_t N = 1>
  private_array<T, N> private_(source_location where = source_location::current()) {
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: private_<T>: T must be trivially constructible and destructible");
    const std::int64_t n = groupsize_linear();
    void* p = services_->private_memory(sizeof(T) * N * static_cast<std::size_t>(n), alignof(T), where);
    return private_array<T, N>(static_cast<T*>(p), n);
  }

  /// Where the last phase failed (the runner names the work-item and the items() call).
  // (defined below: the fold's phases)
  const detail::phase_failure& failure() const { return failure_; }

 private:
  friend class cpu_item;

  /// Calls step(item, value) for every work-item of the group in local linear order, value being
  /// f(item) for those inside the ndrange and `neutral` for padding ones. The values are computed
  /// first, in the phase's order (the oracle's may differ from local linear order), then folded.
  template <class Op, class T, class F, class Step>
  void fold_in_order(Op&, const T& neutral, F& f, const source_location& where, Step&& step) {
    std::optional<private_array<T, 1>> v;
    if (order_ != nullptr) {
      v.emplace(private_<T, 1>(where));
      items([&](const cpu_item& i) { (*v)(i) = f(i); }, where);
    }
    for (std::int64_t z = 0; z < size_.z; ++z)
      for (std::int64_t y = 0; y < size_.y; ++y)
        for (std::int64_t x = 0; x < size_.x; ++x) {
          const cpu_item i(*this, x, y, z);
          const bool inside = x < active_.x && y < active_.y && z < active_.z;
          if (!inside) {
            step(i, neutral);
          } else if (order_ != nullptr) {
            step(i, (*v)(i));
          } else {
            try {
              step(i, f(i));
            } catch (...) {
              failure_ = {{x, y, z}, where, true};
              throw;
            }
          }
        }
  }
  static std::int64_t clip(std::int64_t left, std::int64_t size) { return left < 0 ? 0 : left < size ? left : size; }

  ndrange range_;
  xyz<std::int64_t> size_, groups_, extents_, firsts_;
  detail::cpu_services* services_;
  xyz<std::int64_t> id_{}, base_{}, active_{};
  const std::int64_t* order_ = nullptr;
  std::int64_t order_count_ = 0;
  detail::phase_failure failure_{};
};

inline std::int64_t cpu_item::local_linear() const { return l_.x + g_.size_.x * (l_.y + g_.size_.y * l_.z); }
inline xyz<std::int64_t> cpu_item::global() const {
  return {g_.firsts_.x + g_.base_.x + l_.x, g_.firsts_.y + g_.base_.y + l_.y, g_.firsts_.z + g_.base_.z + l_.z};
}
inline std::int64_t cpu_item::global_linear() const {
  return (g_.base_.x + l_.x) + g_.extents_.x * ((g_.base_.y + l_.y) + g_.extents_.y * (g_.base_.z + l_.z));
}
inline xyz<std::int64_t> cpu_item::group() const { return g_.id_; }
inline std::int64_t cpu_item::group_linear() const { return g_.group_linear(); }

}  // namespace ki::ka
