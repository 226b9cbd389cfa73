// The GELU forms' formulas and constants, the one place they are written
// (C++ and CUDA; the Python package reads the constants and names from the
// extension: gelu_fusion._surface.FORMS). The reference (src/ref) and the
// PyTorch compositions (adapters/torch/csrc/derivatives.hpp) compute from
// Formula<F>; the kernels' f32 tables are fitted to the same numbers
// (tools/fit/fit_gelu.py).
//
//   none   gelu(x) = x Phi(x),        Phi(x) = erfc(-x kInvSqrt2) / 2
//   tanh   gelu(x) = x sigmoid(2u),   u = kSqrt2OverPi (x + kTanhCubic x^3)
//   quick  gelu(x) = x sigmoid(kQuickScale x)
//
// Hendrycks & Gimpel (2016), "Gaussian Error Linear Units", section 2: the
// tanh approximation and the sigmoid one (1.702, as OpenAI CLIP's
// QuickGELU).
//
// A new form: its name in GELU_FUSION_FORMS (include/gelu/gelu.hpp), its
// Formula here, its f32 method in src/math/gelu_f32.hpp and
// src/cpu/gelu_math-inl.h (with tables from tools/fit/fit_gelu.py).
#pragma once

#include <string>
#include <type_traits>

#include "gelu/gelu.hpp"

namespace gelu::math {

inline constexpr double kTanhCubic = 0.044715;
inline constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
inline constexpr double kQuickScale = 1.702;
// 1/sqrt(2) and 1/sqrt(2 pi): Phi and phi of the normal distribution.
inline constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;

// A form as a type, for code compiled once per form.
template <Approx F>
using FormTag = std::integral_constant<Approx, F>;

// fn(FormTag<F>{}) for the run-time form F: the one switch on a form (host
// code; validation has rejected any other value before a kernel runs).
template <class Fn>
decltype(auto) visit_form(Approx form, Fn&& fn) {
  switch (form) {
#define GELU_VISIT_FORM_CASE(name) \
  case Approx::name: return fn(FormTag<Approx::name>{});
    GELU_FUSION_FORMS(GELU_VISIT_FORM_CASE)
#undef GELU_VISIT_FORM_CASE
  }
  throw Error("gelu: internal: approximate " + std::to_string(static_cast<int>(form)) +
              " is not a form");
}

// Each form's gate s(x), gelu(x) = x s(x), and its slope s'(x), so that
// gelu'(x) = s(x) + x s'(x); written once for any number type T given a
// math policy M with T M::erfc(T), T M::exp(T) and T M::sigmoid(T) (double
// in the reference, at::Tensor in the PyTorch compositions).
//   gate<M>(x)                  s(x)
//   gate_and_slope<M>(x, s, ds) s(x) and s'(x)
// Written not to cancel in the negative tail: Phi(x) is erfc(-x/sqrt 2)/2,
// never 1 + erf; the tanh form is sigmoid(2u), never 1 + tanh(u); and
// 1 - sigmoid(t), in the slopes, is sigmoid(-t).
template <Approx F>
struct Formula;

template <>
struct Formula<Approx::none> {
  template <class M, class T>
  static T gate(const T& x) {
    return 0.5 * M::erfc(-kInvSqrt2 * x);
  }
  template <class M, class T>
  static void gate_and_slope(const T& x, T& s, T& ds) {
    s = gate<M>(x);
    ds = kInvSqrt2Pi * M::exp(-0.5 * x * x);  // phi(x)
  }
};

template <>
struct Formula<Approx::tanh> {
  // 2u = 2 kSqrt2OverPi x (1 + kTanhCubic x^2).
  template <class T>
  static T two_u(const T& x, const T& x2) {
    return (2.0 * kSqrt2OverPi) * x * (1.0 + kTanhCubic * x2);
  }
  template <class M, class T>
  static T gate(const T& x) {
    return M::sigmoid(two_u(x, T(x * x)));
  }
  // s' = 2u' s sigmoid(-2u), 2u' = 2 kSqrt2OverPi (1 + 3 kTanhCubic x^2).
  template <class M, class T>
  static void gate_and_slope(const T& x, T& s, T& ds) {
    const T x2 = x * x;
    const T tu = two_u(x, x2);
    s = M::sigmoid(tu);
    ds = (2.0 * kSqrt2OverPi) * (1.0 + (3.0 * kTanhCubic) * x2) * s * M::sigmoid(-tu);
  }
};

template <>
struct Formula<Approx::quick> {
  template <class M, class T>
  static T gate(const T& x) {
    return M::sigmoid(kQuickScale * x);
  }
  // s' = k s sigmoid(-k x).
  template <class M, class T>
  static void gate_and_slope(const T& x, T& s, T& ds) {
    s = gate<M>(x);
    ds = kQuickScale * s * M::sigmoid(-kQuickScale * x);
  }
};

}  // namespace gelu::math
