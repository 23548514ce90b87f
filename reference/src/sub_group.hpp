// Private: the sub-group communication functions, performed exactly once every participant of
// a scope (a sub-group, or a segment of `width` lanes) has arrived with its record.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ki/detail/cpu.hpp>

#include <ki/cpu/support.hpp>

namespace ki::reference::detail {

const char* name_of(ki::detail::cpu::collective_kind k);


/// Width of the segments of c (the sub-group width when none was given).
using ki::detail::cpu::segment_width;

/// Fills unspecified values: the fixed poison word, or seeded random bytes.
struct poison_source {
  std::uint64_t seed = 0;  ///< 0: the fixed pattern
  std::uint64_t state = 0;
  void fill(void* p, std::size_t bytes);
};

/// One scope: by lane, the record of the work-item there (null where there is none).
struct scope {
  std::int64_t sub_group_width;  ///< W
  std::int64_t sub_group_size;   ///< work-items of the sub-group (lanes 0..size-1)
  std::int64_t begin, lanes;     ///< the scope's lanes [begin, begin + lanes)
  std::vector<ki::detail::cpu::collective*> at;  ///< at[lane - begin]
};

/// "" if all participants execute the same function (kind, call site, width, offset/mask, op,
/// init); otherwise what differs, naming lanes and values.
std::string check_agreement(const scope& s);

/// Performs the function for every participant, writing each result. Returns the number of
/// reads of lanes without a work-item (filled from `poison`).
std::int64_t perform(const scope& s, poison_source& poison);

}  // namespace ki::reference::detail
