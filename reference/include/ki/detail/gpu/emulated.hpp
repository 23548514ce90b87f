// Private: the emulated GPU's device side (KI_GPU_EMULATION, docs/offload.md "The emulated
// GPU"): what the GPU pass of ki's headers uses from CUDA or HIP, for a host compiler, on top of
// the oracle. Every GPU thread is a work-item of the reference backend's oracle (the emulated
// runtime launches the kernel entry as a KI kernel on a reference backend whose profile has a
// gpu_dialect), every block a work-group, every warp / wavefront a sub-group:
//   threadIdx ... gridDim, warpSize   the work-item's indices and its group's shape;
//   __syncthreads                      the oracle's barrier (divergence reported as for KI);
//   __shared__ (KI_GPU_SHARED)         the group's local memory, one allocation per declaration
//                                      and instantiation, holding poison at block start;
//   CUDA  __shfl_sync, __ballot_sync,  a masked rendezvous: the lanes the mask names meet,
//         __syncwarp                   exchange words or vote (cpu::collective_kind::lanes_*); a
//                                      lane named that has exited or waits elsewhere is reported;
//   HIP   __shfl, __ballot,            the whole wavefront in lockstep: the KI collectives over
//         wave_barrier                 the sub-group (every live lane must take part);
//   atomics, fences                    std::atomic_ref and std::atomic_thread_fence, after the
//                                      CPU pass's checks (ki/atomic.hpp keeps the spin watch).
// Only ki's own GPU code and the plain-CUDA subset of <ki/emulated/cuda.hpp> include it.
#pragma once
#include <ki/detail/private.hpp>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include <ki/detail/cpu/barrier.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/source_location.hpp>

#if !KI_GPU_EMULATION
#error "ki/detail/gpu/emulated.hpp is for KI_GPU_EMULATION builds"
#endif

// The CUDA/HIP keywords the GPU pass is written with: nothing for a host compiler.
#ifndef __device__
#define __device__
#endif
#ifndef __host__
#define __host__
#endif
#ifndef __global__
#define __global__
#endif
#ifndef __forceinline__
#define __forceinline__ inline
#endif
#ifndef __launch_bounds__
#define __launch_bounds__(...)
#endif

/// CUDA's vector types of the launch geometry.
struct uint3 {
  unsigned x, y, z;
};
struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};

namespace ki::detail::gpu {

/// Whether the calling code runs on a thread of the emulated GPU (a work-item of an emulated
/// launch): the GPU branches of device functions are taken there, the CPU branches elsewhere.
inline bool emulated_thread() { return cpu::gpu_dialect != 0; }

namespace emu {
inline const cpu::item_state& item(const char* what) { return cpu::here(what); }
inline uint3 thread_idx() {
  const auto& l = item("threadIdx").local_id;
  return {unsigned(l.x), unsigned(l.y), unsigned(l.z)};
}
inline uint3 block_idx() {
  (void)item("blockIdx");
  const auto& g = cpu::current_group->group_id;
  return {unsigned(g.x), unsigned(g.y), unsigned(g.z)};
}
inline dim3 block_dim() {
  (void)item("blockDim");
  const auto& s = cpu::current_group->local_size;
  return {unsigned(s.x), unsigned(s.y), unsigned(s.z)};
}
inline dim3 grid_dim() {
  (void)item("gridDim");
  const auto& n = cpu::current_group->num_groups;
  return {unsigned(n.x), unsigned(n.y), unsigned(n.z)};
}
inline int warp_size() {
  (void)item("warpSize");
  return static_cast<int>(cpu::current_group->sub_group_width);
}

/// __syncthreads() at `where`.
inline void syncthreads(const source_location& where) {
  (void)cpu::exec("__syncthreads", where);
  cpu::barrier(where);
}

/// The block's __shared__ memory of one declaration (`site`: a static object of it).
inline void* shared_memory(const void* site, std::size_t bytes, std::size_t align, const source_location& where) {
  return cpu::exec("__shared__", where).local_memory(site, bytes, align, where);
}

/// The block's dynamic shared memory (extern __shared__; the launch's size in *bytes).
inline void* dynamic_shared_memory(std::size_t* bytes, const source_location& where) {
  return cpu::exec("extern __shared__", where).dynamic_local_memory(bytes, where);
}

/// A KA g.localmem<T>(key, extents) that the emulated GPU refuses (as the CPU backends do): bad
/// extents, more than the launch's dynamic shared memory, or one call site too many. Throws,
/// naming the numbers and `where` (the oracle reports it for the thread).
[[noreturn]] inline void dynamic_localmem_refused(xyz<std::int64_t> e, std::size_t size, std::uint64_t offset,
                                                  std::uint32_t bytes, int sites, const source_location& where) {
  const std::string call = "g.localmem(key, " + std::to_string(e.x) + ", " + std::to_string(e.y) + ", " +
                           std::to_string(e.z) + ") at " + where.file + ":" + std::to_string(where.line) + ": ";
  if (e.x < 0 || e.y < 0 || e.z < 0) throw std::length_error(call + "an extent must be at least 0");
  if (sites == 8)
    throw std::length_error(call + "a kernel may have at most 8 call sites of g.localmem with run-time extents");
  throw std::length_error(call + "it needs " + std::to_string(e.x * e.y * e.z * std::int64_t(size)) +
                          " bytes from byte " + std::to_string(offset) +
                          " of the launch's dynamic_local_memory = " + std::to_string(bytes) + " bytes");
}

/// The user's call of a ki sub-group function whose GPU pass the running work-item executes
/// (cpu::gpu_user_site; null: none), so that its rendezvous are reported at the user's line, not
/// at the intrinsic's inside ki. Set by user_call, the outermost call winning. It belongs to the
/// running work-item only: a work-item clears it before it waits at a rendezvous (the others then
/// run on this thread and set their own) and restores its own when it resumes.
class user_call {
 public:
  explicit user_call(const source_location& where) : previous_(cpu::gpu_user_site) {
    if (previous_ == nullptr) cpu::gpu_user_site = &where;
  }
  ~user_call() { cpu::gpu_user_site = previous_; }
  user_call(const user_call&) = delete;
  user_call& operator=(const user_call&) = delete;

 private:
  const source_location* previous_;
};

/// One masked rendezvous (CUDA's *_sync intrinsics): the caller's value of `size` bytes.
inline void lanes(cpu::collective_kind k, std::uint64_t mask, std::int64_t arg, const void* value, void* result,
                  std::size_t size, const char* type, const source_location& where) {
  const source_location* const user = cpu::gpu_user_site;
  cpu::collective c{k, user != nullptr ? *user : where};
  c.lane_mask = mask;
  c.arg = arg;
  c.size = size;
  c.value = value;
  c.result = result;
  c.type_name = type;
  cpu::gpu_user_site = nullptr;  // (not another work-item's: see user_call)
  cpu::exec(cpu::op(k).name, c.where).collective(c);
  cpu::gpu_user_site = user;
}

/// The caller's lane in its warp.
inline int lane_id() { return static_cast<int>(item("lane id").sub_group_lane); }

/// CUDA's __shfl*_sync: the source lane as CUDA's rules give it for a segment of `width`
/// lanes (cpu::own_value: the caller's own value), then the rendezvous.
template <class T>
T shfl_from(std::uint64_t mask, const T& v, std::int64_t src, const source_location& where) {
  static_assert(std::is_trivially_copyable_v<T>, "__shfl*_sync: the value must be trivially copyable");
  T r;
  lanes(cpu::collective_kind::lanes_read, mask, src, &v, &r, sizeof(T), "value", where);
  return r;
}
inline int width_or_warp(int width) { return width > 0 ? width : warp_size(); }
template <class T>
T shfl_sync(const source_location& where, std::uint64_t mask, const T& v, int src, int width = 0) {
  const int w = width_or_warp(width), lane = lane_id();
  return shfl_from(mask, v, lane / w * w + (src & (w - 1)), where);
}
template <class T>
T shfl_up_sync(const source_location& where, std::uint64_t mask, const T& v, unsigned d, int width = 0) {
  const int w = width_or_warp(width), lane = lane_id();
  return shfl_from(mask, v, static_cast<int>(lane % w) >= static_cast<int>(d) ? lane - static_cast<int>(d) : -1, where);
}
template <class T>
T shfl_down_sync(const source_location& where, std::uint64_t mask, const T& v, unsigned d, int width = 0) {
  const int w = width_or_warp(width), lane = lane_id();
  return shfl_from(mask, v, lane % w + static_cast<std::int64_t>(d) < w ? lane + static_cast<int>(d) : -1, where);
}
template <class T>
T shfl_xor_sync(const source_location& where, std::uint64_t mask, const T& v, int m, int width = 0) {
  const int w = width_or_warp(width), lane = lane_id(), src = lane ^ m;
  return shfl_from(mask, v, src < (lane / w + 1) * w ? src : -1, where);  // later segments: own value
}
/// The lanes of mask whose pred is true.
inline std::uint64_t ballot_sync(const source_location& where, std::uint64_t mask, bool pred) {
  std::uint64_t r = 0;
  lanes(cpu::collective_kind::lanes_ballot, mask, 0, &pred, &r, sizeof(bool), "bool", where);
  return r;
}
inline void syncwarp(const source_location& where, std::uint64_t mask) {
  lanes(cpu::collective_kind::lanes_sync, mask, 0, nullptr, nullptr, 0, "", where);
}
inline void syncwarp(const source_location& where) { syncwarp(where, 0xFFFFFFFFu); }

/// HIP's lockstep intrinsics. A wavefront executes an instruction for its active lanes (the
/// EXEC mask), which the emulation cannot see: the GPU pass names them before each intrinsic
/// (KI_GPU_EXEC, the mask it computes from the work-group's size, nothing for hipcc), and the
/// active lanes meet in the masked rendezvous. Without a mask named, every lane of the
/// wavefront that has a thread is active.
inline thread_local std::uint64_t hip_exec = 0;
inline std::uint64_t take_exec() {
  const std::uint64_t m = hip_exec;
  hip_exec = 0;
  if (m != 0) return m;
  const std::int64_t n = item("__shfl").sub_group_size;
  return n >= 64 ? ~std::uint64_t{0} : (std::uint64_t{1} << n) - 1;
}
inline int hip_shfl(const source_location& where, int v, int src, int width) {
  const std::uint64_t m = take_exec();
  const int w = width_or_warp(width), lane = lane_id();
  return shfl_from(m, v, lane / w * w + (src & (w - 1)), where);
}
inline std::uint64_t hip_ballot(const source_location& where, bool pred) {
  return ballot_sync(where, take_exec(), pred);
}
inline void hip_wave_barrier(const source_location& where) { syncwarp(where, take_exec()); }

/// Device printf: formatted here, written as one record (one fwrite: stdio's lock keeps it whole).
inline void print_record(const char* text, std::size_t size) {
  std::fwrite(text, 1, size, stdout);
  std::fflush(stdout);
}
template <class... A>
int printf(const char* format, A... args) {
  char small[512];
  const int n = std::snprintf(small, sizeof small, format, args...);
  if (n < 0) return n;
  if (static_cast<std::size_t>(n) < sizeof small) {
    print_record(small, static_cast<std::size_t>(n));
  } else {
    std::string big(static_cast<std::size_t>(n) + 1, '\0');
    std::snprintf(big.data(), big.size(), format, args...);
    print_record(big.data(), static_cast<std::size_t>(n));
  }
  return n;
}

}  // namespace emu
}  // namespace ki::detail::gpu

// The names the GPU pass reads, as CUDA and HIP spell them.
#define threadIdx (::ki::detail::gpu::emu::thread_idx())
#define blockIdx (::ki::detail::gpu::emu::block_idx())
#define blockDim (::ki::detail::gpu::emu::block_dim())
#define gridDim (::ki::detail::gpu::emu::grid_dim())
#define __syncthreads() ::ki::detail::gpu::emu::syncthreads(::ki::source_location::current())
#define __shfl_sync(...) ::ki::detail::gpu::emu::shfl_sync(::ki::source_location::current(), __VA_ARGS__)
#define __shfl_up_sync(...) ::ki::detail::gpu::emu::shfl_up_sync(::ki::source_location::current(), __VA_ARGS__)
#define __shfl_down_sync(...) ::ki::detail::gpu::emu::shfl_down_sync(::ki::source_location::current(), __VA_ARGS__)
#define __shfl_xor_sync(...) ::ki::detail::gpu::emu::shfl_xor_sync(::ki::source_location::current(), __VA_ARGS__)
#define __ballot_sync(mask, pred) ::ki::detail::gpu::emu::ballot_sync(::ki::source_location::current(), (mask), (pred))
#define __syncwarp(...) ::ki::detail::gpu::emu::syncwarp(::ki::source_location::current() __VA_OPT__(, ) __VA_ARGS__)
#if KI_GPU_EMULATION == 2
#define __shfl(v, src, width) ::ki::detail::gpu::emu::hip_shfl(::ki::source_location::current(), (v), (src), (width))
#define __ballot(pred) ::ki::detail::gpu::emu::hip_ballot(::ki::source_location::current(), (pred))
#define __builtin_amdgcn_wave_barrier() ::ki::detail::gpu::emu::hip_wave_barrier(::ki::source_location::current())
// (The __ATOMIC_* orders are std::memory_order's values in libstdc++ and libc++.)
#define __builtin_amdgcn_fence(order, scope) std::atomic_thread_fence(static_cast<std::memory_order>(order))
#endif

/// warpSize: an object, not a macro (cudaDeviceProp has a member of that name), that reads as
/// the running warp's width.
struct ki_emulated_warp_size {
  operator int() const { return ::ki::detail::gpu::emu::warp_size(); }
};
inline constexpr ki_emulated_warp_size warpSize{};

/// __ldg: a load (the read-only cache is the host's cache).
template <class T>
inline T __ldg(const T* p) {
  return *p;
}
