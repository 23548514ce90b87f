// The exceptions ki throws.
//
// - std::invalid_argument: the spec's ArgumentError (bad launch geometry, bad sizes, length
//   mismatches), thrown on the host before any work runs; the message names the bad value.
// - ki::device_error: the portable base of "the device, or a kernel on it, failed", on every
//   backend: catch it to handle a failed kernel the same way on the CPU and on a GPU.
//   - ki::kernel_error (CPU backends): a launch failed on the device side (an exception thrown
//     by a work-item, an out-of-bounds access, a stack overflow, barrier divergence, a group that
//     cannot finish), with where it failed. Launches are asynchronous, so it surfaces at
//     ki::synchronize; the backend stays usable.
//   - ki::cuda::error, ki::hip::error (GPU backends): a runtime call failed; a kernel's fault
//     (an illegal address, a trap) surfaces as one at the next synchronising call, naming it.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include <ki/source_location.hpp>
#include <ki/xyz.hpp>

namespace ki {

/// The device, or a kernel running on it, failed (every backend's failures derive from it).
class device_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class kernel_error : public device_error {
 public:
  enum class kind {
    exception,            ///< a work-item threw (including ki::span bounds errors)
    stack_overflow,       ///< a work-item overflowed its fiber stack
    barrier_mismatch,     ///< work-items wait at different barriers
    cannot_finish,        ///< some items wait at a barrier, the others exited
    resource,             ///< e.g. local memory beyond the device's limit
    invalid_collective,   ///< a bad width, offset or mask in a sub-group function; a bad argument
                          ///< of KA group-level code (a collective's groupsize bound, local_ids)
    collective_mismatch,  ///< participants disagree (function, offset, width, op, init), or
                          ///< sub-groups execute different sequences without independent ones
    data_race,            ///< checked-access mode: two work-items access an element, one writes,
                          ///< nothing orders them
    invalid_seed,         ///< ki::seed: different seeds in one launch, a seed after a draw, or
                          ///< some work-items seeded and others drew unseeded (ki/rand.hpp)
    unsupported,          ///< an operation the device lacks (the oracle's profile: a 64-bit atomic
                          ///< without supports_atomics64, an atomic on double without supports_float64)
    no_progress,          ///< a work-item spins: it polled an atomic, seeing the same value, many times
                          ///< in a row with no sync point, waiting for what nothing that runs can do
  };

  kernel_error(kind k, xyz<std::int64_t> group, xyz<std::int64_t> local, std::string where, const std::string& what)
      : device_error(what), kind_(k), group_(group), local_(local), where_(std::move(where)) {}

  kind error_kind() const noexcept { return kind_; }
  /// The work-group, and the first work-item concerned (for group-wide errors, the first
  /// waiting one).
  xyz<std::int64_t> group() const noexcept { return group_; }
  xyz<std::int64_t> local() const noexcept { return local_; }
  /// "file:line:column" of the sync point concerned, or "" when there is none.
  const std::string& where() const noexcept { return where_; }

  /// Backend-specific details that travel with the error (the reference backend attaches its
  /// structured launch report: ki::reference::report_of(e)). Null when there are none.
  const std::shared_ptr<const void>& details() const noexcept { return details_; }
  void set_details(std::shared_ptr<const void> d) noexcept { details_ = std::move(d); }

 private:
  std::shared_ptr<const void> details_;
  kind kind_;
  xyz<std::int64_t> group_, local_;
  std::string where_;
};

/// Thrown by ki::span / local memory accesses out of bounds (a host-side check on CPU backends).
/// The message names the index, the access's source line and the array; `where` is that line
/// (line 0 where it is not known).
class out_of_bounds : public std::out_of_range {
 public:
  using std::out_of_range::out_of_range;
  out_of_bounds(const std::string& what, const source_location& at, const void* code = nullptr,
                const void* code_caller = nullptr)
      : std::out_of_range(what), where(at), pc(code), caller(code_caller) {}
  source_location where{};
  /// The code that made the access (an address in the kernel, where known, else null): the CPU
  /// backends name the line of the user's function that called a helper doing the access, where
  /// the program has debug information there (checked-access mode always has).
  const void* pc = nullptr;
  /// The return address of the function that made the access, where checked-access mode's
  /// shadow call stack knows it (a helper the compiler did not inline), else null.
  const void* caller = nullptr;
};

}  // namespace ki
