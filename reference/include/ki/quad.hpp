// Quad-group functions (Metal's quad_*): the sub-group functions within quad-groups, the
// segments of four consecutive lanes of a sub-group. Each is the width-4 form of its sub-group
// function (ki/sub_group.hpp, "functions with a width"), with the same rules and the same
// checks: quad_shuffle(v, lane) is shfl(v, lane, 4), quad_shuffle_down/up/xor are
// shfl_down/up/xor(v, n, 4) (a source outside the quad gives the caller's own value; the xor
// mask is in [0, 4)), quad_ballot's bit i is lane i of the caller's quad (bits 0-3 only),
// quad_all/quad_any vote within the quad. The sub-group width must be at least 4 (the oracle
// reports a smaller one, naming the width-4 call and its line). Where the device's sub-groups
// are partitionable (CUDA, HIP), the four work-items of a quad execute the call together; on the
// others the whole sub-group does, as for every width form.
#pragma once
#include <cstdint>

#include <ki/macros.hpp>
#include <ki/source_location.hpp>
#include <ki/sub_group.hpp>

namespace ki {

/// The lanes of a quad-group.
inline constexpr int quad_width = 4;

template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T quad_shuffle(T v, I lane, source_location where = source_location::current()) {
  return shfl(v, lane, quad_width, where);
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T quad_shuffle_down(T v, I offset, source_location where = source_location::current()) {
  return shfl_down(v, offset, quad_width, where);
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T quad_shuffle_up(T v, I offset, source_location where = source_location::current()) {
  return shfl_up(v, offset, quad_width, where);
}
template <detail::shuffle_value T, detail::lane_integer I>
KI_DEVICE T quad_shuffle_xor(T v, I mask, source_location where = source_location::current()) {
  return shfl_xor(v, mask, quad_width, where);
}
template <std::same_as<bool> P>
KI_DEVICE std::uint64_t quad_ballot(P pred, source_location where = source_location::current()) {
  return sub_group_ballot(pred, quad_width, where);
}
template <std::same_as<bool> P>
KI_DEVICE bool quad_all(P pred, source_location where = source_location::current()) {
  return sub_group_all(pred, quad_width, where);
}
template <std::same_as<bool> P>
KI_DEVICE bool quad_any(P pred, source_location where = source_location::current()) {
  return sub_group_any(pred, quad_width, where);
}

}  // namespace ki
