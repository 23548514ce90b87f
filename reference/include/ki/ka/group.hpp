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
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <optional>
#include <type_traits>

#include <ki/ka/ndrange.hpp>
#include <ki/local_memory.hpp>
#include <ki/rand.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#include <ki/xyz.hpp>
#include <ki/ka/group_like.hpp>
#include <ki/ka/local_array.hpp>
#include <ki/ka/sizes.hpp>
#include <ki/detail/public_begin.hpp>  // (a private header follows)
#include <ki/detail/type_name.hpp>
#include <ki/detail/public_end.hpp>

#ifndef KI_CHECKED_ACCESS
#define KI_CHECKED_ACCESS 0  // (as ki/detail/cpu/checked.hpp says; GPU passes do not include it)
#endif

// Before the loop over x of an unchecked phase: its iterations (work-items) are independent, so
// the compiler may run them as SIMD lanes without proving that their accesses do not overlap.
#if defined(__CUDACC__) || defined(__HIPCC__)
#define KI_DETAIL_KA_LANES
#elif defined(__clang__)
#define KI_DETAIL_KA_LANES _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define KI_DETAIL_KA_LANES _Pragma("GCC ivdep")
#else
#define KI_DETAIL_KA_LANES
#endif

namespace ki {
class kernel_error;
}

namespace ki::ka {

namespace detail {
using i64 = std::int64_t;

/// A work-item's random stream (ki::rand<T>(i), ki::seed(i, s)): the key (the launch's seed,
/// or ki::seed's), its draws so far, whether it seeded.
struct rand_stream {
  std::uint64_t key;
  std::uint32_t draws;
  bool seeded;
};

/// What the backend's runner provides to a running group (memory that lives until it ends).
class cpu_services {
 public:
  /// The group's random streams, one per work-item (local linear id), fresh: the launch's seed,
  /// no draws (the group's memory: asked for at its first draw).
  virtual rand_stream* rand_streams() = 0;
  /// The oracle's checks of ki::seed (ki/rand.hpp; nothing elsewhere): before work-item `local`,
  /// which has drawn `draws` numbers, seeds with s at `where`; before its first draw, unseeded.
  virtual void rand_seeded(xyz<std::int64_t> local, std::uint64_t s, std::uint32_t draws,
                           const source_location& where) = 0;
  virtual void rand_unseeded(xyz<std::int64_t> local, const source_location& where) = 0;
  /// The group's local memory for the call site `key` (uninitialised; the oracle poisons it).
  virtual void* local_memory(const void* key, std::size_t bytes, std::size_t align, const source_location& where) = 0;
  /// g.localmem<T>(key, nx, ny, nz) (element `size` bytes): the group's memory for the call
  /// site `key`, counted against the launch's dynamic_local_memory; throws the error that names
  /// bad extents, extents other than at the site's earlier run, or a launch without the bytes.
  virtual void* dynamic_local_memory(const void* key, xyz<std::int64_t> extents, std::size_t size, std::size_t align,
                                     const char* type, const source_location& where) = 0;
  /// Private memory: `bytes` for the group's work-items together (uninitialised). `filled`: the
  /// runtime writes every element before the kernel can read one (a collective's results), so
  /// checked-access mode does not look for reads of elements never written there.
  virtual void* private_memory(std::size_t bytes, std::size_t align, const source_location& where,
                               bool filled = false) = 0;
  /// A collective's groupsize bound (the spec's `groupsize = n`) is below the work-group's size:
  /// throws the error that names both (the runner reports it for the group).
  [[noreturn]] virtual void bound_exceeded(const char* what, std::int64_t bound, std::int64_t size,
                                           const source_location& where) = 0;
  /// A phase's local_ids (g.items(ids, f) at `where`) with first < 0, count < 0 or stride < 1:
  /// throws the error that names them.
  [[noreturn]] virtual void bad_ids(std::int64_t first, std::int64_t count, std::int64_t stride,
                                    const source_location& where) = 0;
  /// Group-level code (`what`, at `where`) called inside the phase at `phase` (a work-item's
  /// statements): throws the error that names both (the runner reports it for that work-item).
  [[noreturn]] virtual void misplaced(const char* what, const source_location& where, const source_location& phase) = 0;

 protected:
  ~cpu_services() = default;
};

/// What a tracer (the oracle's trace hook, ki/reference/events.hpp) is told of a KA group, if
/// one watches: each work-item's run of a phase and each synchronisation point, in order.
class ka_tracer {
 public:
  virtual void group_begins(xyz<i64> group) = 0;
  virtual void phase(xyz<i64> group, const source_location& where, i64 item) = 0;
  virtual void sync(xyz<i64> group, const char* what, const source_location& where) = 0;
  virtual void group_ends(xyz<i64> group, const kernel_error* failure) = 0;

 protected:
  ~ka_tracer() = default;
};

/// Where a phase failed: the work-item (local id) and the items() call.
struct phase_failure {
  xyz<i64> local{};
  source_location where{};
  bool happened = false;
};

/// A running group's state: the launch's geometry, the group's place in it, the phases' order.
/// A plain value: a kernel with a static work-group size runs on a copy typed with that size.
struct group_state {
  xyz<i64> size{}, groups{}, extents{}, firsts{};
  cpu_services* services = nullptr;
  xyz<i64> id{}, base{}, active{};
  /// The oracle: the local linear ids of the work-items inside the ndrange, in the order each
  /// phase runs them, each marked before it runs (current), so that a fault names it. Null:
  /// phases are plain loops (simd_cpu).
  const i64* order = nullptr;
  i64 order_count = 0;
  /// The oracle's order is forward (local linear order): phases run the active work-items
  /// directly and do not read the list (the runtime passes an empty one).
  bool order_ascending = false;
  phase_failure failure{};
  /// For the reports of faults (no exception: the runner regains control from a signal): the
  /// phase running (in_phase) and, on the ordered path, its current work-item's local linear id.
  source_location phase{};
  bool in_phase = false;
  i64 current = -1;
  /// The state of the statically sized copy the kernel runs on, if any (its phases are there).
  const group_state* view = nullptr;
  /// No order, every work-item inside the ndrange: the unchecked phases of a kernel
  /// with a static size run as loops of constant length (checked ones keep their path: routed
  /// there, GCC 12 placed their loops in the cold section, 1.3x slower on the KA tree). Set by
  /// start_group(), in the runtime: computed in the kernel's function, the same happened.
  bool whole = false;
  /// Counts the synchronisation points passed (synchronize, collectives): checked-access mode
  /// orders two work-items' accesses only across one.
  i64 epoch = 0;
  /// The tracer, while one watches (the oracle's ordered phases only), else null.
  ka_tracer* tracer = nullptr;
  /// The group's random streams once a work-item has drawn or seeded (the runner's memory),
  /// else null. (Mutable: work-items draw through the group they see as const.)
  mutable rand_stream* rand = nullptr;
};

/// Starts the group `id` in st (the runner calls it before the kernel runs for the group).
/// `order` (if not null) lists the local linear ids of the group's work-items inside the ndrange
/// in the order each phase runs them (`ascending`: in increasing order).
inline void start_group(group_state& st, xyz<i64> id, const i64* order, i64 order_count, bool ascending = false,
                        ka_tracer* tracer = nullptr) {
  const auto clip = [](i64 left, i64 size) { return left < 0 ? 0 : left < size ? left : size; };
  const auto s = st.size;
  st.id = id;
  st.base = {id.x * s.x, id.y * s.y, id.z * s.z};
  st.active = {clip(st.extents.x - st.base.x, s.x), clip(st.extents.y - st.base.y, s.y),
               clip(st.extents.z - st.base.z, s.z)};
  st.order = order;
  st.order_count = order_count;
  st.order_ascending = ascending;
  // (Field by field: `st.failure = {}` built the value on the stack and copied it with
  // overlapping loads, a store-forwarding stall per group: 10% of foreach_index's vector add.)
  st.failure.local = {};
  st.failure.where = {};
  st.failure.happened = false;
  st.phase = {};
  st.whole = order == nullptr && st.active == s;
  st.epoch = 0;
  st.tracer = tracer;
  st.rand = nullptr;
}
}  // namespace detail

template <class S>
class basic_cpu_group;

/// A work-item inside items(): its indices (spec: @index). Global / Group / Local x Linear /
/// Cartesian (ki::xyz, the shifted indices) / NTuple (std::array of 3).
template <class S>
class basic_cpu_item {
 public:
  KI_ALWAYS_INLINE basic_cpu_item(const basic_cpu_group<S>& g, std::int64_t x, std::int64_t y, std::int64_t z)
      : g_(g), l_{x, y, z} {}
  /// @index(Local, Cartesian): within the work-group.
  xyz<std::int64_t> local() const { return l_; }
  /// @index(Local, Linear): x fastest, from 0.
  std::int64_t local_linear() const {
    const auto s = g_.groupsize();
    return l_.x + s.x * (l_.y + s.y * l_.z);
  }
  /// @index(Global, Cartesian): the index in the ndrange, shifted by its ranges' firsts.
  xyz<std::int64_t> global() const {
    const auto& t = g_.st_;
    return {t.firsts.x + t.base.x + l_.x, t.firsts.y + t.base.y + l_.y, t.firsts.z + t.base.z + l_.z};
  }
  /// @index(Global, Linear): the region's indices counted from 0, x fastest.
  std::int64_t global_linear() const {
    const auto& t = g_.st_;
    return (t.base.x + l_.x) + t.extents.x * ((t.base.y + l_.y) + t.extents.y * (t.base.z + l_.z));
  }
  /// @index(Group, Cartesian) and (Group, Linear).
  xyz<std::int64_t> group() const { return g_.group(); }
  std::int64_t group_linear() const { return g_.group_linear(); }
  /// The NTuple forms.
  std::array<std::int64_t, 3> local_tuple() const { return {l_.x, l_.y, l_.z}; }
  std::array<std::int64_t, 3> global_tuple() const {
    const auto g = global();
    return {g.x, g.y, g.z};
  }
  std::array<std::int64_t, 3> group_tuple() const {
    const auto g = group();
    return {g.x, g.y, g.z};
  }

  /// ki::rand<T>(i) (below): the next number of this work-item's stream, the one KI's
  /// ki::rand<T>() draws for the work-item at the same place of a KI launch of the same groups
  /// (its global linear id over the padded grid, x fastest).
  template <class T>
  T draw(const source_location& where) const {
    detail::rand_stream& s = stream();
    if (s.draws == 0 && !s.seeded) [[unlikely]]
      g_.st_.services->rand_unseeded(l_, where);
    return ki::rand_value<T>(s.key, rand_linear(), s.draws++);
  }
  /// ki::seed(i, s): this work-item's stream is key s's from draw 0.
  void seed(std::uint64_t key, const source_location& where) const {
    detail::rand_stream& s = stream();
    g_.st_.services->rand_seeded(l_, key, s.draws, where);
    s = {key, 0, true};
  }

 private:
  detail::rand_stream& stream() const {
    const auto& st = g_.st_;
    if (st.rand == nullptr) [[unlikely]]
      st.rand = st.services->rand_streams();
    return st.rand[local_linear()];
  }
  std::uint64_t rand_linear() const {
    const auto& t = g_.st_;
    const std::int64_t sx = t.groups.x * t.size.x, sy = t.groups.y * t.size.y;
    return static_cast<std::uint64_t>((t.base.x + l_.x) + sx * ((t.base.y + l_.y) + sy * (t.base.z + l_.z)));
  }

  const basic_cpu_group<S>& g_;
  xyz<std::int64_t> l_;
};

/// Per work-item storage that survives synchronize (@private T (N,)): element k of work-item i
/// is p[i][k] (p(i) for k = 0).
template <class T, std::size_t N>
class private_array {
 public:
  private_array(T* p, std::int64_t group_items) : p_(p), items_(group_items) {}
  template <class I>
  ki::span<T> operator[](const I& i) const {
    return {p_ + i.local_linear() * static_cast<std::int64_t>(N), static_cast<std::int64_t>(N)};
  }
  template <class I>
  T& operator()(const I& i, [[maybe_unused]] source_location where = source_location::current()) const {
    T* p = p_ + i.local_linear() * static_cast<std::int64_t>(N);
#if KI_CHECKED_ACCESS
    ki::detail::checked::note(p, static_cast<std::int64_t>(N), sizeof(T), 0, where);
#endif
    return *p;
  }
  static constexpr std::size_t size() { return N; }
  /// For the runtime: the element, never recorded by checked-access mode (the collectives write
  /// and read their own storage outside the work-items' statements).
  template <class I>
  T& unrecorded(const I& i) const {
    return p_[i.local_linear() * static_cast<std::int64_t>(N)];
  }

 private:
  T* p_;
  std::int64_t items_;
};

/// The group a CPU backend runs (the `G` of a KA kernel's operator() on reference and simd_cpu).
/// S is the kernel's static work-group size (ki::ka::groupsize<...>) or dynamic_size.
template <class S>
class basic_cpu_group {
 public:
  using item_type = basic_cpu_item<S>;
  /// The kernel's static work-group size ((0, 0, 0) and 0 when it has none): N = prod(groupsize)
  /// for g.localmem<T, G::static_size_linear>, a constant the compiler can use.
  static constexpr xyz<std::int64_t> static_size = S::value;
  static constexpr std::int64_t static_size_linear = S::linear;

  /// The launch's geometry (the runner's group).
  basic_cpu_group(const ndrange& range, xyz<std::int64_t> groupsize, xyz<std::int64_t> groups,
                  detail::cpu_services& s) {
    st_.size = groupsize;
    st_.groups = groups;
    st_.extents = range.extents();
    st_.firsts = range.firsts();
    st_.services = &s;
  }
  /// The same group, typed with another static size (a kernel with a static size runs on it).
  explicit basic_cpu_group(const detail::group_state& s) : st_(s) {}

  // --- group-level queries (@groupsize, @ndrange, @index(Group, ...)) ---
  xyz<std::int64_t> groupsize() const {
    if constexpr (S::is_static) return S::value;
    else return st_.size;
  }
  std::int64_t groupsize_linear() const {
    if constexpr (S::is_static) return S::linear;
    else return st_.size.x * st_.size.y * st_.size.z;
  }
  /// @ndrange(): the extents of the index space.
  xyz<std::int64_t> ndrange_extents() const { return st_.extents; }
  xyz<std::int64_t> group() const { return st_.id; }
  std::int64_t group_linear() const { return st_.id.x + st_.groups.x * (st_.id.y + st_.groups.y * st_.id.z); }
  xyz<std::int64_t> num_groups() const { return st_.groups; }
  /// The work-items of this group inside the ndrange, per dimension (a partial group has fewer).
  xyz<std::int64_t> active() const { return st_.active; }

  /// Runs f(item) for every work-item of the group inside the ndrange: one phase. x innermost,
  /// in order (or in the oracle's chosen order). An exception thrown by f is the work-item's.
  template <class F>
  KI_ALWAYS_INLINE void items(F&& f, source_location where = source_location::current()) {
    phase<false>(f, where);
  }

  /// The same phase run on simd_cpu as SIMD lanes (an explicit choice: ki/ka/sizes.hpp,
  /// unchecked_t): no bounds check of ki::span or local memory in its statements, and its loop
  /// declared free of dependences between work-items (the model's rule for a phase, which the
  /// oracle's checked-access mode checks), so that the compiler vectorises it across work-items
  /// (docs/performance.md). A bad index here is not reported: the access happens. The oracle
  /// runs it as items(f), every check kept.
  template <class F>
  KI_ALWAYS_INLINE void items(unchecked_t, F&& f, source_location where = source_location::current()) {
    phase<!KI_CHECKED_ACCESS>(f, where);  // (checked-access mode records accesses on the check's path)
  }

  /// A phase over the first `count` work-items in local linear order (of those inside the
  /// ndrange): what items(f) does with `if (i.local_linear() < count)` around the body, as a loop
  /// over just those work-items. Not a construct of the spec, a way to write its masked phases
  /// so that the CPU runs a short loop the compiler can vectorise (a tree's halving step is
  /// g.items(step, f) instead of a mask over every work-item); a GPU runs it as the masked form.
  template <class F>
  KI_ALWAYS_INLINE void items(std::int64_t count, F&& f, source_location where = source_location::current()) {
    ranged_phase<false>(local_ids{.count = count < 0 ? 0 : count}, f, where);  // (the mask t < count)
  }
  /// The same ranged phase as SIMD lanes on simd_cpu, as items(unchecked, f) (the oracle keeps
  /// every check).
  template <class F>
  KI_ALWAYS_INLINE void items(unchecked_t, std::int64_t count, F&& f,
                              source_location where = source_location::current()) {
    ranged_phase<!KI_CHECKED_ACCESS>(local_ids{.count = count < 0 ? 0 : count}, f, where);
  }
  /// A phase over the work-items with local linear ids first, first + stride, ... (count of
  /// them at most; ki/ka/sizes.hpp): what items(f) does under the mask
  /// `t >= first && (t - first) % stride == 0 && (t - first) / stride < count`, as a loop over
  /// just those work-items (stride 1: rows of consecutive work-items, vectorised where the
  /// phase is unchecked).
  template <class F>
  KI_ALWAYS_INLINE void items(const local_ids& ids, F&& f, source_location where = source_location::current()) {
    ranged_phase<false>(ids, f, where);
  }
  template <class F>
  KI_ALWAYS_INLINE void items(unchecked_t, const local_ids& ids, F&& f,
                              source_location where = source_location::current()) {
    ranged_phase<!KI_CHECKED_ACCESS>(ids, f, where);
  }

 private:
  /// items(ids, f) (Unchecked: the checks off in its plain loops, simd_cpu's).
  template <bool Unchecked, class F>
  KI_ALWAYS_INLINE void ranged_phase(const local_ids& ids, F& f, const source_location& where) {
    not_in_phase("g.items(...)", where);
    if (ids.first < 0 || ids.count < 0 || ids.stride < 1) [[unlikely]]
      st_.services->bad_ids(ids.first, ids.count, ids.stride, where);
    std::int64_t x = 0, y = 0, z = 0;
    const auto s = groupsize();
    // The ids run from first to last (inclusive), `stride` apart: n of them inside the group.
    const std::int64_t size = s.x * s.y * s.z;
    const std::int64_t room = ids.first < size ? (size - ids.first - 1) / ids.stride + 1 : 0;
    const std::int64_t n = ids.count < room ? ids.count : room;
    if (n == 0) return;
    const std::int64_t first = ids.first, end = ids.first + (n - 1) * ids.stride + 1;  // (no overflow: <= size)
    // Row (y, z) of a group of width w: its ids [row, row + w), of which [x0, x1) are chosen.
    const auto clip = [](std::int64_t v, std::int64_t hi) { return v < 0 ? 0 : v < hi ? v : hi; };
    const phase_mark mark(st_, where);
    try {
      if (ids.stride == 1) {
        if constexpr (S::is_static && Unchecked) {  // (checked phases keep the general path: group_state::whole)
          if (st_.whole) {
            const checks_off<Unchecked> off;
            constexpr auto w = S::value;
            if constexpr (w.y == 1 && w.z == 1) {
              run_row<Unchecked>(f, x, first, end, 0, 0);
            } else {
              for (z = 0; z < w.z; ++z)
                for (y = 0; y < w.y; ++y) {
                  const std::int64_t row = w.x * (y + w.y * z);  // the local linear id of (0, y, z)
                  run_row<Unchecked>(f, x, clip(first - row, w.x), clip(end - row, w.x), y, z);
                }
            }
            return;
          }
        }
      }
      if (st_.order == nullptr) [[likely]] {
        const auto a = st_.active;
        const checks_off<Unchecked> off;
        if (ids.stride == 1) {
          if (s.y == 1 && s.z == 1) {
            run_row<Unchecked>(f, x, first, end < a.x ? end : a.x, 0, 0);
          } else {
            for (z = 0; z < a.z; ++z)
              for (y = 0; y < a.y; ++y) {
                const std::int64_t row = s.x * (y + s.y * z);
                run_row<Unchecked>(f, x, clip(first - row, a.x), clip(end - row, a.x), y, z);
              }
          }
        } else {
          for (std::int64_t t = first; t < end; t += ids.stride) {
            x = t % s.x, y = t / s.x % s.y, z = t / (s.x * s.y);
            if (x < a.x && y < a.y && z < a.z) f(item_type(*this, x, y, z));
          }
        }
      } else {
        ordered_items(f, ids, end, x, y, z);
      }
    } catch (...) {
      st_.failure = {{x, y, z}, where, true};
      throw;
    }
  }

 public:
  /// The grid-stride loop as a phase: each work-item i inside the ndrange runs f(i, k) for
  /// k = i.global_linear(), then k + count, k + 2 count, ... while k < n, where count is the
  /// number of work-items in the ndrange (so the launch visits every k in [0, n) exactly once).
  /// Not a construct of the spec: the same phase as
  ///   g.items([&](auto i) { for (k = i.global_linear(); k < n; k += count) f(i, k); })
  /// (what a GPU runs), written so that a CPU can interchange the two loops: simd_cpu runs the
  /// strides outermost and the group's work-items innermost, so that consecutive work-items
  /// touch consecutive k (memory in order, not one stride apart per work-item; PoCL's W4
  /// histogram: 1.6x faster). That order is one of those the model allows (the work-items of a
  /// phase are unordered); the oracle runs each work-item's whole loop in its schedule's order.
  template <class F>
  KI_ALWAYS_INLINE void grid_stride(std::int64_t n, F&& f, source_location where = source_location::current()) {
    const auto e = st_.extents;
    const std::int64_t count = e.x * e.y * e.z;
    if (st_.order != nullptr) {  // the oracle: whole work-items, in its order
      items(
          [&](const item_type& i) {
            for (std::int64_t k = i.global_linear(); k < n; k += count) f(i, k);
          },
          where);
      return;
    }
    const phase_mark mark(st_, where);
    const auto a = st_.active;
    const auto b = st_.base;
    // k of work-item (x, y, z) at stride s is s + row(y, z) + x, row being the global linear
    // index of (0, y, z): one contiguous run of k per row.
    for (std::int64_t s = 0; b.x + e.x * (b.y + e.y * b.z) + s < n; s += count)
      for (std::int64_t z = 0; z < a.z; ++z)
        for (std::int64_t y = 0; y < a.y; ++y) {
          const std::int64_t row = s + b.x + e.x * ((b.y + y) + e.y * (b.z + z));
          const std::int64_t m = n - row < a.x ? n - row : a.x;  // (the last stride may end inside)
          stride_row(f, row, m, y, z, where);
        }
  }

  /// @groupreduce(op, val, neutral; groupsize): op over every work-item's f(item), to the whole
  /// group (the value is group-level: every work-item sees it). Padding work-items of a partial
  /// group contribute `neutral` without f being called for them. The fold runs in local linear
  /// order (the spec asks op to be associative and commutative, so any order would do; this one
  /// is exact for the others too). A collective: every work-item reaches it. o.groupsize, where
  /// given, is the spec's bound on the work-group's size: a larger group is an error naming both.
  template <class Op, class T, class F>
  T reduce(Op op, T neutral, F&& f, collective_options o = {}, source_location where = source_location::current()) {
    check_bound("@groupreduce", o, where);
    T acc = neutral;
    fold_in_order(op, neutral, f, where, [&](const item_type&, const T& v) { acc = op(acc, v); });
    return acc;
  }

  /// @groupscan(op, val, neutral; inclusive, groupsize): for each work-item, op over the values
  /// of the work-items up to it (inclusive) or before it (exclusive: o.inclusive false), in
  /// @index(Local, Linear) order, exact for non-commutative operators; padding work-items
  /// contribute `neutral` unevaluated. The results are per work-item: r(i).
  template <class Op, class T, class F>
  private_array<T, 1> scan(Op op, T neutral, F&& f, collective_options o = {},
                           source_location where = source_location::current()) {
    check_bound("@groupscan", o, where);
    private_array<T, 1> r = private_<T, 1>(where, true);
    T acc = neutral;
    fold_in_order(op, neutral, f, where, [&](const item_type& i, const T& v) {
      if (!o.inclusive) r.unrecorded(i) = acc;
      acc = op(acc, v);
      if (o.inclusive) r.unrecorded(i) = acc;
    });
    return r;
  }

  /// @synchronize(): on a CPU backend phases already run one after another; only counted (the
  /// oracle's checked-access mode orders accesses across it).
  void synchronize(source_location where = source_location::current()) {
    not_in_phase("g.synchronize()", where);
    ++st_.epoch;
    if (st_.tracer != nullptr) [[unlikely]]
      st_.tracer->sync(st_.id, "synchronize", where);
  }
  /// @synchronize(cond): on the CPU the synchronisation always happens (cond is not evaluated
  /// for its effects: the spec forbids them).
  void synchronize(bool, source_location where = source_location::current()) { synchronize(where); }

  /// @localmem T (Dims...): the group's memory for the call site `key` (a fresh lambda, as for
  /// ki::localmemory), uninitialised, shared by the group's work-items. For @localmem T (N,)
  /// with N = prod(@groupsize()): localmem<T, G::static_size_linear>, in a kernel constructed
  /// with a static work-group size (ki::ka::groupsize<...>); without one N is 0 and it does not
  /// compile.
  template <class T, std::size_t... Dims, class Key>
  local_array<T, Dims...> localmem(Key, source_location where = source_location::current()) {
    static_assert(std::is_class_v<Key>, "ki::ka: g.localmem<T, N>(key): pass a fresh lambda as the call-site key");
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: localmem<T>: T must be trivially constructible and destructible");
    static_assert(((Dims > 0) && ...),
                  "ki::ka: localmem<T, N> with N = 0: for N = prod(groupsize) (G::static_size_linear) construct "
                  "the kernel with a static work-group size, ki::ka::kernel(backend, f, ki::ka::groupsize<...>)");
    constexpr std::size_t count = (Dims * ...);
    void* p = st_.services->local_memory(&ki::detail::call_site_tag<Key>, sizeof(T) * count, alignof(T), where);
    return local_array<T, Dims...>(static_cast<T*>(p));
  }
  /// @localmem T (nx, ny, nz) with extents known only at run time, the same in every work-item
  /// of the group (values of group-level code): local memory sized at launch, taken from the
  /// launch's launch_options::dynamic_local_memory (bytes), which must hold every such call site
  /// the group runs. Otherwise as above: the call site `key` has its memory, the same each time
  /// it runs in the group (with the same extents). The CPU backends check the extents (at least
  /// 0, the same at each run of the site) and that the launch's bytes hold them: a kernel_error
  /// naming the numbers and the line.
  template <class T, class Key>
  ki::span<T> localmem(Key, std::int64_t nx, std::int64_t ny = 1, std::int64_t nz = 1,
                       source_location where = source_location::current()) {
    static_assert(std::is_class_v<Key>, "ki::ka: g.localmem<T>(key, n): pass a fresh lambda as the call-site key");
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: localmem<T>: T must be trivially constructible and destructible");
    not_in_phase("g.localmem<T>(key, extents)", where);
    const xyz<std::int64_t> e{nx, ny, nz};
    void* p = st_.services->dynamic_local_memory(&ki::detail::call_site_tag<Key>, e, sizeof(T), alignof(T),
                                                 ki::detail::type_name<T>(), where);
    return ki::span<T>(static_cast<T*>(p), e);
  }

  /// @private T (N,): N values per work-item that survive synchronize.
  template <class T, std::size_t N = 1>
  private_array<T, N> private_(source_location where = source_location::current()) {
    return private_<T, N>(where, false);
  }

  /// The runner's view: where the last phase failed (it names the work-item and the items()
  /// call), and the whole state (a statically sized copy hands its failure back through it).
  const detail::phase_failure& failure() const { return st_.failure; }
  const detail::group_state& state() const { return st_; }
  /// For the runner (detail::start_group, between the kernel's runs for its groups).
  detail::group_state& state_for_runner() { return st_; }
  void set_failure(const detail::phase_failure& f) { st_.failure = f; }
  void set_view(const detail::group_state* v) { st_.view = v; }

 private:
  friend class basic_cpu_item<S>;

  /// Marks the group's state as inside the phase at `where` for the phase's duration. The runner
  /// reads it after a fault (a signal, not an exception), so the stores must happen where they
  /// are written: the signal fences keep the compiler from dropping or moving them.
  struct phase_mark {
    detail::group_state& st;
    phase_mark(detail::group_state& s, const source_location& where) : st(s) {
      st.phase = where;
      st.in_phase = true;
      st.current = -1;
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
    ~phase_mark() {
      std::atomic_signal_fence(std::memory_order_seq_cst);
      st.in_phase = false;
      std::atomic_signal_fence(std::memory_order_seq_cst);
    }
  };
  /// items(f): the phase (Unchecked: the ki::span checks off in its plain loops, simd_cpu's).
  template <bool Unchecked, class F>
  KI_ALWAYS_INLINE void phase(F& f, const source_location& where) {
    not_in_phase("g.items(...)", where);
    std::int64_t x = 0, y = 0, z = 0;
    const phase_mark mark(st_, where);
    try {
      if constexpr (S::is_static && Unchecked) {  // loops of constant length
        if (st_.whole) {
          const checks_off<Unchecked> off;
          for (z = 0; z < S::value.z; ++z)
            for (y = 0; y < S::value.y; ++y) run_row<true>(f, x, S::value.x, y, z);
          return;
        }
      }
      if (st_.order == nullptr) [[likely]] {
        const auto a = st_.active;
        // (Set after phase_mark's fence, which would make the compiler read it again per access.)
        const checks_off<Unchecked> off;
        if constexpr (S::is_static && !Unchecked) {
          if (a == S::value) {  // a whole group: loops of constant length, unrolled
            for (z = 0; z < S::value.z; ++z)
              for (y = 0; y < S::value.y; ++y) {
#if defined(__GNUC__) && !defined(__clang__) && !defined(__CUDACC__)
#pragma GCC unroll 4
#endif
                for (x = 0; x < S::value.x; ++x) f(item_type(*this, x, y, z));
              }
            return;
          }
        }
        for (z = 0; z < a.z; ++z)
          for (y = 0; y < a.y; ++y) run_row<Unchecked>(f, x, a.x, y, z);
      } else {
        ordered_items(f, groupsize_linear(), x, y, z);
      }
    } catch (...) {
      st_.failure = {{x, y, z}, where, true};
      throw;
    }
  }

  /// ki::detail::span_checks_off for an unchecked phase's duration (an exception thrown by the
  /// phase's statements clears it; a fault: the runner does, ki/cpu/src/ka.cpp).
  template <bool On>
  struct checks_off {
    KI_ALWAYS_INLINE explicit checks_off(bool really = true) {
      if constexpr (On) ki::detail::span_checks_off = really;
    }
    KI_ALWAYS_INLINE ~checks_off() {
      if constexpr (On) ki::detail::span_checks_off = false;
    }
    checks_off(const checks_off&) = delete;
    checks_off& operator=(const checks_off&) = delete;
  };
  /// f for the work-items (0, y, z) .. (n - 1, y, z) of a plain phase, x the loop's counter (the
  /// phase's catch reports it). Lanes (an unchecked phase): the loop declared free of dependences
  /// between iterations, so that it is vectorised across work-items even where the compiler cannot
  /// tell that their accesses do not overlap: local memory against private memory (the tiled
  /// matmul's accumulators), or an array against another part of itself (the tree's halving
  /// step). Exact for a kernel the model allows: work-items of a phase do not touch one element
  /// where one writes (except through atomics, which no compiler runs as lanes: ki/atomic.hpp).
  template <bool Lanes, class F>
  KI_ALWAYS_INLINE void run_row(F& f, std::int64_t& x, std::int64_t n, std::int64_t y, std::int64_t z) {
    run_row<Lanes>(f, x, 0, n, y, z);
  }
  /// The same for the work-items (x0, y, z) .. (x1 - 1, y, z).
  template <bool Lanes, class F>
  KI_ALWAYS_INLINE void run_row(F& f, std::int64_t& x, std::int64_t x0, std::int64_t x1, std::int64_t y,
                                std::int64_t z) {
    if constexpr (Lanes) {
      KI_DETAIL_KA_LANES
      for (x = x0; x < x1; ++x) f(item_type(*this, x, y, z));
    } else {
      for (x = x0; x < x1; ++x) f(item_type(*this, x, y, z));
    }
  }
  /// The oracle's phase (group_state::order): f for the work-items whose local linear id is
  /// below count, in the order's sequence, each marked before it runs; (x, y, z) the running
  /// one's. Forward (order_ascending), the loops run the active work-items directly: reading
  /// the list cost the oracle's KA tree 1.6x. Inlined: as a function of its own, f's address
  /// escaped into it, and GCC kept what the kernel's lambdas capture in memory in simd_cpu's
  /// plain loops too (the checked KA matmul 4x slower, the unchecked tree 1.6x).
  template <class F>
  KI_ALWAYS_INLINE void ordered_items(F& f, std::int64_t count, std::int64_t& x, std::int64_t& y, std::int64_t& z) {
    ordered_items(f, local_ids{.count = count}, count, x, y, z);
  }
  /// The same for the work-items of `ids` (whose ids end before `end`).
  template <class F>
  KI_ALWAYS_INLINE void ordered_items(F& f, const local_ids& ids, std::int64_t end, std::int64_t& x, std::int64_t& y,
                                      std::int64_t& z) {
    const auto s = groupsize();
    const auto chosen = [&](std::int64_t l) {
      return l >= ids.first && l < end && (ids.stride == 1 || (l - ids.first) % ids.stride == 0);
    };
    if (st_.order_ascending) {
      const auto a = st_.active;
      for (z = 0; z < a.z; ++z)
        for (y = 0; y < a.y; ++y) {
          const std::int64_t row = s.x * (y + s.y * z);  // the local linear id of (0, y, z)
          for (x = 0; x < a.x; ++x) {
            if (!chosen(row + x)) continue;
            mark_current(st_, row + x);
            f(item_type(*this, x, y, z));
          }
        }
      return;
    }
    const bool one_d = s.y == 1 && s.z == 1;  // (no division per item)
    for (std::int64_t k = 0; k < st_.order_count; ++k) {
      const std::int64_t l = st_.order[k];
      if (!chosen(l)) continue;
      if (one_d) x = l;
      else x = l % s.x, y = l / s.x % s.y, z = l / (s.x * s.y);
      mark_current(st_, l);
      f(item_type(*this, x, y, z));
    }
  }
  /// The work-item about to run (ordered phases: the oracle's reports of faults name it).
  KI_ALWAYS_INLINE static void mark_current(detail::group_state& st, std::int64_t l) {
    st.current = l;
    std::atomic_signal_fence(std::memory_order_seq_cst);
    if (st.tracer != nullptr) [[unlikely]]
      st.tracer->phase(st.id, st.phase, l);
  }

  /// One row of a grid-stride phase: f(item (x, y, z), row + x) for x < m. Its own function:
  /// inlined into the kernel's body, the loop ran with its counters and the kernel's spans in
  /// memory (GCC 12's registers were taken by the rest of the body), 1.5x slower on the W4
  /// histogram.
  template <class F>
  [[gnu::noinline]] void stride_row(F& f, std::int64_t row, std::int64_t m, std::int64_t y, std::int64_t z,
                                    const source_location& where) {
    for (std::int64_t x = 0; x < m; ++x) {
      try {
        f(item_type(*this, x, y, z), row + x);
      } catch (...) {
        st_.failure = {{x, y, z}, where, true};
        throw;
      }
    }
  }

  /// Private memory; `filled`: the runtime writes each element before anything reads it.
  template <class T, std::size_t N>
  private_array<T, N> private_(source_location where, bool filled) {
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: private_<T>: T must be trivially constructible and destructible");
    const std::int64_t n = groupsize_linear();
    void* p = st_.services->private_memory(sizeof(T) * N * static_cast<std::size_t>(n), alignof(T), where, filled);
    return private_array<T, N>(static_cast<T*>(p), n);
  }

  /// Group-level code must not run inside items(): a misuse the CPU backends name at once (a GPU
  /// would deadlock or read poison). One branch per group-level call.
  void not_in_phase(const char* what, const source_location& where) const {
    if (st_.in_phase) [[unlikely]]
      st_.services->misplaced(what, where, st_.phase);
  }
  void check_bound(const char* what, const collective_options& o, const source_location& where) const {
    not_in_phase(what, where);
    if (o.groupsize > 0 && groupsize_linear() > o.groupsize)
      st_.services->bound_exceeded(what, o.groupsize, groupsize_linear(), where);
  }

  /// Calls step(item, value) for every work-item of the group in local linear order, value being
  /// f(item) for those inside the ndrange and `neutral` for padding ones. The values are computed
  /// first, in the phase's order (the oracle's may differ from local linear order), then folded.
  template <class Op, class T, class F, class Step>
  void fold_in_order(Op&, const T& neutral, F& f, const source_location& where, Step&& step) {
    std::optional<private_array<T, 1>> v;
    if (st_.order != nullptr) {
      v.emplace(private_<T, 1>(where, true));
      items([&](const item_type& i) { v->unrecorded(i) = f(i); }, where);
    }
    const phase_mark mark(st_, where);
    const auto s = groupsize();
    const auto a = st_.active;
    for (std::int64_t z = 0; z < s.z; ++z)
      for (std::int64_t y = 0; y < s.y; ++y)
        for (std::int64_t x = 0; x < s.x; ++x) {
          const item_type i(*this, x, y, z);
          const bool inside = x < a.x && y < a.y && z < a.z;
          if (!inside) {
            step(i, neutral);
          } else if (st_.order != nullptr) {
            step(i, v->unrecorded(i));
          } else {
            try {
              mark_current(st_, i.local_linear());
              step(i, f(i));
            } catch (...) {
              st_.failure = {{x, y, z}, where, true};
              throw;
            }
          }
        }
    ++st_.epoch;  // a collective synchronises (its values are read before, as on a GPU)
    if (st_.tracer != nullptr) [[unlikely]]
      st_.tracer->sync(st_.id, "group collective", where);
  }

  detail::group_state st_;
};

/// The group of a kernel without a static work-group size (the runner's own).
using cpu_group = basic_cpu_group<dynamic_size>;
using cpu_item = basic_cpu_item<dynamic_size>;

// The CPU group offers every operation a KA kernel may call (ki/ka/group_like.hpp), with and
// without a static work-group size.
static_assert(group_like<cpu_group>);
static_assert(group_like<basic_cpu_group<static_size<16, 4>>>);

}  // namespace ki::ka

namespace ki {
/// KA: the next number of type T of work-item i's random stream (ki/rand.hpp): the numbers
/// KI's ki::rand<T>() gives the work-item at the same place of a KI launch of the same
/// work-groups, for the same seed. Called in i's statements (g.items).
template <class T, class S>
T rand(const ka::basic_cpu_item<S>& i, source_location where = source_location::current()) {
  static_assert(detail::rand_type_v<T>, "ki::rand draws int32, uint32, int64, uint64, float, double (and _Float16)");
  return i.template draw<T>(where);
}
/// KA: ki::seed(s) for work-item i (every work-item of the launch that draws seeds, with the
/// same s, before its first draw; the reference backend reports otherwise).
template <class S>
void seed(const ka::basic_cpu_item<S>& i, std::uint64_t s, source_location where = source_location::current()) {
  i.seed(s, where);
}
}  // namespace ki
