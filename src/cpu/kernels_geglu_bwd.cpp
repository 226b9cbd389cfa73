// geglu's backward kernel (kernels.hpp: geglu_bwd), compiled per SIMD target
// (kernel_unit.h); kernels_dispatch.cpp picks the target per call.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_geglu_bwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "cpu/narrow_rows-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void GegluBwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t h,
              const void* dy, const void* x, void* dx, bool gelu_second, void* y,
              bool stream) {
  const int64_t g = gelu_second ? h : 0, u = h - g;
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    if (!gelu_second && cols == h && rows > 1 &&
        h < static_cast<int64_t>(kNarrowCols)) {
      if (y) {
        return GegluBackwardNarrow<decltype(m), S, kValue>(
            static_cast<size_t>(rows), static_cast<size_t>(h), CP<S>(dy), CP<S>(x),
            P<S>(dx), P<S>(y));
      }
      return GegluBackwardNarrow<decltype(m), S>(static_cast<size_t>(rows),
                                                 static_cast<size_t>(h), CP<S>(dy),
                                                 CP<S>(x), P<S>(dx));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const auto xr = CP<S>(x) + r * 2 * h;
      const auto dxr = P<S>(dx) + r * 2 * h;
      const Streams<S> st{CP<S>(dy) + r * h,
                          xr + g,
                          xr + u,
                          dxr + g,
                          dxr + u,
                          nullptr,
                          y ? P<S>(y) + r * h : nullptr};
      if (y)
        RowMaybeStreamed<decltype(m), S, kGated | kBackward | kValue>(stream, cols, st);
      else RowMaybeStreamed<decltype(m), S, kGated | kBackward>(stream, cols, st);
    }
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
