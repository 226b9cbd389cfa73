// Row kernels (bias_gelu and geglu; forward and backward), compiled once per
// SIMD target and dispatched once per call.
#include <cstdint>
#include <type_traits>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_rows.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/narrow_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

template <class S>
using P = typename S::T*;
template <class S>
using CP = const typename S::T*;

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

void BiasBwd(Approx form, DType t, int64_t rows, int64_t cols, int64_t stride,
             const void* dy, const void* x, const void* bias, void* dx, double* dbias,
             void* y, bool stream) {
  if (rows == 0) {  // otherwise the first row group stores the sums
    for (int64_t j = 0; j < cols; ++j) dbias[j] = 0.0;
  }
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    if (dbias_narrow(rows, cols, stride)) {
      if (y) {
        return BiasBackwardNarrow<decltype(m), S, kValue>(
            static_cast<size_t>(rows), static_cast<size_t>(cols), CP<S>(dy), CP<S>(x),
            CP<S>(bias), P<S>(dx), dbias, P<S>(y));
      }
      return BiasBackwardNarrow<decltype(m), S>(static_cast<size_t>(rows),
                                                static_cast<size_t>(cols), CP<S>(dy),
                                                CP<S>(x), CP<S>(bias), P<S>(dx), dbias);
    }
    const auto rows_with = [&](auto extra) {
      BiasBackwardRows<decltype(m), S, decltype(extra)::value>(
          rows, cols, stride, CP<S>(dy), CP<S>(x), CP<S>(bias), P<S>(dx), dbias,
          P<S>(y));
    };
    using V = std::integral_constant<unsigned, kValue>;
    using VS = std::integral_constant<unsigned, kValue | kStream>;
    using N = std::integral_constant<unsigned, 0>;
    using NS = std::integral_constant<unsigned, kStream>;
    if (y) stream ? rows_with(VS()) : rows_with(V());
    else stream ? rows_with(NS()) : rows_with(N());
  });
  FenceStreamed(stream);
}

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

#if HWY_ONCE
#include "cpu/kernels.hpp"

namespace gelu::cpu {

HWY_EXPORT(BiasFwd);
HWY_EXPORT(BiasBwd);
HWY_EXPORT(GegluFwd);
HWY_EXPORT(GegluBwd);

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

}  // namespace gelu::cpu
#endif  // HWY_ONCE
