// bias_gelu's backward kernel (kernels.hpp: bias_bwd), compiled per SIMD
// target (kernel_unit.h); kernels_dispatch.cpp picks the target per call.
// With y (the forward's value too) it goes on in kernels_bias_bwd_value.cpp.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_bias_bwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/backward_rows-inl.h"
#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void BiasBwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t stride,
             const void* dy, const void* x, const void* bias, void* dx, double* dbias,
             void* y, bool stream) {
  if (rows == 0) {  // otherwise the first row group stores the sums
    for (int64_t j = 0; j < cols; ++j) dbias[j] = 0.0;
  }
  if (y) {
    BiasBwdValue(form, t, rows, cols, stride, dy, x, bias, dx, dbias, y, stream);
    return;
  }
  WithFormAndDType(form, t, [&](auto m, auto s) {
    BiasBackward<decltype(m), decltype(s), 0>(rows, cols, stride, dy, x, bias, dx,
                                              dbias, nullptr, stream);
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
