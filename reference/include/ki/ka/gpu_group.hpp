// The KA layer's group on GPUs (ki::cuda, ki::hip): the `G` of a KA kernel's operator() there.
//
// A GPU runs the group-level code on every thread of the block, as written; the explicit parts
// map one to one onto the hardware:
//   g.items(f)         if (the thread's work-item is inside the ndrange) f(item): one guarded
//                      statement per thread (KA's bounds checking);
//   g.grid_stride(n,f) the thread's own grid-stride loop over k < n, under the same guard;
//   g.synchronize()    __syncthreads(), outside any guard (synchronize(cond): where cond holds);
//   g.localmem<T, N>   a static __shared__ array per call site (the key's type), as ki::localmemory;
//   g.private_<T, N>   the thread's own array (registers, or its local memory);
//   g.reduce / scan    sub-group shuffles (ki/detail/gpu/sub_group.hpp, lane-ordered), then one
//                      value per sub-group through __shared__ memory: combined in local linear
//                      order, so exact for non-commutative (associative) operators, as on the CPU.
// Every thread of the block reaches each collective and synchronize (the spec's rule for
// collectives), padding threads included: they contribute `neutral` without evaluating val.
// A collective's groupsize bound is not needed here (the scratch is one value per sub-group of
// the largest block) and not checked: the CPU backends report a work-group above it.
//
// With the emulated GPU (KI_GPU_EMULATION) a host compiler compiles this file too: it runs only
// on the emulated GPU's threads, each a work-item of the oracle.
#pragma once
#include <ki/macros.hpp>
#if defined(__CUDACC__) || defined(__HIPCC__) || KI_GPU_EMULATION
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include <ki/detail/gpu/intrinsics.hpp>
#include <ki/detail/gpu/sub_group.hpp>
#include <ki/ka/group_like.hpp>
#include <ki/ka/local_array.hpp>
#include <ki/ka/sizes.hpp>
#include <ki/local_memory.hpp>
#include <ki/rand.hpp>
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/span.hpp>
#include <ki/xyz.hpp>

namespace ki::ka {

namespace detail {
/// What a GPU launch passes to every thread: the index space and the grid.
struct gpu_geometry {
  xyz<std::int64_t> extents, firsts, groups;
  std::uint32_t dynamic_local = 0;  ///< bytes of dynamic shared memory (launch_options::dynamic_local_memory)
  std::uint64_t rand_seed = 0;      ///< the launch's seed for ki::rand<T>(i) (ki/rand.hpp)
};

/// One value of T per sub-group of the largest block (1024 threads of sub-groups >= 16 lanes):
/// the collectives' __shared__ scratch, one array per T.
template <class T>
__device__ T* collective_scratch() {
  KI_GPU_SHARED_BYTES(T, storage, sizeof(T) * 64);
  return reinterpret_cast<T*>(storage);
}

/// op over the block's values in local linear order, to every thread.
template <class T, class Op>
__device__ T block_reduce(const Op& op, const T& v, const T& neutral) {
  namespace gpu = ki::detail::gpu;
  const T w = gpu::reduce(op, v, 0);  // the sub-group's, lane-ordered
  const std::int64_t n = gpu::local_count(), lin = gpu::local_linear();
  const int W = warpSize;
  if (n <= W) return w;  // (n is the block's: every thread takes the same branch)
  const int warp = static_cast<int>(lin / W), lane = static_cast<int>(lin % W);
  const int warps = static_cast<int>((n + W - 1) / W);
  T* scratch = collective_scratch<T>();
  __syncthreads();  // the previous collective's readers are done
  if (lane == 0) scratch[warp] = w;
  __syncthreads();
  if (warp == 0) {
    const T x = gpu::reduce(op, lane < warps ? scratch[lane] : neutral, 0);
    if (lane == 0) scratch[0] = x;
  }
  __syncthreads();
  return scratch[0];
}

/// Each thread's inclusive (or exclusive) scan of the block's values in local linear order.
template <class T, class Op>
__device__ T block_scan(const Op& op, const T& v, const T& neutral, bool inclusive) {
  namespace gpu = ki::detail::gpu;
  const gpu::segment s = gpu::place(0);
  const T incl = gpu::scan(op, v, s);
  const T before = gpu::read_lane(s.mask, incl, s.pos() > 0 ? s.lane - 1 : s.lane);
  const std::int64_t n = gpu::local_count(), lin = gpu::local_linear();
  const int W = warpSize;
  const int warp = static_cast<int>(lin / W), lane = static_cast<int>(lin % W);
  T prefix = neutral;  // op over the sub-groups before this one
  if (n > W) {
    const int warps = static_cast<int>((n + W - 1) / W);
    T* scratch = collective_scratch<T>();
    __syncthreads();
    if (s.pos() == s.count - 1) scratch[warp] = incl;
    __syncthreads();
    if (warp == 0) {  // lane k reads and writes slot k only
      const T x = gpu::scan(op, lane < warps ? scratch[lane] : neutral, s);
      if (lane < warps) scratch[lane] = x;
    }
    __syncthreads();
    if (warp > 0) prefix = scratch[warp - 1];
  }
  if (inclusive) return warp > 0 ? static_cast<T>(op(prefix, incl)) : incl;
  if (s.pos() == 0) return prefix;
  return warp > 0 ? static_cast<T>(op(prefix, before)) : before;
}
}  // namespace detail

template <class S>
class gpu_group;

/// A work-item inside items() on a GPU: the thread's indices (spec: @index), as basic_cpu_item.
template <class S>
class gpu_item {
 public:
  __device__ gpu_item(const gpu_group<S>& g, xyz<std::int64_t> l) : g_(g), l_(l) {}
  __device__ xyz<std::int64_t> local() const { return l_; }
  __device__ std::int64_t local_linear() const {
    const auto s = g_.groupsize();
    return l_.x + s.x * (l_.y + s.y * l_.z);
  }
  __device__ xyz<std::int64_t> global() const {
    const auto& f = g_.geo_.firsts;
    return {f.x + g_.base_.x + l_.x, f.y + g_.base_.y + l_.y, f.z + g_.base_.z + l_.z};
  }
  __device__ std::int64_t global_linear() const {
    const auto& e = g_.geo_.extents;
    return (g_.base_.x + l_.x) + e.x * ((g_.base_.y + l_.y) + e.y * (g_.base_.z + l_.z));
  }
  __device__ xyz<std::int64_t> group() const { return g_.group(); }
  __device__ std::int64_t group_linear() const { return g_.group_linear(); }
  __device__ std::array<std::int64_t, 3> local_tuple() const { return {l_.x, l_.y, l_.z}; }
  __device__ std::array<std::int64_t, 3> global_tuple() const {
    const auto g = global();
    return {g.x, g.y, g.z};
  }
  __device__ std::array<std::int64_t, 3> group_tuple() const {
    const auto g = group();
    return {g.x, g.y, g.z};
  }

 private:
  const gpu_group<S>& g_;
  xyz<std::int64_t> l_;
};

/// @private T (N,) on a GPU: the thread's own N values (p[i][k], p(i)).
template <class T, std::size_t N>
class gpu_private {
 public:
  template <class I>
  __device__ ki::span<T> operator[](const I&) const {
    return {v_, static_cast<std::int64_t>(N)};
  }
  template <class I>
  __device__ T& operator()(const I&) const {
    return v_[0];
  }
  static constexpr std::size_t size() { return N; }

 private:
  mutable T v_[N];
};

/// The group a GPU thread runs (one object per thread, every thread of the block).
template <class S>
class gpu_group {
 public:
  using item_type = gpu_item<S>;
  static constexpr xyz<std::int64_t> static_size = S::value;
  static constexpr std::int64_t static_size_linear = S::linear;

  __device__ explicit gpu_group(const detail::gpu_geometry& g) : geo_(g) {
    id_ = {blockIdx.x, blockIdx.y, blockIdx.z};
    l_ = {threadIdx.x, threadIdx.y, threadIdx.z};
    const auto s = groupsize();
    base_ = {id_.x * s.x, id_.y * s.y, id_.z * s.z};
    inside_ = base_.x + l_.x < g.extents.x && base_.y + l_.y < g.extents.y && base_.z + l_.z < g.extents.z;
  }

  __device__ xyz<std::int64_t> groupsize() const {
    if constexpr (S::is_static) return S::value;
    else return {blockDim.x, blockDim.y, blockDim.z};
  }
  __device__ std::int64_t groupsize_linear() const {
    const auto s = groupsize();
    return s.x * s.y * s.z;
  }
  __device__ xyz<std::int64_t> ndrange_extents() const { return geo_.extents; }
  __device__ xyz<std::int64_t> group() const { return id_; }
  __device__ std::int64_t group_linear() const { return id_.x + geo_.groups.x * (id_.y + geo_.groups.y * id_.z); }
  __device__ xyz<std::int64_t> num_groups() const { return geo_.groups; }
  __device__ xyz<std::int64_t> active() const {
    const auto s = groupsize();
    return {clip(geo_.extents.x - base_.x, s.x), clip(geo_.extents.y - base_.y, s.y),
            clip(geo_.extents.z - base_.z, s.z)};
  }

  template <class F>
  __device__ void items(F&& f) const {
    if (inside_) f(item_type(*this, l_));
  }
  /// (A GPU checks no ki::span index: the same as items(f).)
  template <class F>
  __device__ void items(unchecked_t, F&& f) const {
    if (inside_) f(item_type(*this, l_));
  }
  template <class F>
  __device__ void items(std::int64_t count, F&& f) const {
    if (inside_ && item_type(*this, l_).local_linear() < count) f(item_type(*this, l_));
  }
  template <class F>
  __device__ void items(unchecked_t, std::int64_t count, F&& f) const {
    items(count, f);
  }
  /// The work-items of ids (ki/ka/sizes.hpp): one guarded statement. A bad ids is not reported
  /// here (the CPU backends report it); stride < 1 chooses no work-item.
  template <class F>
  __device__ void items(const local_ids& ids, F&& f) const {
    const std::int64_t t = item_type(*this, l_).local_linear() - ids.first;
    if (inside_ && t >= 0 && ids.stride > 0 && t % ids.stride == 0 && t / ids.stride < ids.count)
      f(item_type(*this, l_));
  }
  template <class F>
  __device__ void items(unchecked_t, const local_ids& ids, F&& f) const {
    items(ids, f);
  }

  /// The grid-stride loop (see basic_cpu_group::grid_stride): f(i, k) for k = the work-item's
  /// global linear index, then every (number of work-items in the ndrange) after it, below n.
  template <class F>
  __device__ void grid_stride(std::int64_t n, F&& f) const {
    if (!inside_) return;
    const auto& e = geo_.extents;
    const std::int64_t count = e.x * e.y * e.z;
    const item_type i(*this, l_);
    for (std::int64_t k = i.global_linear(); k < n; k += count) f(i, k);
  }

  template <class Op, class T, class F>
  __device__ T reduce(Op op, T neutral, F&& f, collective_options = {}) const {
    const T v = inside_ ? static_cast<T>(f(item_type(*this, l_))) : neutral;
    return detail::block_reduce(op, v, neutral);
  }
  template <class Op, class T, class F>
  __device__ gpu_private<T, 1> scan(Op op, T neutral, F&& f, collective_options o = {}) const {
    const T v = inside_ ? static_cast<T>(f(item_type(*this, l_))) : neutral;
    gpu_private<T, 1> r;
    r(item_type(*this, l_)) = detail::block_scan(op, v, neutral, o.inclusive);
    return r;
  }

  __device__ void synchronize(source_location where = source_location::current()) const {
    (void)where;
    KI_GPU_SYNCTHREADS(where);
  }
  /// @synchronize(cond): the block synchronises where cond holds (cond must be uniform).
  __device__ void synchronize(bool cond, source_location where = source_location::current()) const {
    (void)where;
    if (cond) KI_GPU_SYNCTHREADS(where);
  }

  template <class T, std::size_t... Dims, class Key>
  __device__ local_array<T, Dims...> localmem(Key) const {
    static_assert(std::is_class_v<Key>, "ki::ka: g.localmem<T, N>(key): pass a fresh lambda as the call-site key");
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: localmem<T>: T must be trivially constructible and destructible");
    static_assert(((Dims > 0) && ...),
                  "ki::ka: localmem<T, N> with N = 0: for N = prod(groupsize) (G::static_size_linear) construct "
                  "the kernel with a static work-group size, ki::ka::kernel(backend, f, ki::ka::groupsize<...>)");
    constexpr std::size_t count = (Dims * ...);
    KI_GPU_SHARED_BYTES(T, storage, sizeof(T) * count);  // one per Key (and T, Dims)
    return local_array<T, Dims...>(reinterpret_cast<T*>(storage));
  }
  /// g.localmem<T>(key, nx, ny, nz) (ki/ka/group.hpp): cut from the block's dynamic shared
  /// memory in the order the call sites first run, each aligned for T; every thread keeps the
  /// places in a table (the extents being uniform, every thread computes the same ones). No
  /// checks (the CPU backends make them), except on the emulated GPU.
  template <class T, class Key>
  __device__ ki::span<T> localmem(Key, std::int64_t nx, std::int64_t ny = 1, std::int64_t nz = 1,
                                  source_location where = source_location::current()) const {
    static_assert(std::is_class_v<Key>, "ki::ka: g.localmem<T>(key, n): pass a fresh lambda as the call-site key");
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: localmem<T>: T must be trivially constructible and destructible");
    static_assert(alignof(T) <= ki::detail::dynamic_local_align, "ki::ka: localmem<T>: T is aligned to more than 16");
#if KI_GPU_EMULATION
    const void* key = &ki::detail::call_site_tag<Key>;
#else
    KI_GPU_SHARED(char, site);  // (a byte per call site: its address names the site on the device)
    const void* key = &site;
#endif
#if KI_GPU_CODE
    unsigned char* base = ki::detail::dynamic_local_base(nullptr, where);
#else
    unsigned char* base = nullptr;  // (nvcc's and hipcc's host pass: never runs)
#endif
    const xyz<std::int64_t> e{nx, ny, nz};
    for (int k = 0; k < dyn_count_; ++k)
      if (dyn_[k].key == key) return ki::span<T>(reinterpret_cast<T*>(base + dyn_[k].offset), e);
    const std::uint64_t offset = (dyn_used_ + alignof(T) - 1) / alignof(T) * alignof(T);
    const std::uint64_t bytes = std::uint64_t(nx) * std::uint64_t(ny) * std::uint64_t(nz) * sizeof(T);
#if KI_GPU_EMULATION
    if (dyn_count_ == detail::max_dynamic_localmem_sites || nx < 0 || ny < 0 || nz < 0 ||
        offset + bytes > geo_.dynamic_local)
      ki::detail::gpu::emu::dynamic_localmem_refused(e, sizeof(T), offset, geo_.dynamic_local, dyn_count_, where);
#else
    (void)where;
#endif
    if (dyn_count_ < detail::max_dynamic_localmem_sites) dyn_[dyn_count_++] = {key, static_cast<std::uint32_t>(offset)};
    dyn_used_ = static_cast<std::uint32_t>(offset + bytes);
    return ki::span<T>(reinterpret_cast<T*>(base + offset), e);
  }
  template <class T, std::size_t N = 1>
  __device__ gpu_private<T, N> private_() const {
    static_assert(std::is_trivially_default_constructible_v<T> && std::is_trivially_destructible_v<T>,
                  "ki::ka: private_<T>: T must be trivially constructible and destructible");
    return {};
  }

 private:
  friend class gpu_item<S>;
  __device__ static std::int64_t clip(std::int64_t left, std::int64_t size) {
    return left < 0 ? 0 : left < size ? left : size;
  }

  detail::gpu_geometry geo_;
  xyz<std::int64_t> id_, l_, base_;
  bool inside_;
  /// g.localmem<T>(key, extents): the call sites' places in the dynamic shared memory.
  struct dynamic_site {
    const void* key;
    std::uint32_t offset;
  };
  mutable dynamic_site dyn_[detail::max_dynamic_localmem_sites];
  mutable int dyn_count_ = 0;
  mutable std::uint32_t dyn_used_ = 0;
};

// The GPU group offers every operation a KA kernel may call (ki/ka/group_like.hpp), as the CPU
// group does (ki/ka/group.hpp), with and without a static work-group size: checked by nvcc and
// hipcc (both passes) and, for the emulated GPU, by the host compiler.
static_assert(group_like<gpu_group<dynamic_size>>);
static_assert(group_like<gpu_group<static_size<16, 4>>>);

namespace detail {
/// The GPU entry of a KA kernel: every thread builds its group and runs the body.
template <class S, class F, class... A>
__global__ void ka_entry(gpu_geometry geo, F f, A... args) {
#if KI_GPU_CODE
  ki::detail::gpu::rand_launch_seed() = geo.rand_seed;  // (as the KI entries: ki/offload/launch.hpp)
#endif
  gpu_group<S> g(geo);
  f(g, args...);
}
}  // namespace detail

}  // namespace ki::ka

namespace ki {
/// KA on a GPU: work-item i is the calling thread, and its stream KI's (ki/rand.hpp).
template <class T, class S>
__device__ T rand(const ka::gpu_item<S>&, source_location where = source_location::current()) {
  return ki::rand<T>(where);
}
template <class S>
__device__ void seed(const ka::gpu_item<S>&, std::uint64_t s, source_location where = source_location::current()) {
#if KI_GPU_CODE
  ki::seed(s, where);
#else
  (void)s, (void)where;  // (the host pass of hipcc / nvcc: never runs; ki::seed is a host function there)
#endif
}
}  // namespace ki

#include <ki/detail/public_end.hpp>
#endif
