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

/// The emulated GPU (docs/offload.md, "The emulated GPU"): 0, or the dialect whose GPU pass a
/// host compilation also contains, run on the oracle's work-items: 1 CUDA (warps of 32, the
/// *_sync intrinsics), 2 HIP (wavefronts of 64 in lockstep, HIP 5.2's intrinsics). Set by the
/// CMake targets ki::emulated_cuda / ki::emulated_hip, never by nvcc or hipcc.
#ifndef KI_GPU_EMULATION
#define KI_GPU_EMULATION 0
#endif
#if KI_GPU_EMULATION && (defined(__CUDACC__) || defined(__HIPCC__))
#error "KI_GPU_EMULATION is for host compilers: nvcc and hipcc compile the real GPU pass"
#endif
/// 1 where the GPU pass's code is compiled: the device pass of nvcc / hipcc, or a host
/// compilation with the emulated GPU (where it sits beside the CPU pass's code).
#if KI_GPU_PASS || KI_GPU_EMULATION
#define KI_GPU_CODE 1
#else
#define KI_GPU_CODE 0
#endif
/// 1 where the GPU code is HIP's: under hipcc (either pass), or the emulated HIP dialect.
#if defined(__HIPCC__) || KI_GPU_EMULATION == 2
#define KI_GPU_HIP 1
#else
#define KI_GPU_HIP 0
#endif
/// Opens the GPU branch of a device function that has both: `KI_GPU_BRANCH { ...; return; }`
/// (the branch always ends in a return). In a device pass the block is simply the body; with
/// the emulated GPU it runs on the emulated GPU's threads only, and every other caller (the
/// CPU backends' work-items, in the same program) goes on to the CPU code after it.
#if KI_GPU_PASS
#define KI_GPU_BRANCH
#elif KI_GPU_EMULATION
#define KI_GPU_BRANCH if (::ki::detail::gpu::emulated_thread())
#endif

/// A lambda usable as a kernel on every backend: `KI_LAMBDA(ki::span<float> a) { ... }`.
/// Captures by value (kernels receive copies, as on GPUs). nvcc needs --extended-lambda.
#define KI_LAMBDA [=] KI_DEVICE

/// A kernel lambda that captures arrays: `KI_LAMBDA_CAPTURE(a, b)(std::int64_t n) { ... }` captures
/// each named variable as ki::device_capture(it) (ki/argconvert.hpp) -- a ki::array as a span on
/// its own backend, a trivially copyable value as itself -- and everything else it uses by value,
/// as KI_LAMBDA does. Up to 16 names, each a plain variable name. (C++ cannot enumerate a
/// lambda's captures, so the arrays are named; the spans do not keep the arrays alive.)
/// Under nvcc the lambda is __device__ only: nvcc refuses init-captures in __host__ __device__
/// lambdas, so in a .cu file it runs on the GPU backend and not on the CPU backends (use a
/// functor with an argconvert, or capture spans with KI_LAMBDA, in code that must run on both).
#if defined(__NVCC__)
#define KI_DETAIL_CAPTURE_MARK __device__
#else
#define KI_DETAIL_CAPTURE_MARK KI_DEVICE
#endif
#define KI_LAMBDA_CAPTURE(...) \
  [ =, KI_DETAIL_CAPTURE_LIST(KI_DETAIL_CAPTURE_COUNT(__VA_ARGS__), __VA_ARGS__) ] KI_DETAIL_CAPTURE_MARK
#define KI_DETAIL_CAPTURE_ONE(x) x = ::ki::device_capture(x)
#define KI_DETAIL_CAPTURE_NTH(_1, _2, _3, _4, _5, _6, _7, _8, _9, _10, _11, _12, _13, _14, _15, _16, N, ...) N
#define KI_DETAIL_CAPTURE_COUNT(...) \
  KI_DETAIL_CAPTURE_NTH(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define KI_DETAIL_CAPTURE_LIST(n, ...) KI_DETAIL_CAPTURE_CAT(KI_DETAIL_CAPTURE_, n)(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_CAT(a, b) KI_DETAIL_CAPTURE_CAT2(a, b)
#define KI_DETAIL_CAPTURE_CAT2(a, b) a##b
#define KI_DETAIL_CAPTURE_1(x) KI_DETAIL_CAPTURE_ONE(x)
#define KI_DETAIL_CAPTURE_2(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_1(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_3(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_2(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_4(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_3(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_5(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_4(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_6(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_5(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_7(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_6(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_8(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_7(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_9(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_8(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_10(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_9(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_11(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_10(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_12(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_11(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_13(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_12(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_14(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_13(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_15(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_14(__VA_ARGS__)
#define KI_DETAIL_CAPTURE_16(x, ...) KI_DETAIL_CAPTURE_ONE(x), KI_DETAIL_CAPTURE_15(__VA_ARGS__)
