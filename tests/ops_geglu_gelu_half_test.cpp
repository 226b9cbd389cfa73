// geglu with Options::gelu_half = second (x[..., :H] * gelu(x[..., H:]),
// diffusers' order) gives, bit for bit, what the default order gives on x
// with its halves swapped, forward and backward (dx's halves swapped back),
// for every form and dtype, odd widths and several threads; every output
// element is written; and the attribute is refused by the other ops.
#include <gtest/gtest.h>

#include <string>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

// x [rows, 2h] with its two halves swapped in every row.
Buffer swap_halves(const Buffer& x, int64_t rows, int64_t h) {
  Buffer s(x.dtype(), x.shape());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < 2 * h; ++j)
      s.set(r * 2 * h + j, x.get(r * 2 * h + (j + h) % (2 * h)));
  return s;
}

void expect_same_bits(const Buffer& got, const Buffer& want, const std::string& what) {
  ASSERT_TRUE(got.guard_intact()) << what << ": wrote past the end";
  for (int64_t i = 0; i < want.size(); ++i)
    ASSERT_EQ(got.bits(i), want.bits(i)) << what << " element " << i;
}

struct Case {
  Approx form;
  DType t;
  int64_t rows, h;
  int threads;
};

class GegluGeluHalf : public ::testing::TestWithParam<Case> {};

TEST_P(GegluGeluHalf, SecondHalfIsTheFirstOnSwappedHalves) {
  const auto [form, t, rows, h, threads] = GetParam();
  const std::string w = std::string(approx_name(form)) + " " + dtype_name(t) +
                        " rows " + std::to_string(rows) + " h " + std::to_string(h);
  Buffer x(t, {rows, 2 * h}), dy(t, {rows, h});
  fill_inputs(x, 31);
  fill_inputs(dy, 32, 1.0f);
  const Buffer xs = swap_halves(x, rows, h);
  const Options first{form, threads};
  Options second = first;
  second.gelu_half = GeluHalf::second;

  Buffer y(t, {rows, h}), want_y(t, {rows, h});
  y.poison();
  gelu::geglu(xs.cref(), want_y.ref(), first);
  gelu::geglu(x.cref(), y.ref(), second);
  expect_same_bits(y, want_y, "geglu " + w);

  Buffer dx(t, {rows, 2 * h}), dxs(t, {rows, 2 * h});
  dx.poison();
  gelu::geglu_backward(dy.cref(), xs.cref(), dxs.ref(), first);
  gelu::geglu_backward(dy.cref(), x.cref(), dx.ref(), second);
  expect_same_bits(dx, swap_halves(dxs, rows, h), "geglu_backward " + w);

  Buffer io(t, {rows, 2 * h});  // in place: dx = x
  io.poison();                  // sets the guard bytes
  for (int64_t i = 0; i < io.size(); ++i) io.set(i, x.get(i));
  gelu::geglu_backward(dy.cref(), io.cref(), io.ref(), second);
  expect_same_bits(io, dx, "geglu_backward dx=x " + w);
}

std::vector<Case> cases() {
  std::vector<Case> c;
  for (Approx a : kForms)
    for (DType t : {DType::f32, DType::bf16, DType::f16}) {
      c.push_back({a, t, 1, 1, 1});
      c.push_back({a, t, 3, 17, 1});     // below and past a vector
      c.push_back({a, t, 257, 131, 0});  // several threads and row blocks
    }
  return c;
}

INSTANTIATE_TEST_SUITE_P(All, GegluGeluHalf, ::testing::ValuesIn(cases()));

TEST(GegluGeluHalfErrors, OtherOpsRefuseIt) {
  Buffer x(DType::f32, {2, 4}), y(DType::f32, {2, 4});
  fill_inputs(x, 33);
  y.poison();
  Options o;
  o.gelu_half = GeluHalf::second;
  try {
    gelu::gelu(x.cref(), y.ref(), o);
    FAIL() << "gelu accepted gelu_half = second";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("gelu_half"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("geglu only"), std::string::npos) << e.what();
  }
  for (int64_t i = 0; i < y.size(); ++i) EXPECT_EQ(y.bits(i), poison_bits(DType::f32));
  o.gelu_half = static_cast<GeluHalf>(7);
  Buffer h(DType::f32, {2, 2});
  EXPECT_THROW(gelu::geglu(x.cref(), h.ref(), o), Error);
  EXPECT_EQ(parse_gelu_half("second"), GeluHalf::second);
  EXPECT_STREQ(gelu_half_name(GeluHalf::first), "first");
  EXPECT_THROW(parse_gelu_half("last"), Error);
}

}  // namespace
}  // namespace gelu::testing
