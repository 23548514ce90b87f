// The CPU runtime's sub-group operations: the checks and the execution both CPU backends use,
// driven by the table of ki/detail/cpu/sub_group_ops.hpp (one row per operation).
//
// An executor collects the participants of a scope (a sub-group, or a segment of `width` lanes
// of it) as they arrive; when the last one has, it calls check_agreement and then perform.
// check_arguments runs on each arrival, before the caller waits.
#pragma once
#include <cstdint>
#include <string>

#include <ki/detail/cpu/sub_group_ops.hpp>

namespace ki::detail::cpu {

/// The user-facing name of a sub-group function, for messages.
inline const char* collective_name(collective_kind k) { return op(k).name; }

/// Whether the call's integer argument must be the same for every participant and within its
/// range (an offset or a mask; a shfl lane may differ from lane to lane).
inline bool checks_arg(collective_kind k) {
  const arg_role r = op(k).arg;
  return r == arg_role::offset || r == arg_role::mask;
}

/// The width of the caller's segment: the function's width, or the whole sub-group's w.
inline std::int64_t segment_width(const collective& c, std::int64_t w) { return c.width > 0 ? c.width : w; }

/// The integer argument as the caller wrote it (huge unsigned values included).
std::string arg_text(const collective& c);

/// What is wrong with one call's width, offset or mask on a sub-group of width w ("" if
/// nothing): width a power of two <= w, offset >= 0, mask within [0, segment width).
std::string check_arguments(const collective& c, std::int64_t w);

/// One scope: at[i] is the record of lane begin + i (null where the lane has no work-item).
struct scope {
  std::int64_t sub_group_width;  ///< W
  std::int64_t sub_group_size;   ///< work-items of the sub-group (lanes 0..size-1)
  std::int64_t begin, lanes;     ///< the scope's lanes [begin, begin + lanes)
  collective* const* at;
};

/// "" if the participants execute the same function (kind, call site, width, offset/mask,
/// value type, operator, init); otherwise what differs, naming the lanes and the values, and
/// *lane is the first lane that differs from the first participant.
std::string check_agreement(const scope& s, std::int64_t* lane);

/// How a backend fills a result that the spec leaves unspecified (a lane without a work-item).
struct unspecified_fill {
  void (*fill)(void* ctx, void* result, std::size_t bytes);
  void* ctx;
};

/// A fold the backend computes its own way (simd_cpu: vector folds of the (type, operator) pairs
/// it recognises), instead of the row's exact fold; at[0 .. n): one segment's participants.
using fast_fold = void (*)(collective* const* at, std::int64_t n, fold_kind kind);

/// Performs the scope's function for every participant (the participants agree), writing each
/// result; a fold goes to `fast` where given. Returns the number of reads of lanes without a
/// work-item (filled by `fill`).
std::int64_t perform(const scope& s, unspecified_fill fill, fast_fold fast = nullptr);

}  // namespace ki::detail::cpu
