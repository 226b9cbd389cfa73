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

constexpr size_t kMaxF32Lanes =
    HWY_MAX_BYTES / sizeof(float) > 0 ? HWY_MAX_BYTES / sizeof(float) : 1;

// sums[0, lanes) += v, in double.
template <class DF>
HWY_INLINE void AddToSums(DF df, hn::Vec<DF> v, double* sums) {
#if HWY_TARGET == HWY_SCALAR
  const hn::Rebind<double, DF> dd;
  hn::StoreU(hn::Add(hn::LoadU(dd, sums), hn::PromoteTo(dd, v)), dd, sums);
#else
  const hn::Half<DF> dh;
  const hn::Rebind<double, decltype(dh)> dd;
  const size_t nd = hn::Lanes(dd);
  const auto lo = hn::PromoteTo(dd, hn::LowerHalf(dh, v));
  const auto hi = hn::PromoteTo(dd, hn::UpperHalf(dh, v));
  hn::StoreU(hn::Add(hn::LoadU(dd, sums), lo), dd, sums);
  hn::StoreU(hn::Add(hn::LoadU(dd, sums + nd), hi), dd, sums + nd);
#endif
  (void)df;
}

// One full vector of positions [i, i + lanes).
template <class Math, class S, unsigned F, class DF>
HWY_INLINE void Step(DF df, const Streams<S>& s, size_t i) {
  auto x = S::Load(df, s.x + i);
  hn::Vec<DF> x2;
  if constexpr ((F & (kSum | kGated)) != 0) x2 = S::Load(df, s.x2 + i);
  if constexpr ((F & kSum) != 0) x = hn::Add(x, x2);

  if constexpr ((F & kBackward) == 0) {
    auto y = Math::Value(df, x);
    if constexpr ((F & kGated) != 0) y = hn::Mul(y, x2);
    S::Store(df, y, s.out + i);
  } else {
    const auto dy = S::Load(df, s.dy + i);
    if constexpr ((F & kGated) != 0) {
      hn::Vec<DF> value, grad;
      Math::ValueAndGrad(df, x, value, grad);
      S::Store(df, hn::Mul(hn::Mul(dy, x2), grad), s.out + i);
      S::Store(df, hn::Mul(dy, value), s.out2 + i);
    } else {
      const auto dx = hn::Mul(dy, Math::Grad(df, x));
      S::Store(df, dx, s.out + i);
      if constexpr ((F & kDbias) != 0) AddToSums(df, dx, s.dbias + i);
    }
  }
}

// Copies the first rem elements of src into a zero-padded vector-sized
// buffer (nothing when src is null) and returns the buffer, or null.
template <class T>
HWY_INLINE T* Stage(const T* src, T* buf, size_t rem) {
  if (src == nullptr) return nullptr;
  for (size_t k = 0; k < kMaxF32Lanes; ++k) buf[k] = T();
  std::memcpy(buf, src, rem * sizeof(T));
  return buf;
}

// The final partial vector, positions [i, i + rem): the same Step on
// zero-padded stack copies, then only rem elements copied back. Inputs are
// all staged before any output is copied back (in place stays correct).
template <class Math, class S, unsigned F, class DF>
HWY_INLINE void TailStep(DF df, const Streams<S>& s, size_t i, size_t rem) {
  using T = typename S::T;
  HWY_ALIGN T dy[kMaxF32Lanes], x[kMaxF32Lanes], x2[kMaxF32Lanes];
  HWY_ALIGN T out[kMaxF32Lanes], out2[kMaxF32Lanes];
  HWY_ALIGN double sums[kMaxF32Lanes];
  auto at = [i](auto* p) { return p ? p + i : p; };
  const Streams<S> t{Stage(at(s.dy), dy, rem), Stage(at(s.x), x, rem),
                     Stage(at(s.x2), x2, rem), s.out ? out : nullptr,
                     s.out2 ? out2 : nullptr, Stage(at(s.dbias), sums, rem)};
  Step<Math, S, F>(df, t, 0);
  if (s.out) std::memcpy(s.out + i, out, rem * sizeof(T));
  if (s.out2) std::memcpy(s.out2 + i, out2, rem * sizeof(T));
  if (s.dbias) std::memcpy(s.dbias + i, sums, rem * sizeof(double));
}

}  // namespace detail

// Runs the op over positions [0, count) of the streams.
template <class Math, class S, unsigned F>
HWY_INLINE void Row(size_t count, const Streams<S>& s) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (count >= N) {
    for (; i <= count - N; i += N) detail::Step<Math, S, F>(df, s, i);
  }
  if (i < count) detail::TailStep<Math, S, F>(df, s, i, count - i);
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
