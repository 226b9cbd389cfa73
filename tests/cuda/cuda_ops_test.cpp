// Every op x form x dtype on the GPU, on inputs that reach the negative
// tail, outputs poisoned first (with guard bytes past them) and every
// element checked against the double reference under the CPU's contract.
// Shapes: empty, size 1, odd and prime sizes, one row and many rows, rows
// across several dbias row blocks.
#include <gtest/gtest.h>

#include <cmath>
#include <tuple>

#include "cuda_test_support.hpp"

namespace gelu::testing {
namespace {

using core::OpId;
using Shape = std::vector<int64_t>;

const Shape kShapes[] = {{},        {0},       {1},        {7},       {3, 0},
                         {0, 4},    {1, 1},    {13, 17},   {1, 1031}, {257, 3},
                         {5, 2, 9}, {1000, 8}, {37, 1},    {3, 4099}, {4133, 1},
                         {601, 15}, {65, 65},  {9000, 33}, {3, 4097}};

class CudaOps : public ::testing::TestWithParam<std::tuple<Approx, DType, Shape>> {
 protected:
  void SetUp() override { GELU_NEED_GPU(); }
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

TEST_P(CudaOps, Gelu) {
  Buffer x(dtype(), shape()), y(dtype(), shape());
  fill_inputs(x, 1);
  y.poison();
  run_on_gpu(OpId::gelu, {&x, &y}, opts());
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), x.get(i)); }, bound_ulps(dtype()),
      what("gelu"));
}

TEST_P(CudaOps, GeluBackwardWithValue) {
  Buffer dy(dtype(), shape()), x(dtype(), shape()), dx(dtype(), shape()),
      y(dtype(), shape());
  fill_inputs(dy, 2, 1.0f);
  fill_inputs(x, 3);
  dx.poison();
  y.poison();
  run_on_gpu(OpId::gelu_backward, {&dy, &x, &dx, &y}, opts());
  check_all(
      dx, [&](int64_t i) { return expect_bwd(form(), x.get(i), dy.get(i)); },
      bound_ulps(dtype()), what("gelu_backward dx"));
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), x.get(i)); }, bound_ulps(dtype()),
      what("gelu_backward y"));
}

TEST_P(CudaOps, AddGeluAndBackward) {
  Buffer a(dtype(), shape()), b(dtype(), shape()), y(dtype(), shape()),
      dy(dtype(), shape()), dx(dtype(), shape());
  fill_inputs(a, 4);
  fill_inputs(b, 5, 1.0f);
  fill_inputs(dy, 6, 1.0f);
  y.poison();
  dx.poison();
  run_on_gpu(OpId::add_gelu, {&a, &b, &y}, opts());
  run_on_gpu(OpId::add_gelu_backward, {&dy, &a, &b, &dx}, opts());
  // Exact for the f32 pre-activation fl(a + b).
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), a.get(i) + b.get(i)); },
      bound_ulps(dtype()), what("add_gelu"));
  check_all(
      dx, [&](int64_t i) { return expect_bwd(form(), a.get(i) + b.get(i), dy.get(i)); },
      bound_ulps(dtype()), what("add_gelu_backward"));
}

TEST_P(CudaOps, BiasGelu) {
  if (shape().empty()) GTEST_SKIP() << "bias needs rank >= 1";
  Buffer x(dtype(), shape()), bias(dtype(), {last()}), y(dtype(), shape());
  fill_inputs(x, 9);
  fill_inputs(bias, 10, 1.0f);
  y.poison();
  run_on_gpu(OpId::bias_gelu, {&x, &bias, &y}, opts());
  check_all(
      y, [&](int64_t i) { return expect_fwd(form(), x.get(i) + bias.get(i % last())); },
      bound_ulps(dtype()), what("bias_gelu"));
}

// dbias against the double sum of the reference dx per column, with the
// CPU test's tolerance: 2^-20 * sum |dx| + half an ulp of dbias's dtype.
TEST_P(CudaOps, BiasGeluBackward) {
  if (shape().empty()) GTEST_SKIP() << "bias needs rank >= 1";
  for (DType dbias_t : {dtype(), DType::f32}) {
    Buffer dy(dtype(), shape()), x(dtype(), shape()), bias(dtype(), {last()}),
        dx(dtype(), shape()), dbias(dbias_t, {last()}), y(dtype(), shape());
    fill_inputs(dy, 11, 1.0f);
    fill_inputs(x, 12);
    fill_inputs(bias, 13, 1.0f);
    dx.poison();
    dbias.poison();
    y.poison();
    run_on_gpu(OpId::bias_gelu_backward, {&dy, &x, &bias, &dx, &dbias, &y}, opts());
    auto expect = [&](int64_t i) {
      return expect_bwd(form(), x.get(i) + bias.get(i % last()), dy.get(i));
    };
    const std::string w = what("bias_gelu_backward") + " dbias " + dtype_name(dbias_t);
    check_all(dx, expect, bound_ulps(dtype()), w);
    check_all(
        y,
        [&](int64_t i) { return expect_fwd(form(), x.get(i) + bias.get(i % last())); },
        bound_ulps(dtype()), w + " y");
    // The bound's scale is sum |dy| (|t1| + |t2|), as on the CPU
    // (tests/ops_accuracy_test.cpp, check_dbias).
    std::vector<double> sum(last(), 0.0), scale(last(), 0.0);
    for (int64_t i = 0; i < x.size(); ++i) {
      sum[i % last()] += expect(i).value;
      scale[i % last()] += expect(i).scale;
    }
    for (int64_t j = 0; j < dbias.size(); ++j) {
      ASSERT_NE(dbias.bits(j), poison_bits(dbias_t)) << w << " col " << j;
      const double tol = std::ldexp(scale[j], -20) +
                         0.5 * ref::ulp_of(dbias_t, sum[j]) +
                         2.0 * kF32Subnormal * static_cast<double>(x.size());
      EXPECT_LE(std::fabs(dbias.get(j) - sum[j]), tol)
          << w << ": dbias column " << j << " got " << dbias.get(j) << " expected "
          << sum[j];
    }
    EXPECT_TRUE(dbias.guard_intact()) << w;
  }
}

Shape geglu_shape(const Shape& s) {
  Shape g = s.empty() ? Shape{1} : s;
  g.back() *= 2;
  return g;
}

TEST_P(CudaOps, GegluBothHalves) {
  const Shape xs = geglu_shape(shape());
  const int64_t h = xs.back() / 2;
  Shape ys = xs;
  ys.back() = h;
  for (GeluHalf half : {GeluHalf::first, GeluHalf::second}) {
    const bool second = half == GeluHalf::second;
    Options o = opts();
    o.gelu_half = half;
    Buffer x(dtype(), xs), y(dtype(), ys), dy(dtype(), ys), dx(dtype(), xs),
        y2(dtype(), ys);
    fill_inputs(x, 14);
    fill_inputs(dy, 15, 1.0f);
    y.poison();
    dx.poison();
    y2.poison();
    run_on_gpu(OpId::geglu, {&x, &y}, o);
    run_on_gpu(OpId::geglu_backward, {&dy, &x, &dx, &y2}, o);
    // a: the GELU's input, g: its multiplier, of element (r, j).
    auto a_of = [&](int64_t r, int64_t j) {
      return x.get(r * 2 * h + j + (second ? h : 0));
    };
    auto g_of = [&](int64_t r, int64_t j) {
      return x.get(r * 2 * h + j + (second ? 0 : h));
    };
    const std::string w = what("geglu") + (second ? " second" : " first");
    const double bound = bound_ulps(dtype(), ref::kProductRoundingUlps);
    auto expect_y = [&](int64_t i) {
      return expect_fwd(form(), a_of(i / h, i % h), g_of(i / h, i % h));
    };
    check_all(y, expect_y, bound, w);
    check_all(y2, expect_y, bound, w + " backward y");
    check_all(
        dx,
        [&](int64_t i) {
          const int64_t r = i / (2 * h), k = i % (2 * h), j = k % h;
          const bool is_a = (k < h) != second;
          const double d = dy.get(r * h + j);
          return is_a ? expect_bwd(form(), a_of(r, j), d * g_of(r, j))
                      : expect_fwd(form(), a_of(r, j), d);
        },
        bound, w + " backward dx");
  }
}

INSTANTIATE_TEST_SUITE_P(
    All, CudaOps,
    ::testing::Combine(::testing::ValuesIn(kForms), ::testing::ValuesIn(kDTypes),
                       ::testing::ValuesIn(kShapes)),
    [](const auto& info) {
      std::string s = std::string(approx_name(std::get<0>(info.param))) + "_" +
                      dtype_name(std::get<1>(info.param)) + "_r";
      for (int64_t d : std::get<2>(info.param)) s.append("_").append(std::to_string(d));
      return s;
    });

}  // namespace
}  // namespace gelu::testing
