// The per-target entry points of the CPU kernels: one declaration each, in
// every target's namespace, from the list in kernel_list.h. Each kernel unit
// (kernels_*.cpp) defines some of them for the targets it compiles
// (kernel_unit.h); kernels_dispatch.cpp exports them (HWY_EXPORT) and picks
// a target per call. Arguments as in src/cpu/kernels.hpp, whose functions
// they implement.
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_KERNEL_ENTRIES_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_KERNEL_ENTRIES_INL_H_
#undef GELU_CPU_KERNEL_ENTRIES_INL_H_
#else
#define GELU_CPU_KERNEL_ENTRIES_INL_H_
#endif

#include <cstdint>

#include "cpu/kernel_list.h"
#include "gelu/gelu.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

// The exported entry points (kernel_list.h), each defined by one kernel unit.
#define GELU_DECLARE_ENTRY(Name, name, R, params, args) R Name params;
GELU_CPU_KERNEL_ENTRIES(GELU_DECLARE_ENTRY)
#undef GELU_DECLARE_ENTRY
// kernels_bias_bwd_value.cpp: BiasBwd with y (BiasBwd calls it; not exported)
void BiasBwdValue(Approx, DType, int64_t rows, int64_t cols, int64_t stride,
                  const void* dy, const void* x, const void* bias, void* dx,
                  double* dbias, void* y, bool stream);
// kernels_geglu_bwd_value.cpp: GegluBwd with y (GegluBwd calls it)
void GegluBwdValue(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* dy,
                   const void* x, void* dx, bool gelu_second, void* y, bool stream);

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
