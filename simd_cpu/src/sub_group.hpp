// Private: the sub-group communication functions of simd_cpu, performed once every participant
// of a scope (a sub-group, or a segment of `width` lanes of it) has arrived with its record.
// Sub-groups are linear: lanes [0, size) of a sub-group are consecutive work-items.
#pragma once
#include <cstdint>
#include <string>

#include <ki/detail/cpu.hpp>

namespace ki::simd_cpu::detail {

const char* name_of(ki::detail::cpu::collective_kind k);


/// One scope: at[i] is the record of lane begin + i (null where the lane has no work-item).
struct scope {
  std::int64_t sub_group_width;  ///< W
  std::int64_t sub_group_size;   ///< work-items of the sub-group (lanes 0..size-1)
  std::int64_t begin, lanes;     ///< the scope's lanes [begin, begin + lanes)
  ki::detail::cpu::collective* const* at;
};

/// "" if the participants execute the same function (kind, call site, width, offset/mask,
/// value type, operator, init); otherwise what differs, naming the lanes.
std::string check_agreement(const scope& s);

/// Performs the function for every participant, writing each result. Lanes without a
/// work-item read as zero bytes (the spec leaves their values unspecified).
void perform(const scope& s);

}  // namespace ki::simd_cpu::detail
