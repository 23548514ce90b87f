// Compile-time feature checks (Metal's metal_version / apple_family): ki::target describes the
// target the code is being compiled for, as a constant, so that a kernel can put an operation
// the target lacks in a branch that is compiled out:
//
//   if constexpr (ki::target.atomics64) ki::atomic_fetch_max(&a[0], v);   // 64-bit atomics
//   else fallback(a, v);
//
// Without such a check an operation the target cannot do fails to compile, with a static_assert
// that names the feature ("... needs 64-bit atomics: ki::target.atomics64 is false ..."). Inside
// a function that is not a template the discarded branch is checked but not instantiated, so
// the static_asserts of the operations in it do not fire.
//
// The values are the device pass's on CUDA and HIP (__CUDA_ARCH__, the gfx macros, the
// wavefront size); the CPU backends and the host pass of nvcc / hipcc see the CPU target (code
// the host pass compiles for a kernel never runs). Every target ki compiles for today has 64-bit
// atomics and float64; to develop the fallbacks of a kernel for devices that do not (Apple GPUs
// have neither), compile its translation unit with KI_TARGET_ATOMICS64=0 and/or
// KI_TARGET_FLOAT64=0 and run it on the reference backend (with the `apple` profile, which
// also reports at run time what such a device lacks).
#pragma once
#include <ki/macros.hpp>

#ifndef KI_TARGET_ATOMICS64
#define KI_TARGET_ATOMICS64 1
#endif
#ifndef KI_TARGET_FLOAT64
#define KI_TARGET_FLOAT64 1
#endif

namespace ki {

enum class target_kind { cpu, cuda, hip };

/// What code is compiled for.
struct target_description {
  target_kind kind;
  /// __CUDA_ARCH__ of the CUDA device pass (900 for sm_90), 0 elsewhere.
  int cuda_arch;
  /// The HIP device pass's gfx number as hex digits (0x90a for gfx90a, 0x1100 for gfx1100), 0
  /// elsewhere (and for an architecture this header does not know).
  int hip_gfx;
  /// The sub-group width fixed by the target (32 on NVIDIA GPUs, the wavefront size on AMD), 0
  /// where the backend chooses it at run time (the CPU backends: ki::sub_group_size(backend)).
  int sub_group_width;
  /// 64-bit integer atomics (and double atomics, with float64).
  bool atomics64;
  /// double: arithmetic, atomics.
  bool float64;
};

namespace detail {
constexpr int hip_gfx_of() {
#if defined(__gfx900__)
  return 0x900;
#elif defined(__gfx906__)
  return 0x906;
#elif defined(__gfx908__)
  return 0x908;
#elif defined(__gfx90a__)
  return 0x90a;
#elif defined(__gfx940__)
  return 0x940;
#elif defined(__gfx941__)
  return 0x941;
#elif defined(__gfx942__)
  return 0x942;
#elif defined(__gfx1030__)
  return 0x1030;
#elif defined(__gfx1100__)
  return 0x1100;
#else
  return 0;
#endif
}
}  // namespace detail

#if KI_GPU_PASS && defined(__HIPCC__)
inline constexpr target_description target {
  target_kind::hip, 0, detail::hip_gfx_of(),
#if defined(__AMDGCN_WAVEFRONT_SIZE)
      __AMDGCN_WAVEFRONT_SIZE,
#else
      64,
#endif
      KI_TARGET_ATOMICS64 != 0, KI_TARGET_FLOAT64 != 0
};
#elif KI_GPU_PASS
inline constexpr target_description target{target_kind::cuda,        __CUDA_ARCH__,         0, 32,
                                           KI_TARGET_ATOMICS64 != 0, KI_TARGET_FLOAT64 != 0};
#else
inline constexpr target_description target{target_kind::cpu, 0, 0, 0, KI_TARGET_ATOMICS64 != 0, KI_TARGET_FLOAT64 != 0};
#endif

}  // namespace ki
