// ki-info's report of one backend: versioninfo, then every host query for each device.
// Generic over the backend, so each backend's translation unit (compiled by its own compiler,
// e.g. nvcc for CUDA) instantiates it for itself.
#pragma once
#include <cstdint>
#include <iomanip>
#include <ostream>
#include <string>

#include <ki/ki.hpp>

namespace ki_info {

template <class T>
std::string dims3(const std::array<T, 3>& a) {
  return "(" + std::to_string(a[0]) + ", " + std::to_string(a[1]) + ", " + std::to_string(a[2]) + ")";
}

inline const char* yes(bool b) { return b ? "yes" : "no"; }

/// Prints the backend and, for each of its devices, every query of the spec. Restores the
/// calling thread's active device.
template <ki::backend B>
void report(std::ostream& os, const B& b) {
  const auto f = ki::functional(b);
  os << "== backend " << ki::backend_traits<B>::name << " ==\n";
  os << "functional: " << (f ? yes(*f) : "unknown") << "\n";
  ki::versioninfo(os, b);
  if (f && !*f) return;
  const int saved = ki::device(b);
  const int n = ki::ndevices(b);
  for (int d = 0; d < n; ++d) {
    ki::set_device(b, d);
    os << "-- device " << d << " of " << n << (d == saved ? " (active)" : "") << "\n";
    auto row = [&](const char* name, const auto& v) { os << "  " << std::left << std::setw(34) << name << v << "\n"; };
    row("multiprocessor_count", ki::multiprocessor_count(b));
    row("max_work_group_size", ki::max_work_group_size(b));
    row("max_work_group_dims", dims3(ki::max_work_group_dims(b)));
    row("max_num_groups", dims3(ki::max_num_groups(b)));
    row("sub_group_size", ki::sub_group_size(b));
    row("supports_subgroups", yes(ki::supports_subgroups(b)));
    row("supports_linear_subgroups", yes(ki::supports_linear_subgroups(b)));
    row("supports_independent_subgroups", yes(ki::supports_independent_subgroups(b)));
    row("supports_partitionable_subgroups", yes(ki::supports_partitionable_subgroups(b)));
    row("supports_unified", yes(ki::supports_unified(b)));
    row("supports_float64", yes(ki::supports_float64(b)));
    row("supports_atomics", yes(ki::supports_atomics(b)));
    row("supports_atomics64", yes(ki::supports_atomics64(b)));
    row("supports_shuffle<uint32_t>", yes(ki::supports_shuffle<std::uint32_t>(b)));
    row("supports_shuffle<double>", yes(ki::supports_shuffle<double>(b)));
    row("supports_shuffle<int64_t>", yes(ki::supports_shuffle<std::int64_t>(b)));
  }
  ki::set_device(b, saved);
}

}  // namespace ki_info
