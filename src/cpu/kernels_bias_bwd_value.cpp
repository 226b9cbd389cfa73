// bias_gelu's backward kernel that also stores the forward's value y
// (kernels_bias_bwd.cpp calls it), compiled per SIMD target (kernel_unit.h).
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_bias_bwd_value.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/backward_rows-inl.h"
#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void BiasBwdValue(Approx form, DType t, int64_t rows, int64_t cols, int64_t stride,
                  const void* dy, const void* x, const void* bias, void* dx,
                  double* dbias, void* y, bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    BiasBackward<decltype(m), decltype(s), kValue>(rows, cols, stride, dy, x, bias, dx,
                                                   dbias, y, stream);
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
