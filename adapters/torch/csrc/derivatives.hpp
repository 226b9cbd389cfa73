// gelu and gelu' of each form composed of differentiable ATen ops: what the
// autograd layer uses where a derivative must itself be differentiated
// (double backward, Hessians, a backward through a forward-mode tangent).
// Each is the derivative of the same form, not of another one. bf16 and f16
// inputs compute in float and round once at the end.
#pragma once

#include <ATen/ATen.h>

#include <cmath>

#include "gelu/gelu.hpp"
#include "math/gelu_forms.hpp"

namespace gelu_torch::composed {

// The constants of the forms (math/gelu_forms.hpp names their sources).
using ::gelu::math::kInvSqrt2;
using ::gelu::math::kInvSqrt2Pi;
using ::gelu::math::kQuickScale;
using ::gelu::math::kSqrt2OverPi;
using ::gelu::math::kTanhCubic;

// z in float when it is stored narrower; `back` rounds a result to z's dtype.
inline at::Tensor widen(const at::Tensor& z) {
  const auto t = z.scalar_type();
  return (t == at::kHalf || t == at::kBFloat16) ? z.to(at::kFloat) : z;
}
inline at::Tensor back(const at::Tensor& r, const at::Tensor& z) {
  return r.scalar_type() == z.scalar_type() ? r : r.to(z.scalar_type());
}

// The factor s(z) with gelu(z) = z * s(z), and its derivative s'(z).
// erf:   s = Phi(z) = erfc(-z/sqrt 2)/2, s' = phi(z) (the normal density)
// tanh:  s = sigmoid(2u), u = sqrt(2/pi) (z + c z^3),
//        s' = 2 u' s (1 - s), u' = sqrt(2/pi) (1 + 3 c z^2)
// quick: s = sigmoid(k z), s' = k s (1 - s)
// with 1 - s written sigmoid(-2u) (sigmoid(-k z)): 1 - s cancels to 0 in
// float for large z, where the derivatives still have a few significant
// digits.
inline void factor(const at::Tensor& z, gelu::Approx form, at::Tensor& s,
                   at::Tensor& ds) {
  switch (form) {
    case gelu::Approx::none:
      s = 0.5 * at::special_erfc(-kInvSqrt2 * z);
      ds = kInvSqrt2Pi * at::exp(-0.5 * z * z);
      return;
    case gelu::Approx::tanh: {
      const at::Tensor z2 = z * z;
      const at::Tensor two_u = (2.0 * kSqrt2OverPi) * z * (1.0 + kTanhCubic * z2);
      s = at::sigmoid(two_u);
      ds = (2.0 * kSqrt2OverPi) * (1.0 + (3.0 * kTanhCubic) * z2) * s *
           at::sigmoid(-two_u);
      return;
    }
    case gelu::Approx::quick:
      s = at::sigmoid(kQuickScale * z);
      ds = kQuickScale * s * at::sigmoid(-kQuickScale * z);
      return;
  }
}

inline at::Tensor gelu(const at::Tensor& z_in, gelu::Approx form) {
  const at::Tensor z = widen(z_in);
  at::Tensor s, ds;
  factor(z, form, s, ds);
  return back(z * s, z_in);
}

// gelu'(z) = s(z) + z s'(z).
inline at::Tensor gelu_prime(const at::Tensor& z_in, gelu::Approx form) {
  const at::Tensor z = widen(z_in);
  at::Tensor s, ds;
  factor(z, form, s, ds);
  return back(s + z * ds, z_in);
}

}  // namespace gelu_torch::composed
