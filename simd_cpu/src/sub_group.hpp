// Private: what simd_cpu adds to the CPU runtime's sub-group operations (ki/cpu/sub_group.hpp):
// vector folds of the standard operators on arithmetic types.
#pragma once
#include <ki/cpu/sub_group.hpp>

namespace ki::simd_cpu::detail {

/// The vector fold of c's (type, operator), if it has one (recognised by its combine function),
/// else null: the runtime's exact fold in lane order.
ki::detail::cpu::fast_fold find_fast(const ki::detail::cpu::collective& c);

}  // namespace ki::simd_cpu::detail
