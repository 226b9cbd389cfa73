// bias_gelu's forward kernel (kernels.hpp: bias_fwd), compiled per SIMD
// target (kernel_unit.h); kernels_dispatch.cpp picks the target per call.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_bias_fwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "cpu/narrow_rows-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void BiasFwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t stride,
             const void* x, const void* bias, void* y, bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    // Contiguous rows (the chunk is whole rows) of up to kFlatMaxCols: one
    // flat pass, no per-row call or tail step.
    if (stride == cols && rows > 1 && cols <= static_cast<int64_t>(kFlatMaxCols)) {
      return BiasForwardFlat<decltype(m), S>(static_cast<size_t>(rows),
                                             static_cast<size_t>(cols), CP<S>(x),
                                             CP<S>(bias), P<S>(y));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t o = r * stride;
      RowMaybeStreamed<decltype(m), S, kSum>(
          stream, cols,
          {nullptr, CP<S>(x) + o, CP<S>(bias), P<S>(y) + o, nullptr, nullptr});
    }
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
