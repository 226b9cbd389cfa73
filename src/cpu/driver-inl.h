// The one kernel driver, per target: every op of src/cpu/kernels.hpp is a
// call of Row<Math, Storage, Flags> (Transformer Engine style: the form's math
// struct and the fusion flags are template parameters, nothing is copied per
// dtype or per op).
//
// Row walks `count` consecutive positions one vector at a time. The last,
// partial vector goes through the same Step with kTail = true: its inputs are
// copied into a zero-padded stack buffer and its outputs out of one, so no
// lane is read or written out of bounds on any target (Highway 1.0 has no
// LoadN, and its MaskedLoad may touch the whole vector on SSE4/EMU128).
//
// In place: a step loads all of its inputs before it stores, and positions
// map one to one, so an output may be the very buffer of an input.
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_DRIVER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_DRIVER_INL_H_
#undef GELU_CPU_DRIVER_INL_H_
#else
#define GELU_CPU_DRIVER_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu/gelu_math-inl.h"
#include "cpu/storage-inl.h"
#include "gelu/gelu.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Fusion flags of Row.
enum : unsigned {
  kSum = 1,       // pre-activation is x + x2 (add_gelu: b; bias_gelu: bias)
  kGated = 2,     // x2 is the GeGLU gate: y = gelu(x) * x2
  kBackward = 4,  // dy in, dx out (and dx2, the gate's gradient, if gated)
  kDbias = 8,     // also add dx into the per-column double sums `dbias`
};

// The streams of one Row call; unused ones are null. All hold `count`
// elements (dbias: `count` doubles).
template <class S>
struct Streams {
  using T = typename S::T;
  const T* dy;
  const T* x;
  const T* x2;
  T* out;
  T* out2;
  double* dbias;
};

namespace detail {

constexpr size_t kMaxF32Lanes = HWY_MAX_BYTES / sizeof(float) > 0 ? HWY_MAX_BYTES / sizeof(float) : 1;

// Loads lanes [i, i + rem) of p as f32 (the rest zero when kTail).
template <bool kTail, class S, class DF>
HWY_INLINE hn::Vec<DF> In(DF df, const typename S::T* p, size_t i, size_t rem) {
  if constexpr (!kTail) {
    return S::Load(df, p + i);
  } else {
    HWY_ALIGN typename S::T buf[kMaxF32Lanes] = {};
    std::memcpy(buf, p + i, rem * sizeof(buf[0]));
    return S::Load(df, buf);
  }
}

// Stores lanes [i, i + rem) of v to p (only rem lanes when kTail).
template <bool kTail, class S, class DF>
HWY_INLINE void Out(DF df, hn::Vec<DF> v, typename S::T* p, size_t i,
                    size_t rem) {
  if constexpr (!kTail) {
    S::Store(df, v, p + i);
  } else {
    HWY_ALIGN typename S::T buf[kMaxF32Lanes];
    S::Store(df, v, buf);
    std::memcpy(p + i, buf, rem * sizeof(buf[0]));
  }
}

// sums[i, i + rem) += v, in double.
template <bool kTail, class DF>
HWY_INLINE void AddToSums(DF df, hn::Vec<DF> v, double* sums, size_t i,
                          size_t rem) {
#if HWY_TARGET == HWY_SCALAR
  // One lane: never a partial vector.
  (void)rem;
  const hn::Rebind<double, DF> dd;
  hn::StoreU(hn::Add(hn::LoadU(dd, sums + i), hn::PromoteTo(dd, v)), dd, sums + i);
#else
  const hn::Half<DF> dh;
  const hn::Rebind<double, decltype(dh)> dd;
  const size_t nd = hn::Lanes(dd);
  const auto lo = hn::PromoteTo(dd, hn::LowerHalf(dh, v));
  const auto hi = hn::PromoteTo(dd, hn::UpperHalf(dh, v));
  if constexpr (!kTail) {
    hn::StoreU(hn::Add(hn::LoadU(dd, sums + i), lo), dd, sums + i);
    hn::StoreU(hn::Add(hn::LoadU(dd, sums + i + nd), hi), dd, sums + i + nd);
  } else {
    HWY_ALIGN double buf[kMaxF32Lanes] = {};
    std::memcpy(buf, sums + i, rem * sizeof(double));
    hn::Store(hn::Add(hn::Load(dd, buf), lo), dd, buf);
    hn::Store(hn::Add(hn::Load(dd, buf + nd), hi), dd, buf + nd);
    std::memcpy(sums + i, buf, rem * sizeof(double));
  }
#endif
  (void)df;
}

// One vector (or the final partial one) of positions [i, i + rem).
template <class Math, class S, unsigned F, bool kTail, class DF>
HWY_INLINE void Step(DF df, const Streams<S>& s, size_t i, size_t rem) {
  auto x = In<kTail, S>(df, s.x, i, rem);
  hn::Vec<DF> x2;
  if constexpr ((F & (kSum | kGated)) != 0) x2 = In<kTail, S>(df, s.x2, i, rem);
  if constexpr ((F & kSum) != 0) x = hn::Add(x, x2);

  if constexpr ((F & kBackward) == 0) {
    auto y = Math::Value(df, x);
    if constexpr ((F & kGated) != 0) y = hn::Mul(y, x2);
    Out<kTail, S>(df, y, s.out, i, rem);
  } else {
    const auto dy = In<kTail, S>(df, s.dy, i, rem);
    if constexpr ((F & kGated) != 0) {
      hn::Vec<DF> value, grad;
      Math::ValueAndGrad(df, x, value, grad);
      Out<kTail, S>(df, hn::Mul(hn::Mul(dy, x2), grad), s.out, i, rem);
      Out<kTail, S>(df, hn::Mul(dy, value), s.out2, i, rem);
    } else {
      const auto dx = hn::Mul(dy, Math::Grad(df, x));
      Out<kTail, S>(df, dx, s.out, i, rem);
      if constexpr ((F & kDbias) != 0) AddToSums<kTail>(df, dx, s.dbias, i, rem);
    }
  }
}

}  // namespace detail

// Runs the op over positions [0, count) of the streams.
template <class Math, class S, unsigned F>
HWY_INLINE void Row(size_t count, const Streams<S>& s) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (count >= N) {
    for (; i <= count - N; i += N) detail::Step<Math, S, F, false>(df, s, i, N);
  }
  if (i < count) detail::Step<Math, S, F, true>(df, s, i, count - i);
}

// Calls fn(Math{}) with the math struct of the form.
template <class Fn>
HWY_INLINE void WithForm(Approx form, Fn&& fn) {
  switch (form) {
    case Approx::none: return fn(GeluErfMath());
    case Approx::tanh: return fn(GeluTanhMath());
    case Approx::quick: return fn(GeluQuickMath());
  }
}

// Calls fn(Storage{}) with the storage tag of the dtype.
template <class Fn>
HWY_INLINE void WithDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(F32());
    case DType::bf16: return fn(BF16());
    case DType::f16: return fn(F16());
  }
}

// Calls fn(Math{}, Storage{}) for the form and dtype: one switch per call.
template <class Fn>
HWY_INLINE void WithFormAndDType(Approx form, DType t, Fn&& fn) {
  WithForm(form, [&](auto math) {
    WithDType(t, [&](auto storage) { fn(math, storage); });
  });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_DRIVER_INL_H_
