// Random numbers in kernels (Metal's counter-based RNG): ki::rand<T>() draws the next number of
// the calling work-item's stream, ki::seed(s) makes a launch reproducible.
//
// The generator is Philox4x32-10 (Salmon, Moraes, Dror, Shaw, "Parallel Random Numbers: As Easy
// as 1, 2, 3", SC11) with Random123's conventions, so its outputs match Random123's published
// known-answer vectors. A draw is one Philox block:
//   key     = (seed low 32 bits, seed high 32 bits)
//   counter = (draw number, global linear id low 32 bits, global linear id high 32 bits, 0)
// where the draw number counts the work-item's draws since the launch started (or since its
// ki::seed call) and the global linear id is x fastest over get_global_size(). The stream of a
// work-item therefore depends on the seed and its global linear id only: never on the
// work-group or sub-group shape, the schedule or the backend, so random kernels give the same
// numbers on every backend and can be differentially tested. The last counter word is 0 for
// ki::rand (reserved for other streams).
//
// Seeds. Every launch draws its seed from its backend's launch counter (splitmix64 of a base
// and the counter), so repeated launches differ. The base is random per process unless
// KI_RAND_SEED=<integer> is set or ki::set_rand_seed(s) / ki::set_rand_seed(backend, s) was
// called: then the n-th launch on a backend gets the same seed in every run (replay, ki-check).
// ki::seed(s), called by every work-item of the launch with the same s before it draws, makes
// the key s itself: the launch then draws the same numbers every time, work-items different
// ones. The reference backend reports as ki::kernel_error (kind invalid_seed) a launch whose
// work-items pass different seeds, a work-item that seeds after it drew, and a launch where
// some work-items seed and others draw unseeded.
//
// Values are made from the block's 32-bit words by integer operations and one exact scaling by
// a power of two, so they are bit-identical everywhere: uint32 = word 0; uint64 = word 0 | word
// 1 << 32; the signed types are those bits (two's complement); float = (word 0 >> 8) * 2^-24 and
// _Float16 = (word 0 >> 21) * 2^-11, double = (uint64 >> 11) * 2^-53, all in [0, 1).
//
// GPU backends (CUDA, HIP): the kernel entry receives the launch seed as a parameter; a thread's
// draw count and key live in shared memory, 24 bytes per thread (24 KiB for a block of 1024) in
// kernels that draw, 8 bytes in every kernel (the seed). No misuse checks there (the oracle's).
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <array>
#include <cstdint>
#include <type_traits>

#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#if KI_GPU_CODE
#include <ki/detail/gpu/intrinsics.hpp>
#endif
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <ki/backend.hpp>
#if !KI_GPU_PASS
#include <ki/detail/cpu/executor.hpp>
#endif

namespace ki {

/// One Philox4x32-10 block: Random123's philox4x32(ctr, key) with 10 rounds.
KI_DEVICE constexpr std::array<std::uint32_t, 4> philox4x32_10(std::array<std::uint32_t, 4> ctr,
                                                               std::array<std::uint32_t, 2> key) {
  constexpr std::uint32_t m0 = 0xD2511F53u, m1 = 0xCD9E8D57u;  // multipliers
  constexpr std::uint32_t w0 = 0x9E3779B9u, w1 = 0xBB67AE85u;  // key increments (Weyl)
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key = {key[0] + w0, key[1] + w1};
    const std::uint64_t p0 = std::uint64_t(m0) * ctr[0], p1 = std::uint64_t(m1) * ctr[2];
    ctr = {std::uint32_t(p1 >> 32) ^ ctr[1] ^ key[0], std::uint32_t(p1), std::uint32_t(p0 >> 32) ^ ctr[3] ^ key[1],
           std::uint32_t(p0)};
  }
  return ctr;
}

namespace detail {
/// splitmix64's finaliser: mixes a 64-bit value (Steele, Lea, Flood 2014).
KI_DEVICE constexpr std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

template <class T>
inline constexpr bool rand_type_v =
    std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::int64_t> ||
    std::is_same_v<T, std::uint64_t> || std::is_same_v<T, float> || std::is_same_v<T, double>
#if defined(__FLT16_MAX__) && !defined(__CUDACC__) && !defined(__HIPCC__)
    || std::is_same_v<T, _Float16>
#endif
    ;

/// The value of type T that a Philox block gives (see the header comment).
template <class T>
KI_DEVICE constexpr T rand_value(const std::array<std::uint32_t, 4>& w) {
  const std::uint64_t u64 = std::uint64_t(w[0]) | std::uint64_t(w[1]) << 32;
  if constexpr (std::is_same_v<T, std::uint32_t> || std::is_same_v<T, std::int32_t>) return static_cast<T>(w[0]);
  else if constexpr (std::is_same_v<T, std::uint64_t> || std::is_same_v<T, std::int64_t>) return static_cast<T>(u64);
  else if constexpr (std::is_same_v<T, float>) return static_cast<float>(w[0] >> 8) * 0x1p-24f;
  else if constexpr (std::is_same_v<T, double>) return static_cast<double>(u64 >> 11) * 0x1p-53;
  else return static_cast<T>(static_cast<float>(w[0] >> 21) * 0x1p-11f);  // _Float16: exact in float first
}
}  // namespace detail

/// The `draw`-th number (from 0) of type T of the work-item with global linear id `global_linear`
/// under key `seed`: what ki::rand<T>() returns there. Usable on the host, e.g. to check a kernel.
template <class T>
KI_DEVICE constexpr T rand_value(std::uint64_t seed, std::uint64_t global_linear, std::uint32_t draw) {
  static_assert(detail::rand_type_v<T>, "ki::rand draws int32, uint32, int64, uint64, float, double (and _Float16)");
  return detail::rand_value<T>(
      philox4x32_10({draw, std::uint32_t(global_linear), std::uint32_t(global_linear >> 32), 0u},
                    {std::uint32_t(seed), std::uint32_t(seed >> 32)}));
}

// (Host code, seen by both passes of a GPU compiler: the backends' launches take seeds here.)
namespace detail {
/// Where launch seeds come from: per backend (by its traits' name) a launch counter and a base.
class rand_seeds {
 public:
  static rand_seeds& instance() {
    static rand_seeds s;
    return s;
  }
  /// The next launch's seed on backend `name`.
  std::uint64_t next(const char* name) {
    std::lock_guard lock(m_);
    source& s = find(name);
    return splitmix64(s.base ^ splitmix64(s.launches++));
  }
  /// Fixes every backend's base (their counters restart); nullopt: back to KI_RAND_SEED or random.
  void set_all(std::optional<std::uint64_t> seed) {
    std::lock_guard lock(m_);
    global_ = seed ? *seed : from_environment();
    sources_.clear();
  }
  void set(const char* name, std::uint64_t seed) {
    std::lock_guard lock(m_);
    source& s = find(name);
    s.base = splitmix64(seed);
    s.launches = 0;
  }

 private:
  struct source {
    std::string name;
    std::uint64_t base;
    std::uint64_t launches;
  };
  rand_seeds() : global_(from_environment()) {}
  static std::uint64_t from_environment() {
    if (const char* e = std::getenv("KI_RAND_SEED"); e != nullptr && *e != '\0') {
      char* end = nullptr;
      errno = 0;
      const unsigned long long v = std::strtoull(e, &end, 0);
      if (*end != '\0' || errno != 0 || *e == '-')
        throw std::invalid_argument(std::string("ki: KI_RAND_SEED='") + e + "' is not an unsigned 64-bit integer");
      return v;
    }
    std::random_device rd;
    return std::uint64_t(rd()) << 32 ^ rd();
  }
  source& find(const char* name) {
    for (auto& s : sources_)
      if (s.name == name) return s;
    // Each backend's base differs from the others' (the same seed gives each its own sequence).
    std::uint64_t h = global_;
    for (const char* p = name; *p != '\0'; ++p) h = splitmix64(h ^ static_cast<unsigned char>(*p));
    return sources_.emplace_back(source{name, h, 0});
  }
  std::mutex m_;
  std::uint64_t global_;
  std::vector<source> sources_;
};
/// The seed of the next launch on the backend named `name` (its traits' name).
inline std::uint64_t next_launch_seed(const char* name) { return rand_seeds::instance().next(name); }
}  // namespace detail

/// Fixes the launch seeds of every backend for the rest of the program (as KI_RAND_SEED does):
/// the n-th launch after this call on a backend gets the same seed in every run.
inline void set_rand_seed(std::uint64_t s) { detail::rand_seeds::instance().set_all(s); }
/// Back to KI_RAND_SEED, or a random base if it is not set.
inline void reset_rand_seed() { detail::rand_seeds::instance().set_all(std::nullopt); }
/// Fixes the launch seeds of backend B only (its launch counter restarts).
template <backend B>
void set_rand_seed(const B&, std::uint64_t s) {
  detail::rand_seeds::instance().set(backend_traits<B>::name, s);
}

namespace detail {
#if !KI_GPU_PASS
/// The calling work-item's stream state (CPU backends: the runner's per-work-item slot, valid
/// for the current group once its epoch is the group's).
inline cpu::rand_slot& rand_slot_here(const char* what, const source_location& where) {
  if (cpu::current == nullptr) [[unlikely]]
    cpu::outside_kernel(what, &where);
  if (cpu::current_group->rand == nullptr) [[unlikely]]
    throw std::logic_error(std::string("ki: ") + what + ": this backend keeps no random streams");
  cpu::rand_group& g = *cpu::current_group->rand;
  cpu::rand_slot& s = g.slots[cpu::current->local_linear];
  if (s.epoch != g.epoch) s = {g.launch_seed, g.epoch, 0, false};
  return s;
}
inline std::uint64_t global_linear_here() {
  const auto& g = *cpu::current_group;
  const auto& l = cpu::current->local_id;
  const std::int64_t sx = g.num_groups.x * g.local_size.x, sy = g.num_groups.y * g.local_size.y;
  return std::uint64_t((g.global_base.x + l.x) + sx * ((g.global_base.y + l.y) + sy * (g.global_base.z + l.z)));
}
#endif
#if KI_GPU_CODE
namespace gpu {
/// The launch's seed, which the kernel entry (ki/offload/launch.hpp) writes in every thread
/// before the kernel runs: 8 bytes of shared memory per block, in every kernel.
__device__ inline std::uint64_t& rand_launch_seed() {
  KI_GPU_SHARED(std::uint64_t, seed);
  return seed;
}
/// A thread's stream: valid for its block while `tag` is the block's. Shared memory starts with
/// whatever an earlier block left there, so a slot is taken as fresh unless its tag is this
/// block's of this launch (a 64-bit hash of launch seed and block: a stale slot passes for fresh
/// with probability 2^-64). Only kernels that draw allocate the slots: 24 bytes per thread of the
/// largest block (1024 threads: 24 KiB of shared memory).
struct rand_slot {
  std::uint64_t tag, key;
  std::uint32_t draws, seeded;
};
inline constexpr int rand_max_threads = 1024;
__device__ inline rand_slot& rand_slot_here() {
  KI_GPU_SHARED(rand_slot[rand_max_threads], slots);
  const std::uint64_t block =
      blockIdx.x + std::uint64_t(gridDim.x) * (blockIdx.y + std::uint64_t(gridDim.y) * blockIdx.z);
  const std::uint64_t tag = splitmix64(rand_launch_seed() ^ splitmix64(block + 1)) | 1;
  rand_slot& s = slots[threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)];
  if (s.tag != tag) s = {tag, rand_launch_seed(), 0, 0};
  return s;
}
/// The global linear id, x fastest (as on the CPU backends).
__device__ inline std::uint64_t global_linear() {
  const std::uint64_t sx = std::uint64_t(gridDim.x) * blockDim.x, sy = std::uint64_t(gridDim.y) * blockDim.y;
  const std::uint64_t x = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x,
                      y = std::uint64_t(blockIdx.y) * blockDim.y + threadIdx.y,
                      z = std::uint64_t(blockIdx.z) * blockDim.z + threadIdx.z;
  return x + sx * (y + sy * z);
}
}  // namespace gpu
#endif
}  // namespace detail

/// The next number of the calling work-item's stream (see the header comment for the values).
template <class T>
KI_DEVICE T rand(source_location where = source_location::current()) {
  static_assert(detail::rand_type_v<T>, "ki::rand draws int32, uint32, int64, uint64, float, double (and _Float16)");
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    (void)where;  // (no checks on GPUs: the oracle's)
    detail::gpu::rand_slot& s = detail::gpu::rand_slot_here();
    return rand_value<T>(s.key, detail::gpu::global_linear(), s.draws++);
  }
#endif
#if !KI_GPU_PASS
  detail::cpu::rand_slot& s = detail::rand_slot_here("ki::rand", where);
  if (s.draws == 0 && !s.seeded) {
    if (auto* c = detail::cpu::current_group->rand->check) c->unseeded_draw(*detail::cpu::current, where);
  }
  return rand_value<T>(s.key, detail::global_linear_here(), s.draws++);
#endif
}

/// Makes the calling work-item's stream the one of key s from draw 0. Every work-item of the
/// launch that draws must call it, with the same s, before its first draw.
#if KI_GPU_PASS
__device__ inline void seed(std::uint64_t s, source_location = source_location::current()) {
  detail::gpu::rand_slot& slot = detail::gpu::rand_slot_here();
  slot.key = s, slot.draws = 0, slot.seeded = 1;
}
#else
inline void seed(std::uint64_t s, source_location where = source_location::current()) {
#if KI_GPU_EMULATION
  KI_GPU_BRANCH {
    detail::gpu::rand_slot& slot = detail::gpu::rand_slot_here();
    slot.key = s, slot.draws = 0, slot.seeded = 1;
    return;
  }
#endif
  detail::cpu::rand_slot& slot = detail::rand_slot_here("ki::seed", where);
  if (auto* c = detail::cpu::current_group->rand->check) c->seeded(*detail::cpu::current, s, slot.draws, where);
  slot = {s, slot.epoch, 0, true};
}
#endif

}  // namespace ki

#include <ki/detail/public_end.hpp>
