// Private: what the oracle adds to the CPU runtime's sub-group operations (ki/cpu/sub_group.hpp):
// the values it gives reads the spec leaves unspecified.
#pragma once
#include <cstddef>
#include <cstdint>

#include <ki/cpu/sub_group.hpp>

namespace ki::reference::detail {

/// Fills unspecified values: the fixed poison word, or seeded random bytes.
struct poison_source {
  std::uint64_t seed = 0;  ///< 0: the fixed pattern
  std::uint64_t state = 0;
  void fill(void* p, std::size_t bytes);
  /// As the runtime's perform() takes it.
  ki::detail::cpu::unspecified_fill as_fill() {
    return {[](void* self, void* p, std::size_t n) { static_cast<poison_source*>(self)->fill(p, n); }, this};
  }
};

}  // namespace ki::reference::detail
