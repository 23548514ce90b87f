// What the sub-group communication tests (08-12) share: work-group shapes, how a work-item
// records where it is, and the host's view of the layout the work-items observed.
//
// The spec leaves the layout open unless supports_linear_subgroups promises it for the shape,
// so no test assumes one: every kernel records, for each work-item, its sub-group id, lane and
// sub-group size next to its inputs and results, and the host groups the work-items by
// (work-group, sub-group id), indexes them by lane and computes the expected results from
// those observations, in closed form, without the library. Where the linear layout is
// promised, observe() also checks that the work-items observed it. The second oracle: on the CPU
// backends every launch runs again on the reference backend with the same inputs
// (against_reference), and the two must agree.
#pragma once
#include <array>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backends.hpp"

// _Float16 where the compiler has it on the host (GCC; Clang from 15 on x86), and not in the
// GPU suites (whose device compilers may lack it).
#if defined(__FLT16_MAX__) && (!defined(__clang__) || __clang_major__ >= 15) && !defined(__CUDACC__) && \
    !defined(__HIPCC__)
#define KI_SPEC_HAS_FLOAT16 1
#else
#define KI_SPEC_HAS_FLOAT16 0
#endif

namespace ki_test::sg {

using i64 = std::int64_t;

/// Fields a work-item records about itself: sub-group id, lane, sub-group size, number of
/// sub-groups, max sub-group size.
constexpr i64 fields = 5;

/// The running work-item: linear group id, linear local id (x fastest), work-items per group,
/// and its slot group * n + lin in the per-work-item outputs.
struct position {
  i64 group, lin, n, slot;
};

KI_DEVICE inline position here() {
  const auto l = ki::get_local_id(), ls = ki::get_local_size();
  const auto g = ki::get_group_id(), ng = ki::get_num_groups();
  const i64 n = ls.x * ls.y * ls.z, lin = l.x + ls.x * (l.y + ls.y * l.z);
  const i64 group = g.x + ng.x * (g.y + ng.y * g.z);
  return {group, lin, n, group * n + lin};
}

/// Stores what the work-item at `slot` observes about its sub-group.
KI_DEVICE inline void record(ki::span<i64> rec, i64 slot) {
  rec[fields * slot + 0] = ki::get_sub_group_id();
  rec[fields * slot + 1] = ki::get_sub_group_local_id();
  rec[fields * slot + 2] = ki::get_sub_group_size();
  rec[fields * slot + 3] = ki::get_num_sub_groups();
  rec[fields * slot + 4] = ki::get_max_sub_group_size();
}

/// A launch shape: work-group extents (rank 1-3) and number of work-groups.
struct shape {
  std::array<i64, 3> e;
  int rank;
  i64 groups;
  i64 items() const { return e[0] * e[1] * e[2]; }
  ki::dims workgroup() const { return dims_of(e, rank); }
};

inline std::string str(const shape& s) {
  std::ostringstream os;
  os << s.groups << " work-groups of " << s.e[0];
  if (s.rank > 1) os << " x " << s.e[1];
  if (s.rank > 2) os << " x " << s.e[2];
  return os.str();
}

/// The shapes every sub-group test runs for a width W: 1-D work-groups that are one partial
/// sub-group, one full one, a multiple of W and not; 2-D and 3-D ones whose x extent is a
/// multiple of W (the linear promise covers them) and is not (it does not). Those beyond b's
/// limits or `max_items` are left out.
template <class B>
std::vector<shape> shapes(const B& b, i64 max_items = 512) {
  const i64 w = ki::sub_group_size(b);
  std::vector<shape> all = {
      {{1, 1, 1}, 1, 2},         {{w, 1, 1}, 1, 2}, {{w + 1, 1, 1}, 1, 2}, {{3 * w, 1, 1}, 1, 2},
      {{2 * w + 3, 1, 1}, 1, 2}, {{w, 3, 1}, 2, 2}, {{w + 2, 3, 1}, 2, 2}, {{3, 5, 1}, 2, 3},
      {{w, 2, 2}, 3, 2},         {{5, 3, 4}, 3, 2}, {{w + 1, 2, 2}, 3, 1},
  };
  if (w > 2) all.push_back({{w - 1, 1, 1}, 1, 3});
  std::vector<shape> fit;
  for (const auto& s : all) {
    if (s.items() > max_items)
      left_out(str(s) + " at W = " + std::to_string(w),
               "more work-items than the test's bound (" + std::to_string(max_items) + ")");
    else if (fits_or_left_out(b, {s.groups, 1, 1}, s.e)) fit.push_back(s);
  }
  return fit;
}

/// The work-items' view of the layout of one launch (host side).
struct layout {
  i64 W = 0, n = 0, groups = 0;
  std::vector<i64> sg, lane, size;                          // per slot
  std::map<std::pair<i64, i64>, std::vector<i64>> members;  // (group, sub-group id) -> slot by lane, -1: none
  bool ok = true;

  i64 group_of(i64 slot) const { return slot / n; }
  /// The slot of the work-item at lane `l` of `slot`'s sub-group, or -1 (none there, or l is
  /// not a lane of the sub-group width).
  i64 at(i64 slot, i64 l) const {
    if (l < 0 || l >= W) return -1;
    const auto& m = members.at({group_of(slot), sg[static_cast<std::size_t>(slot)]});
    return m[static_cast<std::size_t>(l)];
  }
  i64 lane_of(i64 slot) const { return lane[static_cast<std::size_t>(slot)]; }
  i64 size_of(i64 slot) const { return size[static_cast<std::size_t>(slot)]; }
};

/// Builds the layout from the records of `s`'s launch on b and checks what every layout
/// guarantees (sizes agree and are at most W, lanes 0..size-1 each hold one work-item, ids are
/// below get_num_sub_groups) and, where supports_linear_subgroups covers the shape, the linear
/// layout itself. ok is false (after failed checks) when the records cannot be used.
template <class B>
layout observe(const B& b, const shape& s, const std::vector<i64>& rec) {
  layout l;
  l.W = ki::sub_group_size(b);
  l.n = s.items();
  l.groups = s.groups;
  const i64 total = l.n * l.groups;
  const bool promised = ki::supports_linear_subgroups(b) && ((s.e[1] == 1 && s.e[2] == 1) || s.e[0] % l.W == 0);
  std::size_t bad = 0, not_linear = 0;
  for (i64 slot = 0; slot < total; ++slot) {
    const i64* r = &rec[static_cast<std::size_t>(fields * slot)];
    const i64 id = r[0], lane = r[1], size = r[2], count = r[3], max = r[4];
    l.sg.push_back(id), l.lane.push_back(lane), l.size.push_back(size);
    if (max != l.W || size < 1 || size > l.W || lane < 0 || lane >= size || id < 0 || id >= count || count > l.n) {
      ++bad;
      continue;
    }
    auto& m = l.members[{slot / l.n, id}];
    if (m.empty()) m.assign(static_cast<std::size_t>(l.W), -1);
    if (m[static_cast<std::size_t>(lane)] != -1) ++bad;
    m[static_cast<std::size_t>(lane)] = slot;
    const i64 lin = slot % l.n;
    if (promised && (id != lin / l.W || lane != lin % l.W)) ++not_linear;
  }
  for (const auto& [key, m] : l.members) {
    const i64 size = l.size[static_cast<std::size_t>(m[0] < 0 ? 0 : m[0])];
    for (i64 lane = 0; lane < l.W; ++lane) {
      const i64 slot = m[static_cast<std::size_t>(lane)];
      if ((lane < size) != (slot >= 0)) ++bad;
      if (slot >= 0 && l.size[static_cast<std::size_t>(slot)] != size) ++bad;
    }
  }
  INFO("sub-group records of " << str(s) << ": " << bad << " inconsistent, " << not_linear
                               << " off the promised linear layout");
  CHECK(bad == 0);
  CHECK(not_linear == 0);
  l.ok = bad == 0;
  return l;
}

/// A source lane as the spec defines it for the caller: `own` (the caller's own value),
/// `unspecified` (no work-item there), or the lane read.
constexpr i64 own = -1, unspecified = -2;

/// A mismatch log: counts mismatches and keeps the first few descriptions.
struct mismatches {
  std::size_t count = 0;
  std::ostringstream first;
  void add(const std::string& what) {
    if (count++ < 6) first << "\n  " << what;
  }
  void check(const std::string& what) {
    INFO(what << ": " << count << " mismatches" << first.str());
    CHECK(count == 0);
  }
};

/// Whether the bytes of `p` (size bytes) are the unspecified word repeated, in memory order.
inline bool is_word_pattern(const void* p, std::size_t size, std::uint32_t word) {
  const auto* b = static_cast<const unsigned char*>(p);
  unsigned char w[4];
  std::memcpy(w, &word, 4);
  for (std::size_t i = 0; i < size; ++i)
    if (b[i] != w[i % 4]) return false;
  return true;
}

/// A value of type T (trivially copyable, default-constructible) made of the unspecified word's
/// bytes. By memcpy, not std::bit_cast<T>(bytes): nvcc 13.0 stops with "Internal Compiler Error
/// (codegen): unexpected expression with aggregate type!" on a bit_cast whose source is an array
/// (under --expt-relaxed-constexpr the constexpr std::bit_cast is also a device function, and its
/// device code generator cannot lower __builtin_bit_cast of an array operand; docs/offload.md,
/// "Known problems").
template <class T>
T word_pattern(std::uint32_t word) {
  unsigned char bytes[sizeof(T)];
  unsigned char w[4];
  std::memcpy(w, &word, 4);
  for (std::size_t i = 0; i < sizeof(T); ++i) bytes[i] = w[i % 4];
  T value{};
  std::memcpy(&value, bytes, sizeof(T));
  return value;
}

/// What one launch of a sub-group test gives the host: the work-items' records (sg::record) and
/// the kernel's outputs.
template <class T>
struct launch_result {
  std::vector<i64> rec;
  std::vector<T> out;
};

/// The second oracle of the sub-group tests (DESIGN.md: "every check has two oracles: the
/// closed-form expected value, and the reference backend's result on the same inputs"): the
/// same launch on config<B>::reference_twin(b) (for simd_cpu the oracle emulating its device,
/// for the oracle itself the other item order), and its records and outputs compared with b's,
/// element for element: the layout must be the same, and so must every output except those
/// that `unspecified(i)` says the spec leaves open. One Catch check per launch.
///
/// `run(backend)` allocates, launches and returns the launch_result for a backend value of any
/// type (a generic lambda), so the same inputs go to both. `same(x, y)` compares two output
/// elements. Backends without a reference_twin (the GPUs: gpu_vs_reference.cpp) compare nothing
/// here, and the oracle's run is not compiled for them.
template <class B, class T, class Run, class Unspecified, class Same>
void against_reference(const B& b, const launch_result<T>& got, Run&& run, Unspecified&& unspecified, Same&& same) {
  if constexpr (requires { config<B>::reference_twin(b); }) {
    const auto oracle = config<B>::reference_twin(b);
    const launch_result<T> want = run(oracle);
    mismatches bad;
    if (want.rec != got.rec) bad.add("the records (sub-group id, lane, size, count, max size) differ");
    if (want.out.size() != got.out.size()) bad.add("the outputs differ in size");
    for (std::size_t i = 0; i < got.out.size() && i < want.out.size(); ++i)
      if (!unspecified(static_cast<i64>(i)) && !same(got.out[i], want.out[i]))
        bad.add("output " + std::to_string(i) + " differs from the reference backend's");
    bad.check("against the reference backend (profile '" + std::string(oracle.device.name) +
              "', W = " + std::to_string(oracle.device.sub_group_width) + ", items in " +
              (oracle.schedule.items == ki::reference::order::reverse ? "reverse" : "forward") + " order)");
  } else {
    (void)b, (void)got, (void)run, (void)unspecified, (void)same;
  }
}

/// For against_reference: every output is specified / compared with ==.
inline bool none_unspecified(i64) { return false; }
struct equal_to {
  template <class T>
  bool operator()(const T& x, const T& y) const {
    return x == y;
  }
};

/// Powers of two up to W: the widths every function with a width is called with.
inline std::vector<i64> widths(i64 W) {
  std::vector<i64> v;
  for (i64 w = 1; w <= W; w *= 2) v.push_back(w);
  return v;
}

/// Mixes a slot into a 64-bit value (inputs distinct per work-item and launch).
KI_DEVICE constexpr std::uint64_t mix(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace ki_test::sg
