// The backward ops' optional output y: the forward's value, recomputed in the
// same pass (gelu_backward, bias_gelu_backward, geglu_backward with y).
//
// Per SIMD target this CPU runs, every form and dtype, through the public
// API with every output poisoned first:
//  - y meets the forward op's accuracy contract against the double
//    reference, and equals the forward op's own result bit for bit where
//    both use the same math (f32; bf16/f16 without dbias, see MathFor in
//    src/cpu/driver-inl.h: bias_gelu_backward keeps the f32 math for its
//    sums, so its 16-bit y is only held to the contract);
//  - dx and dbias are bit-identical to the call without y;
//  - in place (y = x, y = dy) and the validation rules of an optional output.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels_test_support.hpp"
#include "test_support.hpp"

namespace gelu::testing {
namespace {

using Shape = std::vector<int64_t>;

// Zero sizes, one element, odd and prime sizes, one and many rows, and past
// one dbias tile of 4096 columns.
const Shape kShapes[] = {{0, 4},    {1, 1},   {7},       {13, 17},
                         {1, 1031}, {257, 3}, {5, 2, 9}, {6, 4101}};

// The one extra f32 rounding of GeGLU's product (as ops_accuracy_test).
constexpr double kProductRoundingUlp = 0.5;

Buffer clone(const Buffer& b) {
  Buffer c(b.dtype(), b.shape());
  std::memcpy(c.data(), b.data(), b.raw().size());
  return c;
}

// Bit for bit, but any two quiet NaNs are equal: which NaN an x86 operation
// returns (the default -NaN or an operand's) depends on operand order, which
// the compiler may swap, so NaN sign and payload are no part of the contract.
void expect_same_bits(const Buffer& got, const Buffer& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size());
  for (int64_t i = 0; i < got.size(); ++i) {
    ASSERT_NE(got.bits(i), poison_bits(got.dtype()))
        << what << " element " << i << " left unwritten";
    if (std::isnan(got.get(i)) && std::isnan(want.get(i))) continue;
    ASSERT_EQ(got.bits(i), want.bits(i)) << what << " element " << i;
  }
}

class ValueOut : public KernelTarget {
 protected:
  std::string what(const char* op, Approx a, DType t, const Shape& s) const {
    return std::string(op) + " " + approx_name(a) + " " + dtype_name(t) + " " +
           ::testing::PrintToString(s) + " on " + cpu::target_name();
  }
};

TEST_P(ValueOut, GeluBackward) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (const Shape& s : kShapes) {
        const std::string w = what("gelu_backward", a, t, s);
        const Options o{a, 0};
        Buffer dy(t, s), x(t, s), dx(t, s), y(t, s), dx0(t, s), y0(t, s);
        fill_inputs(dy, 21, 1.0f);
        fill_inputs(x, 22);
        for (Buffer* b : {&dx, &y, &dx0, &y0}) b->poison();
        gelu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), o);
        check_all(
            y, [&](int64_t i) { return expect_fwd(a, x.get(i)); }, bound_ulps(t),
            w + " y");
        gelu_backward(dy.cref(), x.cref(), dx0.ref(), o);
        expect_same_bits(dx, dx0, w + " dx against the call without y");
        gelu(x.cref(), y0.ref(), o);
        expect_same_bits(y, y0, w + " y against gelu");
        Buffer io = clone(x);  // y = x in place
        gelu_backward(dy.cref(), io.cref(), dx.ref(), io.ref(), o);
        expect_same_bits(io, y0, w + " y = x in place");
        expect_same_bits(dx, dx0, w + " dx with y = x");
        if (HasFailure()) return;
      }
}

TEST_P(ValueOut, BiasGeluBackward) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (const Shape& s : kShapes) {
        const std::string w = what("bias_gelu_backward", a, t, s);
        const Options o{a, 0};
        const int64_t c = s.back();
        for (DType dbias_t : {t, DType::f32}) {
          Buffer dy(t, s), x(t, s), bias(t, {c}), dx(t, s), y(t, s), db(dbias_t, {c});
          Buffer dx0(t, s), db0(dbias_t, {c}), y0(t, s);
          fill_inputs(dy, 23, 1.0f);
          fill_inputs(x, 24);
          fill_inputs(bias, 25, 1.0f);
          for (Buffer* b : {&dx, &y, &db, &dx0, &db0, &y0}) b->poison();
          bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), db.ref(),
                             y.ref(), o);
          check_all(
              y, [&](int64_t i) { return expect_fwd(a, x.get(i) + bias.get(i % c)); },
              bound_ulps(t), w + " y");
          bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx0.ref(), db0.ref(), o);
          expect_same_bits(dx, dx0, w + " dx against the call without y");
          expect_same_bits(db, db0, w + " dbias against the call without y");
          if (t == DType::f32) {
            bias_gelu(x.cref(), bias.cref(), y0.ref(), o);
            expect_same_bits(y, y0, w + " y against bias_gelu");
          }
          Buffer io = clone(dy);  // y = dy in place
          y0 = clone(y);
          bias_gelu_backward(io.cref(), x.cref(), bias.cref(), dx.ref(), db.ref(),
                             io.ref(), o);
          expect_same_bits(io, y0, w + " y = dy in place");
          expect_same_bits(dx, dx0, w + " dx with y = dy");
          if (HasFailure()) return;
        }
      }
}

TEST_P(ValueOut, GegluBackward) {
  for (GeluHalf half : {GeluHalf::first, GeluHalf::second})
    for (Approx a : kForms)
      for (DType t : kDTypes)
        for (Shape ys : kShapes) {
          Shape xs = ys;
          xs.back() *= 2;
          const int64_t h = ys.back();
          // Offsets in a row of the GELU's half and of its multiplier.
          const int64_t g = half == GeluHalf::second ? h : 0, u = h - g;
          const std::string w = what("geglu_backward", a, t, xs) + " gelu_half " +
                                gelu_half_name(half);
          Options o{a, 0};
          o.gelu_half = half;
          Buffer dy(t, ys), x(t, xs), dx(t, xs), y(t, ys), dx0(t, xs), y0(t, ys);
          fill_inputs(dy, 26, 1.0f);
          fill_inputs(x, 27);
          for (Buffer* b : {&dx, &y, &dx0, &y0}) b->poison();
          geglu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), o);
          check_all(
              y,
              [&](int64_t i) {
                const int64_t r = i / h, j = i % h;
                return expect_fwd(a, x.get(r * 2 * h + g + j),
                                  x.get(r * 2 * h + u + j));
              },
              bound_ulps(t, kProductRoundingUlp), w + " y");
          geglu_backward(dy.cref(), x.cref(), dx0.ref(), o);
          expect_same_bits(dx, dx0, w + " dx against the call without y");
          geglu(x.cref(), y0.ref(), o);
          expect_same_bits(y, y0, w + " y against geglu");
          Buffer io = clone(dy);  // y = dy in place
          geglu_backward(io.cref(), x.cref(), dx.ref(), io.ref(), o);
          expect_same_bits(io, y0, w + " y = dy in place");
          expect_same_bits(dx, dx0, w + " dx with y = dy");
          if (HasFailure()) return;
        }
}

// Every last dimension from 1 to 70 (below, at and past the narrow-row
// paths' 64 columns, src/cpu/narrow_rows-inl.h) and a few wide ones up to
// 65536, over several rows and threads: y is the forward op's result bit for
// bit (f32) and dx, dbias are those of the call without y, every element
// written.
TEST_P(ValueOut, EveryRowWidth) {
  std::vector<int64_t> widths;
  for (int64_t c = 1; c <= 70; ++c) widths.push_back(c);
  for (int64_t c : {127, 1000, 4097, 65536}) widths.push_back(c);
  const DType t = DType::f32;
  for (int64_t c : widths)
    for (int threads : {1, 3}) {
      const int64_t rows = c >= 4096 ? 3 : 37;
      const Options o{Approx::none, threads};
      const std::string w = "width " + std::to_string(c) + " threads " +
                            std::to_string(threads) + " on " + cpu::target_name();
      const Shape s{rows, c}, g2{rows, 2 * c};
      {
        Buffer dy(t, s), x(t, s), dx(t, s), y(t, s), dx0(t, s), y0(t, s);
        fill_inputs(dy, 41, 1.0f);
        fill_inputs(x, 42);
        for (Buffer* b : {&dx, &y, &dx0, &y0}) b->poison();
        gelu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), o);
        gelu_backward(dy.cref(), x.cref(), dx0.ref(), o);
        gelu(x.cref(), y0.ref(), o);
        expect_same_bits(y, y0, "gelu_backward " + w + " y against gelu");
        expect_same_bits(dx, dx0, "gelu_backward " + w + " dx");
      }
      {
        Buffer dy(t, s), x(t, s), bias(t, {c}), dx(t, s), y(t, s), db(t, {c});
        Buffer dx0(t, s), db0(t, {c}), y0(t, s);
        fill_inputs(dy, 43, 1.0f);
        fill_inputs(x, 44);
        fill_inputs(bias, 45, 1.0f);
        for (Buffer* b : {&dx, &y, &db, &dx0, &db0, &y0}) b->poison();
        bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), db.ref(),
                           y.ref(), o);
        bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx0.ref(), db0.ref(), o);
        bias_gelu(x.cref(), bias.cref(), y0.ref(), o);
        expect_same_bits(y, y0, "bias_gelu_backward " + w + " y against bias_gelu");
        expect_same_bits(dx, dx0, "bias_gelu_backward " + w + " dx");
        expect_same_bits(db, db0, "bias_gelu_backward " + w + " dbias");
      }
      for (GeluHalf half : {GeluHalf::first, GeluHalf::second}) {
        Options og = o;
        og.gelu_half = half;
        const std::string wg = w + " gelu_half " + gelu_half_name(half);
        Buffer dy(t, s), x(t, g2), dx(t, g2), y(t, s), dx0(t, g2), y0(t, s);
        fill_inputs(dy, 46, 1.0f);
        fill_inputs(x, 47);
        for (Buffer* b : {&dx, &y, &dx0, &y0}) b->poison();
        geglu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), og);
        geglu_backward(dy.cref(), x.cref(), dx0.ref(), og);
        geglu(x.cref(), y0.ref(), og);
        expect_same_bits(y, y0, "geglu_backward " + wg + " y against geglu");
        expect_same_bits(dx, dx0, "geglu_backward " + wg + " dx");
      }
      if (HasFailure()) return;
    }
}

// Special values through the same pass: the forward's own results.
TEST_P(ValueOut, SpecialValues) {
  const float kIn[] = {INFINITY, -INFINITY, NAN, 0.0f, -0.0f, -30.0f, 30.0f, -0.7518f};
  const int64_t n = std::size(kIn);
  for (Approx a : kForms)
    for (DType t : kDTypes) {
      Buffer dy(t, {n}), x(t, {n}), dx(t, {n}), y(t, {n}), y0(t, {n});
      for (int64_t i = 0; i < n; ++i) {
        x.set(i, kIn[i]);
        dy.set(i, 1.0f);
      }
      y.poison();
      gelu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), {a, 1});
      gelu(x.cref(), y0.ref(), {a, 1});
      expect_same_bits(y, y0, what("gelu_backward special", a, t, {n}));
    }
}

GELU_INSTANTIATE_PER_TARGET(ValueOut);

// --- Validation of the optional output -------------------------------------

void expect_error(const std::function<void()>& call, const std::string& part,
                  std::vector<const Buffer*> outputs) {
  std::vector<std::vector<unsigned char>> before;
  for (const Buffer* b : outputs) before.push_back(b->raw());
  try {
    call();
    ADD_FAILURE() << "no gelu::Error thrown; expected one mentioning " << part;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos)
        << "message '" << e.what() << "' lacks '" << part << "'";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(outputs[i]->raw(), before[i]) << "output " << i << " was touched";
}

constexpr DType F = DType::f32;

TEST(ValueOutValidation, AbsentIsTheCallWithoutY) {
  Buffer dy(F, {3, 4}), x(F, {3, 4}), dx(F, {3, 4}), dx0(F, {3, 4});
  fill_inputs(dy, 1, 1.0f);
  fill_inputs(x, 2);
  gelu_backward(dy.cref(), x.cref(), dx.ref(), TensorRef{});
  gelu_backward(dy.cref(), x.cref(), dx0.ref());
  expect_same_bits(dx, dx0, "gelu_backward with y = TensorRef{}");
  // A scalar x with y absent, and with y present (shape [] but data).
  Buffer s(F, {}), sd(F, {}), sy(F, {});
  s.set(0, 1.0f);
  sd.set(0, 1.0f);
  sy.poison();
  gelu_backward(sd.cref(), s.cref(), sd.ref(), TensorRef{});
  gelu_backward(sd.cref(), s.cref(), sd.ref(), sy.ref());
  EXPECT_NE(sy.bits(0), poison_bits(F)) << "a scalar y with data was not written";
}

TEST(ValueOutValidation, ShapeDTypeNullAndOverlap) {
  Buffer dy(F, {3, 4}), x(F, {3, 4}), dx(F, {3, 4}), b(F, {4}), db(F, {4});
  Buffer y5(F, {3, 5}), yb(DType::bf16, {3, 4}), gx(F, {3, 8}), gdx(F, {3, 8});
  Buffer gy(F, {3, 4});
  for (Buffer* p : {&dx, &db, &y5, &yb, &gdx}) p->poison();
  expect_error([&] { gelu_backward(dy.cref(), x.cref(), dx.ref(), y5.ref()); },
               "gelu_backward: y has shape [3, 5], expected [3, 4] (the shape of x)",
               {&dx, &y5});
  expect_error([&] { gelu_backward(dy.cref(), x.cref(), dx.ref(), yb.ref()); },
               "gelu_backward: y has dtype bf16, expected f32", {&dx, &yb});
  expect_error(
      [&] {
        gelu_backward(dy.cref(), x.cref(), dx.ref(), TensorRef{nullptr, F, {3, 4}});
      },
      "gelu_backward: y is null, expected data for 12 elements", {&dx});
  expect_error([&] { gelu_backward(dy.cref(), x.cref(), dx.ref(), dx.ref()); },
               "gelu_backward: dx overlaps y", {&dx});
  expect_error(
      [&] {
        bias_gelu_backward(dy.cref(), x.cref(), b.cref(), dx.ref(), db.ref(), y5.ref());
      },
      "bias_gelu_backward: y has shape [3, 5], expected [3, 4]", {&dx, &db, &y5});
  // y may not be the bias (another shape), nor overlap dbias.
  expect_error(
      [&] {
        bias_gelu_backward(dy.cref(), x.cref(), b.cref(), dx.ref(), db.ref(),
                           TensorRef{db.data(), F, {3, 4}});
      },
      "bias_gelu_backward: dbias overlaps y", {&dx, &db});
  expect_error([&] { geglu_backward(gy.cref(), gx.cref(), gdx.ref(), y5.ref()); },
               "geglu_backward: y has shape [3, 5], expected [3, 4] (the shape of x)",
               {&gdx, &y5});
  expect_error([&] { geglu_backward(gy.cref(), gx.cref(), gdx.ref(), gx.ref()); },
               "geglu_backward: y has shape [3, 8], expected [3, 4]", {&gdx});
}

}  // namespace
}  // namespace gelu::testing
