// Double-precision reference for every GELU form, forward and backward.
//
// Written to be right in the negative tail, where the textbook formulas
// cancel: Phi(x) is erfc(-x/sqrt 2)/2 (never 1 + erf(x/sqrt 2), which loses
// every digit below x ~ -5 even in double), the tanh form is x*sigmoid(2u)
// (never 1 + tanh(u)), and 1 - sigmoid(t) is sigmoid(-t). Checked against MPFR
// to within 0.01 f32 ULP (tests/ref_mpfr_test.cpp).
//
// Limits: gelu(+inf) = +inf, gelu(-inf) = -0, gelu'(+inf) = 1,
// gelu'(-inf) = 0; NaN in gives NaN out.
#pragma once

#include "gelu/gelu.hpp"

namespace gelu::ref {

// gelu(x) for the given form.
double gelu_fwd(Approx form, double x);

// gelu'(x), the exact derivative of the given form.
double gelu_bwd(Approx form, double x);

// The two terms of gelu'(x) = t1 + t2 (erf form: t1 = Phi(x),
// t2 = x*phi(x); tanh and quick: t1 = s(x), t2 = x*s'(x) for their own
// s). Their absolute sum |t1| + |t2| scales the backward's error bound,
// which a relative bound cannot do at the derivative's root.
struct GradTerms {
  double t1, t2;
};
GradTerms gelu_bwd_terms(Approx form, double x);

}  // namespace gelu::ref
