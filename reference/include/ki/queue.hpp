// synchronize(backend): block until all work the calling thread queued on the active device
// has completed; rethrows the first failed launch as ki::kernel_error (the backend stays usable).
#pragma once
#include <ki/backend.hpp>

namespace ki {

template <backend B>
void synchronize(const B& b) {
  backend_traits<B>::synchronize(b);
}

}  // namespace ki
