// Private to the CPU backends (ki::reference and ki::simd_cpu): helpers their executors share.
//
// Like fiber.hpp, it lives in the build tree's reference/src/ folder, which ki::fiber exposes to
// the backends only; it is not installed (installed consumers link the static libraries only).
// Everything here is stateless; per-backend state (the TBB arenas, the values read from the
// environment) stays in each backend's own translation unit.
#pragma once
#include <tbb/task_arena.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include <ki/detail/cpu.hpp>
#include <ki/errors.hpp>
#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

namespace ki::detail::cpu_common {

/// The user-facing name of a sub-group function, for messages.
inline const char* collective_name(cpu::collective_kind k) {
  using K = cpu::collective_kind;
  switch (k) {
    case K::shfl: return "shfl";
    case K::shfl_down: return "shfl_down";
    case K::shfl_up: return "shfl_up";
    case K::shfl_xor: return "shfl_xor";
    case K::any: return "sub_group_any";
    case K::all: return "sub_group_all";
    case K::ballot: return "sub_group_ballot";
    case K::reduce: return "sub_group_reduce";
    case K::scan: return "sub_group_scan";
    case K::exclusive_scan: return "sub_group_exclusive_scan";
    case K::sub_group_barrier: return "sub_group_barrier";
  }
  return "?";
}

/// The offset / lane / mask argument as the caller wrote it (huge unsigned values included).
inline std::string arg_text(const cpu::collective& c) {
  return c.arg_huge ? std::to_string(static_cast<std::uint64_t>(c.arg)) : std::to_string(c.arg);
}

/// Whether the function's argument is an offset or mask (shfl_down / shfl_up / shfl_xor).
inline bool uses_offset(cpu::collective_kind k) {
  using K = cpu::collective_kind;
  return k == K::shfl_down || k == K::shfl_up || k == K::shfl_xor;
}

/// The width of the caller's segment: the function's width, or the whole sub-group's w.
inline std::int64_t segment_width(const cpu::collective& c, std::int64_t w) { return c.width > 0 ? c.width : w; }

/// What is wrong with one call's width, offset or mask on a sub-group of width w ("" if nothing).
inline std::string check_arguments(const cpu::collective& c, std::int64_t w) {
  using K = cpu::collective_kind;
  const std::int64_t width = c.width;
  if (c.width_given && (c.width_huge || width <= 0 || width > w || (width & (width - 1)) != 0)) {
    const std::string shown = c.width_huge ? std::to_string(static_cast<std::uint64_t>(width)) : std::to_string(width);
    return std::string(collective_name(c.kind)) + ": width = " + shown +
           " must be a power of two between 1 and the sub-group width " + std::to_string(w);
  }
  const std::int64_t seg = segment_width(c, w);
  if ((c.kind == K::shfl_down || c.kind == K::shfl_up) && !c.arg_huge && c.arg < 0)
    return std::string(collective_name(c.kind)) + ": offset = " + arg_text(c) + " must be at least 0";
  if (c.kind == K::shfl_xor && (c.arg_huge || c.arg < 0 || c.arg >= seg))
    return std::string("shfl_xor: mask = ") + arg_text(c) + " must be between 0 and " + std::to_string(seg - 1) +
           (c.width > 0 ? " (width - 1)" : " (the sub-group width - 1)");
  return "";
}


inline std::string to_string(const xyz<std::int64_t>& v) {
  return "(" + std::to_string(v.x) + ", " + std::to_string(v.y) + ", " + std::to_string(v.z) + ")";
}

inline std::string to_string(const source_location& s) {
  if (s.line == 0) return "<unknown>";
  const char* f = std::strrchr(s.file, '/');
  std::string r = std::string(f ? f + 1 : s.file) + ":" + std::to_string(s.line);
  return s.column != 0 ? r + ":" + std::to_string(s.column) : r;
}

inline bool same_point(const source_location& a, const source_location& b) {
  return a.line == b.line && a.column == b.column && (a.file == b.file || std::strcmp(a.file, b.file) == 0);
}

/// The positive integer in environment variable `name`, else `fallback` (unset or empty). Any
/// other value is ignored with a warning on stderr, which starts with `prefix` ("ki::reference").
inline std::size_t env_size(const char* prefix, const char* name, std::size_t fallback) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return fallback;
  char* end = nullptr;
  const unsigned long long x = std::strtoull(v, &end, 10);
  if (end == v || *end != '\0' || x == 0) {
    std::fprintf(stderr, "%s: ignoring %s=%s (expected a positive integer)\n", prefix, name, v);
    return fallback;
  }
  return static_cast<std::size_t>(x);
}

/// Thrown inside a work-item for errors that are the executor's to name (kind != exception).
struct item_failure {
  kernel_error::kind kind;
  std::string message;
  bool group_level = false;  ///< the message describes the group, not the throwing item
};

/// One TBB arena per thread count, created on first use and kept for the process. Each backend
/// keeps its own cache (a static object in its executor).
class arena_cache {
 public:
  tbb::task_arena& get(int threads) {
    std::lock_guard lock(m_);
    auto& a = arenas_[threads];
    if (!a) a = std::make_unique<tbb::task_arena>(threads);
    return *a;
  }

 private:
  std::mutex m_;
  std::map<int, std::unique_ptr<tbb::task_arena>> arenas_;
};

}  // namespace ki::detail::cpu_common
