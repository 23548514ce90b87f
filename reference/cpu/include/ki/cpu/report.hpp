// The CPU runtime's one diagnostics reporter: the messages of every error both CPU backends
// detect, built in one place, so that one bug gets one kind, one set of coordinates and one
// message on both (up to the backend's name, which starts every message: "ki::reference: ...",
// "ki::simd_cpu: ...").
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <ki/cpu/fiber.hpp>
#include <ki/cpu/support.hpp>
#include <ki/detail/cpu/executor.hpp>
#include <ki/errors.hpp>
#include <ki/source_location.hpp>

namespace ki::detail::cpu {

/// Where an error says a work-item is: the sync point it waits at or passed last, and what it
/// is ("barrier" or a sub-group function's name); what == nullptr: none in this group yet.
struct sync_point {
  source_location where;
  const char* what;
};

inline constexpr const char* barrier_what = "barrier";

/// A work-item of a group that cannot finish, as the reporter sees it.
struct stuck_item {
  std::int64_t local_linear;
  std::int64_t sub_group;
  bool exited;    ///< started and ended (else it waits at `at`)
  sync_point at;  ///< where it waits
};

/// The names a backend's messages use.
struct backend_names {
  const char* prefix;         ///< "ki::reference"
  const char* stack_setting;  ///< "ki::reference::backend::stack_size or KI_REFERENCE_STACK_SIZE"
};

class reporter {
 public:
  explicit reporter(backend_names names) : names_(names) {}

  /// Set per launch and per group.
  void set_kernel(const char* name) { kernel_ = name; }
  void set_group(const xyz<std::int64_t>& g) { group_ = g; }

  /// "<prefix>: kernel '<name>': work-group (x, y, z)"
  std::string group_head() const;

  /// A work-item's own failure: `what` is what it did ("threw ...", "overflowed ..."); `at` is
  /// its sync point (a bad call names its line itself, so that one is not repeated).
  /// `site`: where the failing operation is, when known: the error's where() (else `at`'s).
  kernel_error item_error(kernel_error::kind k, const item_state& it, sync_point at, const std::string& what,
                          const source_location* site = nullptr) const;
  /// A work-item's failure inside a KA phase: `phase` is the items() call it ran in.
  /// `site`: where the failing operation is, when known (an out-of-bounds access's line): the
  /// error's where() (else the phase's).
  kernel_error phase_error(kernel_error::kind k, const item_state& it, const source_location& phase,
                           const std::string& what, const source_location* site = nullptr) const;
  /// A failure of the whole group (e.g. participants that disagree), concerning `first`.
  kernel_error group_error(kernel_error::kind k, const item_state& first, sync_point at, const std::string& what) const;
  /// What a fault in a work-item says (a stack overflow, or another invalid access).
  std::string fault_message(const fiber_core::fault& f, std::size_t stack_size) const;
  static kernel_error::kind fault_kind(const fiber_core::fault& f) {
    return f.stack_overflow ? kernel_error::kind::stack_overflow : kernel_error::kind::exception;
  }
  /// The group cannot finish: every started work-item waits or has exited, and they are not all
  /// at one barrier. Items are grouped by where they wait (in order of first appearance; ranges
  /// of linear local ids); barrier_mismatch when they wait at more than one place, else
  /// cannot_finish. `items` lists every started work-item; `local_id(k)` gives their coordinates.
  template <class LocalId>
  kernel_error cannot_finish(const std::vector<stuck_item>& items, LocalId local_id) const {
    const auto [k, first, where, msg] = stuck_message(items);
    return kernel_error(k, group_, local_id(first), where, msg);
  }
  /// localmemory beyond the device's limit (thrown in the work-item). `dynamic`: bytes the
  /// launch's dynamic_local_memory holds besides `used`; `call`: what asked.
  static item_failure local_memory_exceeded(const source_location& where, std::size_t bytes, std::size_t used,
                                            std::size_t limit, std::size_t dynamic = 0,
                                            const char* call = "localmemory");

 private:
  struct stuck {
    kernel_error::kind kind;
    std::int64_t first;
    std::string where, message;
  };
  stuck stuck_message(const std::vector<stuck_item>& items) const;

  backend_names names_;
  const char* kernel_ = "";
  xyz<std::int64_t> group_{};
};

/// "0-31, 64, 66-70" from sorted ids.
std::string ranges(const std::vector<std::int64_t>& ids);

}  // namespace ki::detail::cpu
