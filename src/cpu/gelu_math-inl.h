// Per-target SIMD math of the three GELU forms in f32 (value and derivative).
//
// PLACEHOLDER (first version): straightforward formulas on Highway's Exp; the
// accurate, fast version with fitted coefficients replaces it. Interface is
// final: GeluErfMath, GeluTanhMath, GeluQuickMath, each with Value, Grad and
// ValueAndGrad over any f32 descriptor D.
//
// Per-target include guard (Highway's toggle pattern): include this after
// hwy/highway.h (or from a file compiled through foreach_target.h).
#if defined(GELU_CPU_GELU_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_GELU_MATH_INL_H_
#undef GELU_CPU_GELU_MATH_INL_H_
#else
#define GELU_CPU_GELU_MATH_INL_H_
#endif

#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace detail {

// sigmoid(t) and sigmoid(-t) with exp clamped to its valid range.
template <class D>
HWY_INLINE void SigmoidPair(D d, hn::Vec<D> t, hn::Vec<D>& s, hn::Vec<D>& sm) {
  const auto one = hn::Set(d, 1.0f);
  const auto e = hn::Exp(d, hn::Min(hn::Neg(hn::Abs(t)), hn::Set(d, 0.0f)));
  const auto r = hn::Div(one, hn::Add(one, e));  // sigmoid(|t|)
  const auto small = hn::Mul(e, r);              // sigmoid(-|t|)
  const auto neg = hn::Lt(t, hn::Zero(d));
  s = hn::IfThenElse(neg, small, r);
  sm = hn::IfThenElse(neg, r, small);
}

// Phi(x) and phi(x) (placeholder: Numerical Recipes style erfc).
template <class D>
HWY_INLINE void PhiPair(D d, hn::Vec<D> x, hn::Vec<D>& cdf, hn::Vec<D>& pdf) {
  const auto z = hn::Mul(hn::Abs(x), hn::Set(d, 0.70710678118654752f));
  const auto one = hn::Set(d, 1.0f);
  const auto t = hn::Div(one, hn::MulAdd(hn::Set(d, 0.5f), z, one));
  auto p = hn::Set(d, 0.17087277f);
  p = hn::MulAdd(p, t, hn::Set(d, -0.82215223f));
  p = hn::MulAdd(p, t, hn::Set(d, 1.48851587f));
  p = hn::MulAdd(p, t, hn::Set(d, -1.13520398f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.27886807f));
  p = hn::MulAdd(p, t, hn::Set(d, -0.18628806f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.09678418f));
  p = hn::MulAdd(p, t, hn::Set(d, 0.37409196f));
  p = hn::MulAdd(p, t, hn::Set(d, 1.00002368f));
  p = hn::MulAdd(p, t, hn::Set(d, -1.26551223f));
  const auto e = hn::Exp(d, hn::Sub(p, hn::Mul(z, z)));
  const auto erfc_z = hn::Mul(t, e);  // erfc(|x|/sqrt2)
  const auto half_tail = hn::Mul(hn::Set(d, 0.5f), erfc_z);
  cdf = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), half_tail,
                       hn::Sub(one, half_tail));
  pdf = hn::Mul(hn::Set(d, 0.39894228040143268f),
                hn::Exp(d, hn::Mul(hn::Set(d, -0.5f), hn::Mul(x, x))));
}

// Shared finish: value = x*s, grad = s + x*slope, with the limits at +-inf.
template <class D>
HWY_INLINE void Finish(D d, hn::Vec<D> x, hn::Vec<D> s, hn::Vec<D> slope,
                       hn::Vec<D>& value, hn::Vec<D>& grad) {
  const auto inf = hn::Set(d, HUGE_VALF);
  const auto is_inf = hn::Eq(hn::Abs(x), inf);
  value = hn::IfThenElse(is_inf, hn::Max(x, hn::Set(d, -0.0f)), hn::Mul(x, s));
  const auto xs = hn::IfThenZeroElse(hn::Eq(slope, hn::Zero(d)),
                                     hn::Mul(x, slope));
  grad = hn::Add(s, xs);
  value = hn::IfThenElse(hn::Eq(x, hn::Set(d, -HUGE_VALF)),
                         hn::Set(d, -0.0f), value);
  value = hn::IfThenElse(hn::IsNaN(x), x, value);
  grad = hn::IfThenElse(hn::IsNaN(x), x, grad);
}

}  // namespace detail

// GELU, erf form: x * Phi(x).
struct GeluErfMath {
  template <class D>
  static HWY_INLINE void ValueAndGrad(D d, hn::Vec<D> x, hn::Vec<D>& value,
                                      hn::Vec<D>& grad) {
    hn::Vec<D> cdf, pdf;
    detail::PhiPair(d, x, cdf, pdf);
    detail::Finish(d, x, cdf, pdf, value, grad);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Value(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return v;
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Grad(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return g;
  }
};

// GELU, tanh form: x * sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3).
struct GeluTanhMath {
  template <class D>
  static HWY_INLINE void ValueAndGrad(D d, hn::Vec<D> x, hn::Vec<D>& value,
                                      hn::Vec<D>& grad) {
    const auto x2 = hn::Mul(x, x);
    const auto k = hn::Set(d, 0.79788456080286536f);
    const auto c = hn::Set(d, 0.044715f);
    const auto u = hn::Mul(k, hn::MulAdd(hn::Mul(c, x2), x, x));
    const auto du = hn::Mul(k, hn::MulAdd(hn::Set(d, 3.0f * 0.044715f), x2,
                                          hn::Set(d, 1.0f)));
    hn::Vec<D> s, sm;
    detail::SigmoidPair(d, hn::Add(u, u), s, sm);
    const auto slope = hn::Mul(hn::Mul(hn::Add(s, s), sm), du);
    detail::Finish(d, x, s, slope, value, grad);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Value(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return v;
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Grad(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return g;
  }
};

// GELU, quick form: x * sigmoid(1.702 x).
struct GeluQuickMath {
  template <class D>
  static HWY_INLINE void ValueAndGrad(D d, hn::Vec<D> x, hn::Vec<D>& value,
                                      hn::Vec<D>& grad) {
    const auto a = hn::Set(d, 1.702f);
    hn::Vec<D> s, sm;
    detail::SigmoidPair(d, hn::Mul(a, x), s, sm);
    const auto slope = hn::Mul(hn::Mul(a, s), sm);
    detail::Finish(d, x, s, slope, value, grad);
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Value(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return v;
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Grad(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    ValueAndGrad(d, x, v, g);
    return g;
  }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_GELU_MATH_INL_H_
