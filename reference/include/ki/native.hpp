// ki::native(k): the backend's own kernel object behind a ki::kernel (the spec: a Kernel is "a
// kernel compiled by kernel_function for backend, wrapping the backend's own kernel object
// kern"), for backends that have one.
//
//   const auto k = ki::kernel_function(cuda_backend, vadd{});
//   if (const auto n = ki::native(k)) {           // ki::cuda: std::optional<ki::cuda::native_kernel>
//     std::printf("%d registers\n", n->attributes.numRegs);   // cudaFuncGetAttributes' answer
//     cudaFuncSetAttribute(n->function, ...);                  // the __global__ entry itself
//   }
//
// What it returns is the backend's: backend_traits<B>::native(k) (docs/adding-a-backend.md).
// CUDA and HIP return the kernel's __global__ entry and its function attributes on the active
// device, where the entry is known from the kernel's type alone (its operator() is not a
// template; a generic operator() is instantiated per launch's argument types, so there is no one
// entry, and the optional is empty). The CPU backends have no kernel object: ki::native does not
// compile for their kernels (`requires { ki::native(k); }` tells).
#pragma once
#include <ki/backend.hpp>
#include <ki/launch.hpp>

namespace ki {

/// The backend's kernel object of k (see above).
template <backend B, class F>
requires requires(const kernel<B, F>& k) { backend_traits<B>::native(k); }
auto native(const kernel<B, F>& k) { return backend_traits<B>::native(k); }

}  // namespace ki
