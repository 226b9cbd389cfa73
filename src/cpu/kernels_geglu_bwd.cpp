// geglu's backward kernel (kernels.hpp: geglu_bwd), compiled per SIMD target
// (kernel_unit.h); kernels_dispatch.cpp picks the target per call. With y
// (the forward's value too) it goes on in kernels_geglu_bwd_value.cpp.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_geglu_bwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/backward_rows-inl.h"
#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void GegluBwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t h,
              const void* dy, const void* x, void* dx, bool gelu_second, void* y,
              bool stream) {
  if (y) {
    GegluBwdValue(form, t, rows, cols, h, dy, x, dx, gelu_second, y, stream);
    return;
  }
  WithFormAndDType(form, t, [&](auto m, auto s) {
    GegluBackward<decltype(m), decltype(s), 0>(rows, cols, h, dy, x, dx, gelu_second,
                                               nullptr, stream);
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
