// Element-wise kernels (gelu, add_gelu; forward and backward), compiled once
// per SIMD target and dispatched once per call.
#include <cstdint>
#include <cstring>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_eltwise.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class S>
using P = typename S::T*;
template <class S>
using CP = const typename S::T*;

void GeluFwd(Approx form, DType t, int64_t n, const void* x, void* y) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    Row<decltype(m), S, 0>(n, {nullptr, CP<S>(x), nullptr, P<S>(y), nullptr, nullptr});
  });
}

void GeluBwd(Approx form, DType t, int64_t n, const void* dy, const void* x,
             void* dx) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    Row<decltype(m), S, kBackward>(
        n, {CP<S>(dy), CP<S>(x), nullptr, P<S>(dx), nullptr, nullptr});
  });
}

void AddFwd(Approx form, DType t, int64_t n, const void* a, const void* b,
            void* y) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    Row<decltype(m), S, kSum>(
        n, {nullptr, CP<S>(a), CP<S>(b), P<S>(y), nullptr, nullptr});
  });
}

void AddBwd(Approx form, DType t, int64_t n, const void* dy, const void* a,
            const void* b, void* dx) {
  WithFormAndDType(form, t, [&](auto m, auto s) {
    using S = decltype(s);
    Row<decltype(m), S, kSum | kBackward>(
        n, {CP<S>(dy), CP<S>(a), CP<S>(b), P<S>(dx), nullptr, nullptr});
  });
}

// Storage conversions through the kernels' own load/store path (tests check
// them bit for bit against src/core/convert.hpp).
template <class From, class To>
void Convert(size_t n, const typename From::T* in, typename To::T* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (n >= N) {
    for (; i <= n - N; i += N) To::Store(df, From::Load(df, in + i), out + i);
  }
  if (i < n) {
    HWY_ALIGN typename From::T a[detail::kMaxStep];
    HWY_ALIGN typename To::T b[detail::kMaxStep];
    To::Store(df, From::Load(df, detail::Stage(in + i, a, n - i)), b);
    std::memcpy(out + i, b, (n - i) * sizeof(b[0]));
  }
}

void ToF32(DType t, int64_t n, const void* in, float* out) {
  WithDType(t, [&](auto s) {
    using S = decltype(s);
    Convert<S, F32>(n, CP<S>(in), out);
  });
}

void FromF32(DType t, int64_t n, const float* in, void* out) {
  WithDType(t, [&](auto s) {
    using S = decltype(s);
    Convert<F32, S>(n, in, P<S>(out));
  });
}

int64_t Target() { return HWY_TARGET; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "cpu/kernels.hpp"

namespace gelu::cpu {

HWY_EXPORT(GeluFwd);
HWY_EXPORT(GeluBwd);
HWY_EXPORT(AddFwd);
HWY_EXPORT(AddBwd);
HWY_EXPORT(Target);
HWY_EXPORT(ToF32);
HWY_EXPORT(FromF32);

void gelu_fwd(Approx a, DType t, int64_t n, const void* x, void* y) {
  HWY_DYNAMIC_DISPATCH(GeluFwd)(a, t, n, x, y);
}
void gelu_bwd(Approx a, DType t, int64_t n, const void* dy, const void* x,
              void* dx) {
  HWY_DYNAMIC_DISPATCH(GeluBwd)(a, t, n, dy, x, dx);
}
void add_fwd(Approx a, DType t, int64_t n, const void* pa, const void* pb,
             void* y) {
  HWY_DYNAMIC_DISPATCH(AddFwd)(a, t, n, pa, pb, y);
}
void add_bwd(Approx a, DType t, int64_t n, const void* dy, const void* pa,
             const void* pb, void* dx) {
  HWY_DYNAMIC_DISPATCH(AddBwd)(a, t, n, dy, pa, pb, dx);
}

void to_f32(DType t, int64_t n, const void* in, float* out) {
  HWY_DYNAMIC_DISPATCH(ToF32)(t, n, in, out);
}
void from_f32(DType t, int64_t n, const float* in, void* out) {
  HWY_DYNAMIC_DISPATCH(FromF32)(t, n, in, out);
}

const char* target_name() {
  return hwy::TargetName(HWY_DYNAMIC_DISPATCH(Target)());
}
int64_t compiled_targets() { return HWY_TARGETS; }

}  // namespace gelu::cpu
#endif  // HWY_ONCE
