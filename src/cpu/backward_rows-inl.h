// The bodies of bias_gelu's and geglu's backward entry points for one
// kExtra: 0, or kValue to also store the forward's value y. Each is
// compiled in its own unit (kernels_bias_bwd.cpp and
// kernels_bias_bwd_value.cpp, and geglu's two), which halves the largest
// compiler processes of the build (docs/build.md).
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_BACKWARD_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_BACKWARD_ROWS_INL_H_
#undef GELU_CPU_BACKWARD_ROWS_INL_H_
#else
#define GELU_CPU_BACKWARD_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "cpu/kernels.hpp"
#include "cpu/narrow_rows-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

// bias_gelu_backward (kernels.hpp: bias_bwd) of one form and dtype: the
// narrow-row path or rows of the wide one; y is null unless kExtra is kValue.
// The caller fences streamed stores.
template <class Math, class S, unsigned kExtra>
HWY_INLINE void BiasBackward(int64_t rows, int64_t cols, int64_t stride, const void* dy,
                             const void* x, const void* bias, void* dx, double* dbias,
                             void* y, bool stream) {
  if (dbias_narrow(rows, cols, stride)) {
    BiasBackwardNarrow<Math, S, kExtra>(static_cast<size_t>(rows),
                                        static_cast<size_t>(cols), CP<S>(dy), CP<S>(x),
                                        CP<S>(bias), P<S>(dx), dbias, P<S>(y));
    return;
  }
  BiasBackwardRows<Math, S, kExtra>(
      static_cast<size_t>(rows), static_cast<size_t>(cols), static_cast<size_t>(stride),
      CP<S>(dy), CP<S>(x), CP<S>(bias), P<S>(dx), dbias, P<S>(y), stream);
}

// geglu_backward (kernels.hpp: geglu_bwd) of one form and dtype, as
// BiasBackward.
template <class Math, class S, unsigned kExtra>
HWY_INLINE void GegluBackward(int64_t rows, int64_t cols, int64_t h, const void* dy,
                              const void* x, void* dx, bool gelu_second, void* y,
                              bool stream) {
  const int64_t g = gelu_second ? h : 0, u = h - g;
  if (!gelu_second && cols == h && rows > 1 && h < static_cast<int64_t>(kNarrowCols)) {
    GegluBackwardNarrow<Math, S, kExtra>(static_cast<size_t>(rows),
                                         static_cast<size_t>(h), CP<S>(dy), CP<S>(x),
                                         P<S>(dx), P<S>(y));
    return;
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
    RowMaybeStreamed<Math, S, kGated | kBackward | kExtra>(stream, cols, st);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_BACKWARD_ROWS_INL_H_
