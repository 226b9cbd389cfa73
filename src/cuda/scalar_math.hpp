// The GELU forms in double, one scalar at a time, for the CUDA kernels and
// for the host (the CPU tests compile this header with the host compiler
// and check it against the reference, src/ref, over every bf16 and f16
// input). The CUDA kernels compute each result in double from f32 (or
// bf16/f16) inputs and round it once to the storage format.
//
// Written not to cancel in the negative tail (as src/ref): Phi(x) is
// erfc(-x/sqrt 2)/2, never 1 + erf; the tanh form is x*sigmoid(2u), never
// 1 + tanh(u); 1 - sigmoid(t) is sigmoid(-t).
//
// Valid for every double input. Error: a few double ULPs relative to the
// exact value (erfc, exp: at most 4 ULP in CUDA's double library and in
// glibc), so under 2^-40 of an f32 ULP before the result is rounded to its
// storage format; the backward's two terms t1 + t2 cancel at the
// derivative's root x ~ -0.7518, where the error stays a few double ULPs of
// |t1| + |t2| (the contract's scale). Limits: gelu(+inf) = +inf,
// gelu(-inf) = -0, gelu'(+inf) = 1, gelu'(-inf) = 0; NaN gives NaN.
#pragma once

#include <math.h>

#include "gelu/gelu.hpp"
#include "math/gelu_forms.hpp"
#include "math/host_device.hpp"

namespace gelu::cuda::math {

// The constants of the forms (math/gelu_forms.hpp names their sources).
using ::gelu::math::kInvSqrt2;
using ::gelu::math::kInvSqrt2Pi;
using ::gelu::math::kQuickScale;
using ::gelu::math::kSqrt2OverPi;
using ::gelu::math::kTanhCubic;

GELU_HD bool is_nan(double x) { return x != x; }
GELU_HD bool is_inf(double x) { return x - x != 0.0 && x == x; }

// sigmoid(t) = 1 / (1 + e^-t), without overflow and with relative accuracy
// in both tails.
GELU_HD double sigmoid(double t) {
  if (t >= 0) return 1.0 / (1.0 + ::exp(-t));
  const double e = ::exp(t);
  return e / (1.0 + e);
}

// The gate s(x) of each form (gelu(x) = x * s(x)) and its slope s'(x).
template <Approx F>
GELU_HD double gate(double x) {
  if constexpr (F == Approx::none) {
    return 0.5 * ::erfc(-x * kInvSqrt2);
  } else if constexpr (F == Approx::tanh) {
    return sigmoid(2.0 * kSqrt2OverPi * (x + kTanhCubic * x * x * x));
  } else {
    return sigmoid(kQuickScale * x);
  }
}

template <Approx F>
GELU_HD double gate_slope(double x) {
  if constexpr (F == Approx::none) {
    return kInvSqrt2Pi * ::exp(-0.5 * x * x);
  } else if constexpr (F == Approx::tanh) {
    const double u = kSqrt2OverPi * (x + kTanhCubic * x * x * x);
    const double du = kSqrt2OverPi * (1.0 + 3.0 * kTanhCubic * x * x);
    return 2.0 * sigmoid(2.0 * u) * sigmoid(-2.0 * u) * du;
  } else {
    const double t = kQuickScale * x;
    return kQuickScale * sigmoid(t) * sigmoid(-t);
  }
}

// gelu(x).
template <Approx F>
GELU_HD double value(double x) {
  if (is_nan(x)) return x;
  if (is_inf(x)) return x > 0 ? x : -0.0;
  return x * gate<F>(x);
}

// gelu'(x) = s(x) + x * s'(x).
template <Approx F>
GELU_HD double grad(double x) {
  if (is_nan(x)) return x;
  if (is_inf(x)) return x > 0 ? 1.0 : 0.0;
  const double slope = gate_slope<F>(x);
  // slope underflows to 0 long before x overflows: x * slope stays finite.
  return gate<F>(x) + (slope == 0.0 ? 0.0 : x * slope);
}

}  // namespace gelu::cuda::math
