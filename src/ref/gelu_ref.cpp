#include "ref/gelu_ref.hpp"

#include <cmath>

#include "math/gelu_forms.hpp"

namespace gelu::ref {
namespace {

// The formulas (math/gelu_forms.hpp) in double, with the C library's erfc
// and exp.
struct DoubleMath {
  static double erfc(double t) { return std::erfc(t); }
  static double exp(double t) { return std::exp(t); }
  static double sigmoid(double t) {
    // Both branches avoid exp overflow and keep relative accuracy in the tail.
    if (t >= 0) return 1.0 / (1.0 + std::exp(-t));
    const double e = std::exp(t);
    return e / (1.0 + e);
  }
};

}  // namespace

double gelu_fwd(Approx form, double x) {
  if (std::isnan(x)) return x;
  if (std::isinf(x)) return x > 0 ? x : -0.0;
  return math::visit_form(form, [&](auto f) {
    return x * math::Formula<decltype(f)::value>::template gate<DoubleMath>(x);
  });
}

GradTerms gelu_bwd_terms(Approx form, double x) {
  if (std::isnan(x)) return {x, x};
  if (std::isinf(x)) return {x > 0 ? 1.0 : 0.0, 0.0};
  double s = 0.0, slope = 0.0;
  math::visit_form(form, [&](auto f) {
    math::Formula<decltype(f)::value>::template gate_and_slope<DoubleMath>(x, s, slope);
  });
  // slope underflows to 0 long before x overflows, so x * slope is finite.
  return {s, slope == 0.0 ? 0.0 : x * slope};
}

double gelu_bwd(Approx form, double x) {
  const GradTerms t = gelu_bwd_terms(form, x);
  return t.t1 + t.t2;
}

}  // namespace gelu::ref
