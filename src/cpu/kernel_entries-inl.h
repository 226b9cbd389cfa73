// The per-target entry points of the CPU kernels: one declaration each, in
// every target's namespace. Each kernel unit (kernels_*.cpp) defines some of
// them for the targets it compiles (kernel_unit.h); kernels_dispatch.cpp
// exports them (HWY_EXPORT) and picks a target per call. Arguments as in
// src/cpu/kernels.hpp, whose functions they implement.
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_KERNEL_ENTRIES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_KERNEL_ENTRIES_INL_H_
#undef GELU_CPU_KERNEL_ENTRIES_INL_H_
#else
#define GELU_CPU_KERNEL_ENTRIES_INL_H_
#endif

#include <cstdint>

#include "gelu/gelu.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

// kernels_gelu.cpp
void GeluFwd(Approx, DType, int64_t n, const void* x, void* y, bool stream);
void GeluBwd(Approx, DType, int64_t n, const void* dy, const void* x, void* dx, void* y,
             bool stream);
void GeluFwdF32WithMathOf(DType, Approx, int64_t n, const float* x, float* y);
void GeluBwdF32WithMathOf(DType, Approx, int64_t n, const float* dy, const float* x,
                          float* dx);
// kernels_add.cpp
void AddFwd(Approx, DType, int64_t n, const void* a, const void* b, void* y,
            bool stream);
void AddBwd(Approx, DType, int64_t n, const void* dy, const void* a, const void* b,
            void* dx, bool stream);
// kernels_bias_fwd.cpp, kernels_bias_bwd.cpp
void BiasFwd(Approx, DType, int64_t rows, int64_t cols, int64_t stride, const void* x,
             const void* bias, void* y, bool stream);
void BiasBwd(Approx, DType, int64_t rows, int64_t cols, int64_t stride, const void* dy,
             const void* x, const void* bias, void* dx, double* dbias, void* y,
             bool stream);
// kernels_bias_bwd_value.cpp: BiasBwd with y (BiasBwd calls it; not exported)
void BiasBwdValue(Approx, DType, int64_t rows, int64_t cols, int64_t stride,
                  const void* dy, const void* x, const void* bias, void* dx,
                  double* dbias, void* y, bool stream);
// kernels_geglu_fwd.cpp, kernels_geglu_bwd.cpp
void GegluFwd(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* x,
              void* y, bool gelu_second, bool stream);
void GegluBwd(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* dy,
              const void* x, void* dx, bool gelu_second, void* y, bool stream);
// kernels_geglu_bwd_value.cpp: GegluBwd with y (GegluBwd calls it)
void GegluBwdValue(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* dy,
                   const void* x, void* dx, bool gelu_second, void* y, bool stream);
// kernels_convert.cpp
void ToF32(DType, int64_t n, const void* in, float* out);
void FromF32(DType, int64_t n, const float* in, void* out);
void SumsTo(DType, int64_t n, int64_t blocks, const double* in, void* out);
void RoundResultsToBf16(int64_t n, const float* in, uint16_t* out);
int64_t Target();

// Typed views of the entry points' untyped pointers, for storage tag S.
template <class S>
using P = typename S::T*;
template <class S>
using CP = const typename S::T*;

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_KERNEL_ENTRIES_INL_H_
