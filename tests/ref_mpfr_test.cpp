// The double reference against MPFR at 256 bits: within 0.01 f32 ULP for
// every form, forward and backward, from x = -14 up to 10 (and beyond).
#include <gtest/gtest.h>
#include <mpfr.h>

#include <cmath>

#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu {
namespace {

constexpr mpfr_prec_t kBits = 256;

// RAII for one mpfr_t.
struct Mp {
  mpfr_t v;
  Mp() { mpfr_init2(v, kBits); }
  explicit Mp(double d) : Mp() { mpfr_set_d(v, d, MPFR_RNDN); }
  explicit Mp(const char* s) : Mp() { mpfr_set_str(v, s, 10, MPFR_RNDN); }
  ~Mp() { mpfr_clear(v); }
  double d() const { return mpfr_get_d(v, MPFR_RNDN); }
};

// s(x) and s'(x) of each form in MPFR (gelu = x s(x), gelu' = s + x s').
void gate_mpfr(Approx form, double xd, Mp& s, Mp& ds) {
  Mp x(xd), t, u;
  switch (form) {
    case Approx::none: {
      // s = erfc(-x/sqrt2)/2, s' = exp(-x^2/2)/sqrt(2 pi)
      mpfr_sqrt_ui(t.v, 2, MPFR_RNDN);
      mpfr_div(u.v, x.v, t.v, MPFR_RNDN);
      mpfr_neg(u.v, u.v, MPFR_RNDN);
      mpfr_erfc(s.v, u.v, MPFR_RNDN);
      mpfr_div_ui(s.v, s.v, 2, MPFR_RNDN);
      mpfr_sqr(u.v, x.v, MPFR_RNDN);
      mpfr_div_si(u.v, u.v, -2, MPFR_RNDN);
      mpfr_exp(ds.v, u.v, MPFR_RNDN);
      mpfr_const_pi(t.v, MPFR_RNDN);
      mpfr_mul_ui(t.v, t.v, 2, MPFR_RNDN);
      mpfr_sqrt(t.v, t.v, MPFR_RNDN);
      mpfr_div(ds.v, ds.v, t.v, MPFR_RNDN);
      return;
    }
    case Approx::tanh:
    case Approx::quick: {
      // s = sigmoid(k(x)), s' = sigmoid(k) sigmoid(-k) k'(x), with
      // tanh: k = 2 sqrt(2/pi) (x + c x^3), quick: k = 1.702 x.
      Mp k, dk, c(form == Approx::tanh ? "0.044715" : "1.702"), e;
      if (form == Approx::tanh) {
        Mp r;
        mpfr_const_pi(r.v, MPFR_RNDN);
        mpfr_ui_div(r.v, 2, r.v, MPFR_RNDN);
        mpfr_sqrt(r.v, r.v, MPFR_RNDN);
        mpfr_mul_ui(r.v, r.v, 2, MPFR_RNDN);  // 2 sqrt(2/pi)
        mpfr_sqr(t.v, x.v, MPFR_RNDN);
        mpfr_mul(u.v, t.v, c.v, MPFR_RNDN);   // c x^2
        mpfr_add_ui(k.v, u.v, 1, MPFR_RNDN);  // 1 + c x^2
        mpfr_mul(k.v, k.v, x.v, MPFR_RNDN);
        mpfr_mul(k.v, k.v, r.v, MPFR_RNDN);
        mpfr_mul_ui(u.v, u.v, 3, MPFR_RNDN);
        mpfr_add_ui(dk.v, u.v, 1, MPFR_RNDN);  // 1 + 3 c x^2
        mpfr_mul(dk.v, dk.v, r.v, MPFR_RNDN);
      } else {
        mpfr_mul(k.v, x.v, c.v, MPFR_RNDN);
        mpfr_set(dk.v, c.v, MPFR_RNDN);
      }
      // s = 1 / (1 + exp(-k)); 1 - s = 1 / (1 + exp(k))
      mpfr_neg(e.v, k.v, MPFR_RNDN);
      mpfr_exp(e.v, e.v, MPFR_RNDN);
      mpfr_add_ui(e.v, e.v, 1, MPFR_RNDN);
      mpfr_ui_div(s.v, 1, e.v, MPFR_RNDN);
      mpfr_exp(e.v, k.v, MPFR_RNDN);
      mpfr_add_ui(e.v, e.v, 1, MPFR_RNDN);
      mpfr_ui_div(t.v, 1, e.v, MPFR_RNDN);
      mpfr_mul(ds.v, s.v, t.v, MPFR_RNDN);
      mpfr_mul(ds.v, ds.v, dk.v, MPFR_RNDN);
      return;
    }
  }
}

class RefVsMpfr : public ::testing::TestWithParam<Approx> {};

TEST_P(RefVsMpfr, WithinOneHundredthOfAnF32Ulp) {
  const Approx form = GetParam();
  double worst_fwd = 0, worst_bwd = 0, at_fwd = 0, at_bwd = 0;
  auto check = [&](double x) {
    Mp s, ds, y, t2, g;
    gate_mpfr(form, x, s, ds);
    Mp xm(x);
    mpfr_mul(y.v, xm.v, s.v, MPFR_RNDN);
    mpfr_mul(t2.v, xm.v, ds.v, MPFR_RNDN);
    mpfr_add(g.v, s.v, t2.v, MPFR_RNDN);
    const double scale = std::fabs(s.d()) + std::fabs(t2.d());
    const double ef = ref::ulp_error(DType::f32, ref::gelu_fwd(form, x), y.d());
    const double eb = ref::scaled_ulp_error(DType::f32, ref::gelu_bwd(form, x), g.d(),
                                            scale);
    if (ef > worst_fwd) worst_fwd = ef, at_fwd = x;
    if (eb > worst_bwd) worst_bwd = eb, at_bwd = x;
  };
  for (int i = 0; i <= 24000; ++i) check(-14.0 + i * 1e-3);  // [-14, 10]
  for (double x : {-20.0, -15.5, -1e-3, -1e-20, 1e-30, 0.0, 30.0, 1e4}) check(x);
  EXPECT_LE(worst_fwd, 0.01) << "forward at x = " << at_fwd;
  EXPECT_LE(worst_bwd, 0.01) << "backward at x = " << at_bwd;
  std::printf("ref vs MPFR, %s: forward %.2e ulp (x=%g), backward %.2e (x=%g)\n",
              approx_name(form), worst_fwd, at_fwd, worst_bwd, at_bwd);
}

INSTANTIATE_TEST_SUITE_P(Forms, RefVsMpfr,
                         ::testing::Values(Approx::none, Approx::tanh, Approx::quick),
                         [](const auto& i) {
                           return std::string(approx_name(i.param));
                         });

TEST(RefLimits, SpecialValues) {
  for (Approx f : {Approx::none, Approx::tanh, Approx::quick}) {
    EXPECT_EQ(ref::gelu_fwd(f, INFINITY), INFINITY);
    EXPECT_EQ(ref::gelu_fwd(f, -INFINITY), 0.0);
    EXPECT_TRUE(std::signbit(ref::gelu_fwd(f, -INFINITY)));
    EXPECT_EQ(ref::gelu_bwd(f, INFINITY), 1.0);
    EXPECT_EQ(ref::gelu_bwd(f, -INFINITY), 0.0);
    EXPECT_TRUE(std::isnan(ref::gelu_fwd(f, NAN)));
    EXPECT_TRUE(std::isnan(ref::gelu_bwd(f, NAN)));
    EXPECT_EQ(ref::gelu_bwd(f, 0.0), 0.5);
    EXPECT_EQ(ref::gelu_fwd(f, 3.4e38), 3.4e38);
  }
}

}  // namespace
}  // namespace gelu
