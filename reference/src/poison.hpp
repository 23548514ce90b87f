// Private: the poison pattern of the reference backend.
//
// Memory the spec leaves uninitialised (allocate, localmemory) is filled with the 32-bit word
// 0xFFBADBAD repeated: a NaN as float, -4531283 as int32, easy to spot in a hex dump.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace ki::reference::detail {

inline constexpr std::uint32_t poison_word = 0xFFBADBADu;

inline void poison_fill(void* p, std::size_t bytes) {
  auto* b = static_cast<unsigned char*>(p);
  std::size_t i = 0;
  for (; i + 4 <= bytes; i += 4) std::memcpy(b + i, &poison_word, 4);
  for (std::size_t k = 0; i < bytes; ++i, ++k) b[i] = reinterpret_cast<const unsigned char*>(&poison_word)[k];
}

}  // namespace ki::reference::detail
