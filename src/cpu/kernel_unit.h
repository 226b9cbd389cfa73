// Which SIMD targets a kernel unit compiles.
//
// The kernel sources (kernels_*.cpp) are compiled once per SIMD target
// (src/cpu/sources.cmake): GELU_KERNEL_TARGET is the Highway target bit the
// object compiles, HWY_AVX2 say, or 0 for every target of HWY_TARGETS in one
// object (sanitizer builds, which compile one target, and architectures the
// build does not split). Every object sees the same HWY_TARGETS, so
// Highway's own inline functions agree between them; a unit only leaves out
// the bodies of the other targets:
//
//   #if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
//   void BiasFwd(...) { ... }
//   #endif
//
// One object per target and op family keeps every compiler process small and
// lets the build run them in parallel.
#pragma once

#ifndef GELU_KERNEL_TARGET
#error \
    "GELU_KERNEL_TARGET: the Highway target this unit compiles (src/cpu/sources.cmake)"
#endif

#define GELU_KERNEL_UNIT_COMPILES(target) \
  ((GELU_KERNEL_TARGET) == 0 || (target) == (GELU_KERNEL_TARGET))
