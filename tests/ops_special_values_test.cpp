// Special values through the public API, every form and dtype: +-0, +-inf,
// NaN, subnormals, +-FLT_MAX, huge |x| and the deep negative tail.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <tuple>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

const float kSpecials[] = {
    0.0f,    -0.0f,    INFINITY, -INFINITY, NAN,    1e-45f,   -1e-45f,  1e-40f, -1e-40f,
    FLT_MIN, -FLT_MIN, FLT_MAX,  -FLT_MAX,  1e30f,  -1e30f,   -14.0f,   -20.0f, -100.0f,
    10.0f,   100.0f,   -0.7518f, 1e-7f,     -1e-7f, 65504.0f, -65504.0f};

class SpecialValues : public ::testing::TestWithParam<std::tuple<Approx, DType>> {};

TEST_P(SpecialValues, ForwardAndBackwardMatchTheReference) {
  // Not a structured binding: clang before 16 cannot capture one in the
  // lambdas below.
  const Approx form = std::get<0>(GetParam());
  const DType t = std::get<1>(GetParam());
  const int64_t n = std::size(kSpecials);
  Buffer x(t, {n}), y(t, {n}), dy(t, {n}), dx(t, {n});
  for (int64_t i = 0; i < n; ++i) {
    x.set(i, kSpecials[i]);
    dy.set(i, 1.0f);
  }
  y.poison();
  dx.poison();
  gelu::gelu(x.cref(), y.ref(), {form, 0});
  gelu::gelu_backward(dy.cref(), x.cref(), dx.ref(), {form, 0});
  const std::string w = std::string(approx_name(form)) + " " + dtype_name(t);
  check_all(
      y, [&](int64_t i) { return expect_fwd(form, x.get(i)); }, bound_ulps(t),
      "gelu " + w);
  check_all(
      dx, [&](int64_t i) { return expect_bwd(form, x.get(i), 1.0); }, bound_ulps(t),
      "gelu_backward " + w);
  // The limits the contract names, exactly.
  for (int64_t i = 0; i < n; ++i) {
    const float v = x.get(i);
    if (std::isnan(v)) {
      EXPECT_TRUE(std::isnan(y.get(i))) << w;
      EXPECT_TRUE(std::isnan(dx.get(i))) << w;
    } else if (v == INFINITY) {
      EXPECT_EQ(y.get(i), INFINITY) << w;
      EXPECT_EQ(dx.get(i), 1.0f) << w;
    } else if (v == -INFINITY) {
      EXPECT_EQ(y.get(i), 0.0f) << w;
      EXPECT_EQ(dx.get(i), 0.0f) << w;
    } else if (v == 0.0f) {
      EXPECT_EQ(y.get(i), 0.0f) << w;
      EXPECT_EQ(dx.get(i), 0.5f) << w;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, SpecialValues,
                         ::testing::Combine(::testing::ValuesIn(kForms),
                                            ::testing::ValuesIn(kDTypes)),
                         form_dtype_name);

}  // namespace
}  // namespace gelu::testing
