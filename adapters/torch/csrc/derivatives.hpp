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

// z in float when it is stored narrower; `back` rounds a result to z's dtype.
inline at::Tensor widen(const at::Tensor& z) {
  const auto t = z.scalar_type();
  return (t == at::kHalf || t == at::kBFloat16) ? z.to(at::kFloat) : z;
}
inline at::Tensor back(const at::Tensor& r, const at::Tensor& z) {
  return r.scalar_type() == z.scalar_type() ? r : r.to(z.scalar_type());
}

// The forms' formulas (math/gelu_forms.hpp) on tensors.
struct TensorMath {
  static at::Tensor erfc(const at::Tensor& t) { return at::special_erfc(t); }
  static at::Tensor exp(const at::Tensor& t) { return at::exp(t); }
  static at::Tensor sigmoid(const at::Tensor& t) { return at::sigmoid(t); }
};

// The factor s(z) with gelu(z) = z * s(z), and its derivative s'(z).
inline void factor(const at::Tensor& z, gelu::Approx form, at::Tensor& s,
                   at::Tensor& ds) {
  gelu::math::visit_form(form, [&](auto f) {
    gelu::math::Formula<decltype(f)::value>::template gate_and_slope<TensorMath>(z, s,
                                                                                 ds);
  });
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
