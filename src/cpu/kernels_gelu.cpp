// gelu's kernels, forward and backward (kernels.hpp: gelu_fwd, gelu_bwd and
// the tests' *_with_math_of), compiled per SIMD target (kernel_unit.h);
// kernels_dispatch.cpp picks the target per call.
#include <cstdint>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_gelu.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

void GeluFwd(Approx form, DType t, int64_t n, const void* x, void* y, bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    RowMaybeStreamed<decltype(m), S, 0>(
        stream, n, {nullptr, CP<S>(x), nullptr, P<S>(y), nullptr, nullptr});
  });
  FenceStreamed(stream);
}

void GeluBwd(Approx form, DType t, int64_t n, const void* dy, const void* x, void* dx,
             void* y, bool stream) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    const Streams<S> st{CP<S>(dy), CP<S>(x), nullptr, P<S>(dx),
                        nullptr,   nullptr,  P<S>(y)};
    if (y) RowMaybeStreamed<decltype(m), S, kBackward | kValue>(stream, n, st);
    else RowMaybeStreamed<decltype(m), S, kBackward>(stream, n, st);
  });
  FenceStreamed(stream);
}

// Calls fn(Math{}) with the math the kernels use for results of dtype t.
template <class Fn>
void WithMathOf(DType t, Approx form, Fn&& fn) {
  WithForm(form, [&](auto m) {
    using M = decltype(m);
    if (t == DType::f32) fn(M());
    else fn(typename M::ForBf16F16());
  });
}

void GeluFwdF32WithMathOf(DType t, Approx form, int64_t n, const float* x, float* y) {
  WithMathOf(t, form, [&](auto m) {
    Row<decltype(m), F32, 0>(n, {nullptr, x, nullptr, y, nullptr, nullptr});
  });
}

void GeluBwdF32WithMathOf(DType t, Approx form, int64_t n, const float* dy,
                          const float* x, float* dx) {
  WithMathOf(t, form, [&](auto m) {
    Row<decltype(m), F32, kBackward>(n, {dy, x, nullptr, dx, nullptr, nullptr});
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
