#include "ref/gelu_ref.hpp"

#include <cmath>
#include <limits>

namespace gelu::ref {
namespace {

double sigmoid(double t) {
  // Both branches avoid exp overflow and keep relative accuracy in the tail.
  if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
  const double e = std::exp(t);
  return e / (1.0 + e);
}

// Phi(x) = erfc(-x/sqrt 2)/2: no cancellation for negative x.
double normal_cdf(double x) { return 0.5 * std::erfc(-x * kInvSqrt2); }
double normal_pdf(double x) { return kInvSqrt2Pi * std::exp(-0.5 * x * x); }

// The "gate" s(x) of each form (gelu = x * s(x)) and its derivative s'(x).
double gate(Approx form, double x) {
  switch (form) {
    case Approx::none: return normal_cdf(x);
    case Approx::tanh:
      return sigmoid(2.0 * kSqrt2OverPi * (x + kTanhCubic * x * x * x));
    case Approx::quick: return sigmoid(kQuickScale * x);
  }
  return std::numeric_limits<double>::quiet_NaN();
}

double gate_slope(Approx form, double x) {
  switch (form) {
    case Approx::none: return normal_pdf(x);
    case Approx::tanh: {
      // d/dx sigmoid(2u) = 2 sigmoid(2u) sigmoid(-2u) u'.
      const double u = kSqrt2OverPi * (x + kTanhCubic * x * x * x);
      const double du = kSqrt2OverPi * (1.0 + 3.0 * kTanhCubic * x * x);
      return 2.0 * sigmoid(2.0 * u) * sigmoid(-2.0 * u) * du;
    }
    case Approx::quick: {
      const double t = kQuickScale * x;
      return kQuickScale * sigmoid(t) * sigmoid(-t);
    }
  }
  return std::numeric_limits<double>::quiet_NaN();
}

}  // namespace

double gelu_fwd(Approx form, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return x * gate(form, x);
}

GradTerms gelu_bwd_terms(Approx form, double x) {
  if (std::isnan(x)) return {x, x};
  if (std::isinf(x)) return {x > 0 ? 1.0 : 0.0, 0.0};
  const double slope = gate_slope(form, x);
  // slope underflows to 0 long before x overflows, so x * slope is finite.
  return {gate(form, x), slope == 0.0 ? 0.0 : x * slope};
}

double gelu_bwd(Approx form, double x) {
  const GradTerms t = gelu_bwd_terms(form, x);
  return t.t1 + t.t2;
}

}  // namespace gelu::ref
