// add_gelu's kernels, forward and backward (kernels.hpp: add_fwd, add_bwd),
// compiled per SIMD target (kernel_unit.h); kernels_dispatch.cpp picks the
// target per call.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_add.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void AddFwd(Approx form, DType t, int64_t n, const void* a, const void* b, void* y,
            bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    RowMaybeStreamed<decltype(m), S, kSum>(
        stream, n, {nullptr, CP<S>(a), CP<S>(b), P<S>(y), nullptr, nullptr});
  });
  FenceStreamed(stream);
}

void AddBwd(Approx form, DType t, int64_t n, const void* dy, const void* a,
            const void* b, void* dx, bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    RowMaybeStreamed<decltype(m), S, kSum | kBackward>(
        stream, n, {CP<S>(dy), CP<S>(a), CP<S>(b), P<S>(dx), nullptr, nullptr});
  });
  FenceStreamed(stream);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
