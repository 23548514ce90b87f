// Reference backend memory: host memory, poisoned on allocation (it is uninitialised).
#include <cstdlib>
#include <cstring>
#include <new>

#include <ki/reference/backend.hpp>

#include "poison.hpp"

namespace ki::reference::detail {

void* allocate(std::size_t bytes) {
  // 64-byte aligned, like device allocations; at least one byte so that the pointer is unique.
  const std::size_t n = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (p == nullptr) throw std::bad_alloc();
  poison_fill(p, bytes);
  return p;
}

void free(void* p) noexcept { std::free(p); }

// Launches run before launch() returns, so a copy queued after them can run at once.
void copy(void* dst, const void* src, std::size_t bytes) { std::memmove(dst, src, bytes); }

}  // namespace ki::reference::detail
