// barrier(): wait until all work-items of the work-group have reached this barrier; afterwards
// the global and local memory writes each made before it are visible to the whole group.
// It does not order memory between work-groups. All work-items must reach the same barrier
// (the oracle reports a divergent one, with the source lines, at synchronize).
#pragma once
#include <ki/detail/public_begin.hpp>  // (this header includes private ones)
#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#if KI_GPU_PASS
#include <ki/detail/gpu/intrinsics.hpp>
#else
#include <ki/detail/cpu/barrier.hpp>
#endif

namespace ki {

KI_DEVICE inline void barrier(source_location where = source_location::current()) {
#if KI_GPU_PASS
  (void)where;
  __syncthreads();
#else
  detail::cpu::barrier(where);
#endif
}

}  // namespace ki

#include <ki/detail/public_end.hpp>
