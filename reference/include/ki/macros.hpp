// Macros that must be macros: device-function markers and the kernel-lambda spelling.
#pragma once

#if defined(__CUDACC__) || defined(__HIPCC__)
/// Marks a function callable from kernels on every backend (host and device under nvcc/hipcc).
#define KI_DEVICE __host__ __device__
#else
#define KI_DEVICE
#endif

/// Forces inlining where a partly inlined function would cost more than the call (see span.hpp).
#if defined(__GNUC__) || defined(__clang__)
#define KI_ALWAYS_INLINE __attribute__((always_inline)) inline
#else
#define KI_ALWAYS_INLINE inline
#endif

/// 1 in the compilation pass that generates GPU code (nvcc/hipcc device pass), else 0. Device
/// functions dispatch on it: GPU intrinsics there, the CPU executor's thread-local state otherwise.
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
#define KI_GPU_PASS 1
#else
#define KI_GPU_PASS 0
#endif

/// A lambda usable as a kernel on every backend: `KI_LAMBDA(ki::span<float> a) { ... }`.
/// Captures by value (kernels receive copies, as on GPUs). nvcc needs --extended-lambda.
#define KI_LAMBDA [=] KI_DEVICE
