// Every op x form x dtype through the public API, on inputs that reach the
// negative tail, with outputs poisoned first and every element checked
// against the double reference. Shapes cover zero dimensions, size 1, odd
// and prime sizes, one row and many rows.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

using Shape = std::vector<int64_t>;

const Shape kShapes[] = {{},
                         {0},
                         {1},
                         {7},
                         {3, 0},
                         {0, 4},
                         {1, 1},
                         {13, 17},
                         {1, 1031},
                         {257, 3},
                         {5, 2, 9},
                         {1000, 8},
                         {37, 1},
                         {3, 4099},
                         // the narrow-row paths (under 64 columns, several dbias
                         // spans and a partial one; geglu's halves are these
                         // widths) and rows around the dbias tile; 65537 columns
                         // are in kernels_ops_test and ops_inplace_threads_test
                         {4133, 1},
                         {2049, 2},
                         {1111, 5},
                         {601, 15},
                         {333, 17},
                         {301, 63},
                         {65, 64},
                         {65, 65},
                         {3, 4095},
                         {3, 4096},
                         {3, 4097}};

// The one extra f32 rounding a fused product adds (geglu's gelu(a) * b and
// dy * b * gelu'(a)) on top of the plain op's bound.
constexpr double kProductRoundingUlp = ref::kProductRoundingUlps;

class OpsAccuracy : public ::testing::TestWithParam<std::tuple<Approx, DType, Shape>> {
 protected:
  Approx form() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  const Shape& shape() const { return std::get<2>(GetParam()); }
  Options opts() const { return Options{form(), 0}; }
  std::string what(const char* op) const {
    return std::string(op) + " " + approx_name(form()) + " " + dtype_name(dtype()) +
           " " + ::testing::PrintToString(shape());
  }
  int64_t last() const { return shape().empty() ? 1 : shape().back(); }
};

TEST_P(OpsAccuracy, Gelu) {
  Buffer x(dtype(), shape()), y(dtype(), shape());
  fill_inputs(x, 1);
  y.poison();
  gelu::gelu(x.cref(), y.ref(), opts());
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), x.get(i)); }, bound_ulps(dtype()),
      what("gelu"));
}

TEST_P(OpsAccuracy, GeluBackward) {
  Buffer dy(dtype(), shape()), x(dtype(), shape()), dx(dtype(), shape());
  fill_inputs(dy, 2, 1.0f);
  fill_inputs(x, 3);
  dx.poison();
  gelu::gelu_backward(dy.cref(), x.cref(), dx.ref(), opts());
  check_all(
      dx, [&](int64_t i) { return expect_bwd(form(), x.get(i), dy.get(i)); },
      bound_ulps(dtype()), what("gelu_backward"));
}

TEST_P(OpsAccuracy, AddGelu) {
  Buffer a(dtype(), shape()), b(dtype(), shape()), y(dtype(), shape());
  fill_inputs(a, 4);
  fill_inputs(b, 5, 1.0f);
  y.poison();
  gelu::add_gelu(a.cref(), b.cref(), y.ref(), opts());
  // Fused ops are exact for the f32 pre-activation fl(a + b), the value an
  // unfused f32 computation would feed GELU.
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), a.get(i) + b.get(i)); },
      bound_ulps(dtype()), what("add_gelu"));
}

TEST_P(OpsAccuracy, AddGeluBackward) {
  Buffer dy(dtype(), shape()), a(dtype(), shape()), b(dtype(), shape()),
      dx(dtype(), shape());
  fill_inputs(dy, 6, 1.0f);
  fill_inputs(a, 7);
  fill_inputs(b, 8, 1.0f);
  dx.poison();
  gelu::add_gelu_backward(dy.cref(), a.cref(), b.cref(), dx.ref(), opts());
  check_all(
      dx, [&](int64_t i) { return expect_bwd(form(), a.get(i) + b.get(i), dy.get(i)); },
      bound_ulps(dtype()), what("add_gelu_backward"));
}

TEST_P(OpsAccuracy, BiasGelu) {
  if (shape().empty()) GTEST_SKIP() << "bias needs rank >= 1";
  Buffer x(dtype(), shape()), bias(dtype(), {last()}), y(dtype(), shape());
  fill_inputs(x, 9);
  fill_inputs(bias, 10, 1.0f);
  y.poison();
  gelu::bias_gelu(x.cref(), bias.cref(), y.ref(), opts());
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), x.get(i) + bias.get(i % last())); },
      bound_ulps(dtype()), what("bias_gelu"));
}

// dbias against the double sum of the reference dx, per column:
// |error| <= 2^-20 * scale plus half an ulp of dbias's own dtype, where
// scale = sum |dy| (|t1| + |t2|), the backward's own scale (as the fuzzer's
// contract, fuzz/contract.hpp: near gelu's root a dx is exact only to that
// scale, so a bound relative to sum |dx| would ask more of dbias than of
// the dx it adds), plus
// `floor`: the sum of the f32 dx values' own absolute error where they are
// subnormal (2 * |dy| * 2^-149 each, see Expect), which the sum inherits.
void check_dbias(const Buffer& dbias, const std::vector<double>& sum,
                 const std::vector<double>& scale, const std::vector<double>& floor,
                 const std::string& what) {
  for (int64_t j = 0; j < dbias.size(); ++j) {
    ASSERT_NE(dbias.bits(j), poison_bits(dbias.dtype())) << what << " col " << j;
    const double tol = std::ldexp(scale[j], -20) +
                       0.5 * ref::ulp_of(dbias.dtype(), sum[j]) + floor[j];
    EXPECT_LE(std::fabs(dbias.get(j) - sum[j]), tol)
        << what << ": dbias column " << j << " got " << dbias.get(j) << " expected "
        << sum[j];
  }
}

TEST_P(OpsAccuracy, BiasGeluBackward) {
  if (shape().empty()) GTEST_SKIP() << "bias needs rank >= 1";
  for (DType dbias_t : {dtype(), DType::f32}) {
    Buffer dy(dtype(), shape()), x(dtype(), shape()), bias(dtype(), {last()}),
        dx(dtype(), shape()), dbias(dbias_t, {last()});
    fill_inputs(dy, 11, 1.0f);
    fill_inputs(x, 12);
    fill_inputs(bias, 13, 1.0f);
    dx.poison();
    dbias.poison();
    gelu::bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), dbias.ref(),
                             opts());
    auto expect = [&](int64_t i) {
      return expect_bwd(form(), x.get(i) + bias.get(i % last()), dy.get(i));
    };
    const std::string w = what("bias_gelu_backward") + " dbias " + dtype_name(dbias_t);
    check_all(dx, expect, bound_ulps(dtype()), w);
    std::vector<double> sum(last(), 0.0), scale(last(), 0.0), floor(last(), 0.0);
    for (int64_t i = 0; i < x.size(); ++i) {
      sum[i % last()] += expect(i).value;
      scale[i % last()] += expect(i).scale;
      floor[i % last()] += 2.0 * std::max(1.0, std::fabs(double(dy.get(i)))) *
                           kF32Subnormal;
    }
    check_dbias(dbias, sum, scale, floor, w);
  }
}

Shape geglu_shape(const Shape& s) {
  Shape g = s.empty() ? Shape{1} : s;
  g.back() *= 2;
  return g;
}

TEST_P(OpsAccuracy, Geglu) {
  const Shape xs = geglu_shape(shape());
  const int64_t h = xs.back() / 2;
  Shape ys = xs;
  ys.back() = h;
  Buffer x(dtype(), xs), y(dtype(), ys);
  fill_inputs(x, 14);
  y.poison();
  gelu::geglu(x.cref(), y.ref(), opts());
  check_all(
      y,
      [&](int64_t i) {
        const int64_t r = i / h, j = i % h;
        return expect_fwd(form(), x.get(r * 2 * h + j), x.get(r * 2 * h + h + j));
      },
      bound_ulps(dtype(), kProductRoundingUlp), what("geglu"));
}

TEST_P(OpsAccuracy, GegluBackward) {
  const Shape xs = geglu_shape(shape());
  const int64_t h = xs.back() / 2;
  Shape ys = xs;
  ys.back() = h;
  Buffer dy(dtype(), ys), x(dtype(), xs), dx(dtype(), xs);
  fill_inputs(dy, 15, 1.0f);
  fill_inputs(x, 16);
  dx.poison();
  gelu::geglu_backward(dy.cref(), x.cref(), dx.ref(), opts());
  check_all(
      dx,
      [&](int64_t i) {
        const int64_t r = i / (2 * h), j = i % (2 * h);
        const double a = x.get(r * 2 * h + j % h), g = x.get(r * 2 * h + h + j % h);
        const double d = dy.get(r * h + j % h);
        return j < h ? expect_bwd(form(), a, d * g) : expect_fwd(form(), a, d);
      },
      bound_ulps(dtype(), kProductRoundingUlp), what("geglu_backward"));
}

INSTANTIATE_TEST_SUITE_P(
    All, OpsAccuracy,
    ::testing::Combine(::testing::ValuesIn(kForms), ::testing::ValuesIn(kDTypes),
                       ::testing::ValuesIn(kShapes)),
    [](const auto& info) {
      std::string s = std::string(approx_name(std::get<0>(info.param))) + "_" +
                      dtype_name(std::get<1>(info.param)) + "_r";
      // append, not "_" + std::to_string(d): GCC 12 warns (-Wrestrict, a
      // false positive) on a literal + std::string&& it inlines.
      for (int64_t d : std::get<2>(info.param)) s.append("_").append(std::to_string(d));
      return s;
    });

}  // namespace
}  // namespace gelu::testing
