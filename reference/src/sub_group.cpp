// The oracle's poison for unspecified sub-group reads (the operations themselves are the CPU
// runtime's, reference/cpu/src/sub_group.cpp).
#include "sub_group.hpp"

#include "poison.hpp"

namespace ki::reference::detail {

void poison_source::fill(void* p, std::size_t bytes) {
  if (seed == 0) return poison_fill(p, bytes);
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull) ^ seed;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    b[i] = static_cast<unsigned char>((z ^ (z >> 27)) >> 24);
  }
}

}  // namespace ki::reference::detail
