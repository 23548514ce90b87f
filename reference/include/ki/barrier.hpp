// barrier(): wait until all work-items of the work-group have reached this barrier; afterwards
// the global and local memory writes each made before it are visible to the whole group.
// It does not order memory between work-groups. All work-items must reach the same barrier
// (the oracle reports a divergent one, with the source lines, at synchronize).
//
// barrier(flags) (Metal's threadgroup_barrier(mem_flags)): the same wait, ordering only the
// memory the flags name: barrier_flags::local (local memory), barrier_flags::global (global
// memory), both (`local | global`, what barrier() does) or none (execution only: "without flags,
// threadgroup_barrier() only synchronizes execution"). All work-items of the group must pass the
// same flags. In checked-access mode the oracle reports a race between two accesses that only
// a barrier without the flag for their memory lies between. Every backend implements every
// flag set with a barrier at least that strong: the CPU backends' barrier orders all memory,
// CUDA's and HIP's __syncthreads() orders global and shared memory (docs/guide.md, "Barriers").
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#if KI_GPU_CODE
#include <ki/detail/gpu/intrinsics.hpp>
#endif
#if !KI_GPU_PASS
#include <ki/detail/cpu/barrier.hpp>
#include <ki/detail/cpu/checked.hpp>
#endif

namespace ki {

/// The memory a barrier orders (combine with |).
enum class barrier_flags : unsigned { none = 0, local = 1, global = 2 };
KI_DEVICE constexpr barrier_flags operator|(barrier_flags a, barrier_flags b) {
  return static_cast<barrier_flags>(static_cast<unsigned>(a) | static_cast<unsigned>(b));
}
KI_DEVICE constexpr barrier_flags operator&(barrier_flags a, barrier_flags b) {
  return static_cast<barrier_flags>(static_cast<unsigned>(a) & static_cast<unsigned>(b));
}

KI_DEVICE inline void barrier(source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    (void)where;
    KI_GPU_SYNCTHREADS(where);
    return;
  }
#endif
#if !KI_GPU_PASS
  detail::cpu::barrier(where);
#endif
}

KI_DEVICE inline void barrier(barrier_flags flags, source_location where = source_location::current()) {
#if KI_GPU_CODE
  KI_GPU_BRANCH {
    (void)where;
    (void)flags;
    KI_GPU_SYNCTHREADS(where);  // orders global and shared memory: at least as strong as any flag set
    return;
  }
#endif
#if !KI_GPU_PASS
#if KI_CHECKED_ACCESS
  detail::checked::barrier_flags(static_cast<unsigned>(flags));
#else
  (void)flags;
#endif
  detail::cpu::barrier(where);
#endif
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
