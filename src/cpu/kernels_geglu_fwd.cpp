// geglu's forward kernel (kernels.hpp: geglu_fwd), compiled per SIMD target
// (kernel_unit.h); kernels_dispatch.cpp picks the target per call.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_geglu_fwd.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "cpu/narrow_rows-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

// `g` and `u`: offsets in a row of the GELU's half and of its multiplier.
void GegluFwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t h,
              const void* x, void* y, bool gelu_second, bool stream) {
  const int64_t g = gelu_second ? h : 0, u = h - g;
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    // The narrow path deinterleaves [gelu half | multiplier] rows; the
    // GELU on the second half keeps the per-row walk.
    if (!gelu_second && cols == h && rows > 1 &&
        h < static_cast<int64_t>(kNarrowCols)) {
      return GegluForwardNarrow<decltype(m), S>(
          static_cast<size_t>(rows), static_cast<size_t>(h), CP<S>(x), P<S>(y));
    }
    for (int64_t r = 0; r < rows; ++r) {
      const auto xr = CP<S>(x) + r * 2 * h;
      RowMaybeStreamed<decltype(m), S, kGated>(
          stream, cols, {nullptr, xr + g, xr + u, P<S>(y) + r * h, nullptr, nullptr});
    }
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
