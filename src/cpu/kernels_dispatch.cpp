// The CPU kernels' public entry points (src/cpu/kernels.hpp): each exports
// its per-target functions (kernel_entries-inl.h, defined by the kernel
// units kernels_*.cpp) and dispatches once per call to the best target this
// CPU runs.
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_dispatch.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if HWY_ONCE
#include "cpu/kernels.hpp"

// GELU_KERNEL_UNITS: the targets the build compiled kernel units for
// (src/cpu/sources.cmake), 0 for one unit of every target.
#if GELU_KERNEL_UNITS != 0
static_assert((HWY_TARGETS & ~static_cast<int64_t>(GELU_KERNEL_UNITS)) == 0,
              "a Highway target has no kernel unit: add it to "
              "GELU_CPU_UNIT_TARGETS in src/cpu/sources.cmake");
#endif

namespace gelu::cpu {

HWY_EXPORT(GeluFwd);
HWY_EXPORT(GeluBwd);
HWY_EXPORT(AddFwd);
HWY_EXPORT(AddBwd);
HWY_EXPORT(BiasFwd);
HWY_EXPORT(BiasBwd);
HWY_EXPORT(GegluFwd);
HWY_EXPORT(GegluBwd);
HWY_EXPORT(ToF32);
HWY_EXPORT(FromF32);
HWY_EXPORT(SumsTo);
HWY_EXPORT(RoundResultsToBf16);
HWY_EXPORT(GeluFwdF32WithMathOf);
HWY_EXPORT(GeluBwdF32WithMathOf);
HWY_EXPORT(Target);

void gelu_fwd(Approx a, DType t, int64_t n, const void* x, void* y, bool stream) {
  HWY_DYNAMIC_DISPATCH(GeluFwd)(a, t, n, x, y, stream);
}
void gelu_bwd(Approx a, DType t, int64_t n, const void* dy, const void* x, void* dx,
              void* y, bool stream) {
  HWY_DYNAMIC_DISPATCH(GeluBwd)(a, t, n, dy, x, dx, y, stream);
}
void add_fwd(Approx a, DType t, int64_t n, const void* pa, const void* pb, void* y,
             bool stream) {
  HWY_DYNAMIC_DISPATCH(AddFwd)(a, t, n, pa, pb, y, stream);
}
void add_bwd(Approx a, DType t, int64_t n, const void* dy, const void* pa,
             const void* pb, void* dx, bool stream) {
  HWY_DYNAMIC_DISPATCH(AddBwd)(a, t, n, dy, pa, pb, dx, stream);
}

void bias_fwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t stride,
              const void* x, const void* bias, void* y, bool stream) {
  HWY_DYNAMIC_DISPATCH(BiasFwd)(a, t, rows, cols, stride, x, bias, y, stream);
}
void bias_bwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t stride,
              const void* dy, const void* x, const void* bias, void* dx, double* dbias,
              void* y, bool stream) {
  HWY_DYNAMIC_DISPATCH(BiasBwd)
  (a, t, rows, cols, stride, dy, x, bias, dx, dbias, y, stream);
}
void geglu_fwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t h, const void* x,
               void* y, bool gelu_second, bool stream) {
  HWY_DYNAMIC_DISPATCH(GegluFwd)(a, t, rows, cols, h, x, y, gelu_second, stream);
}
void geglu_bwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t h, const void* dy,
               const void* x, void* dx, bool gelu_second, void* y, bool stream) {
  HWY_DYNAMIC_DISPATCH(GegluBwd)
  (a, t, rows, cols, h, dy, x, dx, gelu_second, y, stream);
}

void to_f32(DType t, int64_t n, const void* in, float* out) {
  HWY_DYNAMIC_DISPATCH(ToF32)(t, n, in, out);
}
void from_f32(DType t, int64_t n, const float* in, void* out) {
  HWY_DYNAMIC_DISPATCH(FromF32)(t, n, in, out);
}
void sums_to(DType t, int64_t n, int64_t blocks, const double* in, void* out) {
  HWY_DYNAMIC_DISPATCH(SumsTo)(t, n, blocks, in, out);
}

void gelu_fwd_f32_with_math_of(DType t, Approx a, int64_t n, const float* x, float* y) {
  HWY_DYNAMIC_DISPATCH(GeluFwdF32WithMathOf)(t, a, n, x, y);
}
void gelu_bwd_f32_with_math_of(DType t, Approx a, int64_t n, const float* dy,
                               const float* x, float* dx) {
  HWY_DYNAMIC_DISPATCH(GeluBwdF32WithMathOf)(t, a, n, dy, x, dx);
}

void round_results_to_bf16(int64_t n, const float* in, uint16_t* out) {
  HWY_DYNAMIC_DISPATCH(RoundResultsToBf16)(n, in, out);
}

const char* target_name() { return hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)()); }
int64_t compiled_targets() { return HWY_TARGETS; }

std::vector<Target> runnable_targets() {
  // Read once, before any pin_target: SupportedTargets() then reports the
  // pinned mask.
  static const std::vector<Target> targets = [] {
    std::vector<Target> out;
    const int64_t runs = HWY_TARGETS & hwy::SupportedTargets();
    for (int64_t bits = runs; bits != 0; bits &= bits - 1) {
      const int64_t bit = bits & -bits;  // lowest bit first: the best target
      out.push_back({bit, hwy::TargetName(bit)});
    }
    return out;
  }();
  return targets;
}

void pin_target(int64_t bit) {
  runnable_targets();  // the CPU's own list, read before the mask changes
  hwy::SetSupportedTargetsForTest(bit);
}

}  // namespace gelu::cpu
#endif  // HWY_ONCE
