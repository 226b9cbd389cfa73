// Every validation rule: the call throws gelu::Error with a message naming
// the op, the argument, what was expected and what came, and leaves every
// output byte untouched.
#include <gtest/gtest.h>

#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

using Shape = std::vector<int64_t>;

// Runs `call`, expects gelu::Error whose message contains each of `parts`,
// and checks that the outputs' bytes did not change.
void expect_error(const std::function<void()>& call, std::vector<std::string> parts,
                  std::vector<const Buffer*> outputs) {
  std::vector<std::vector<unsigned char>> before;
  for (const Buffer* b : outputs) before.push_back(b->raw());
  try {
    call();
    ADD_FAILURE() << "no gelu::Error thrown; expected one mentioning " << parts[0];
  } catch (const Error& e) {
    for (const std::string& p : parts)
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos)
          << "message '" << e.what() << "' lacks '" << p << "'";
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    EXPECT_EQ(outputs[i]->raw(), before[i]) << "output " << i << " was touched";
}

constexpr DType F = DType::f32;

TEST(Validation, ShapeMismatchMessageIsExact) {
  Buffer dy(F, {4, 7}), x(F, {4, 7}), dx(F, {4, 8});
  dx.poison();
  try {
    gelu_backward(dy.cref(), x.cref(), dx.ref());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_STREQ(
        e.what(),
        "gelu_backward: dx has shape [4, 8], expected [4, 7] (the shape of x)");
  }
}

TEST(Validation, ShapeRulesPerOp) {
  Buffer x(F, {3, 4}), y(F, {3, 4}), y5(F, {3, 5}), b4(F, {4}), b5(F, {5});
  Buffer db4(F, {4}), dx(F, {3, 4}), yh(F, {3, 2}), y3(F, {3, 3});
  for (Buffer* b : {&y, &y5, &db4, &dx, &yh, &y3}) b->poison();
  expect_error([&] { gelu(x.cref(), y5.ref()); },
               {"gelu: y has shape [3, 5]", "[3, 4]"}, {&y5});
  expect_error([&] { bias_gelu(x.cref(), b5.cref(), y.ref()); },
               {"bias_gelu: bias has shape [5], expected [4]"}, {&y});
  expect_error([&] { add_gelu(x.cref(), y5.cref(), y.ref()); },
               {"add_gelu: b has shape [3, 5]"}, {&y});
  expect_error(
      [&] { bias_gelu_backward(x.cref(), x.cref(), b4.cref(), dx.ref(), y5.ref()); },
      {"bias_gelu_backward: dbias has shape [3, 5], expected [4]"}, {&dx, &y5});
  expect_error([&] { geglu(x.cref(), y3.ref()); },
               {"geglu: y has shape [3, 3], expected [3, 2]"}, {&y3});
  expect_error([&] { geglu_backward(y3.cref(), x.cref(), dx.ref()); },
               {"geglu_backward: dy has shape [3, 3], expected [3, 2]"}, {&dx});
  expect_error([&] { add_gelu_backward(x.cref(), x.cref(), x.cref(), y5.ref()); },
               {"add_gelu_backward: dx has shape [3, 5]"}, {&y5});
}

TEST(Validation, RankAndEvenLastDimension) {
  Buffer s(F, {}), s2(F, {}), b(F, {1}), odd(F, {2, 3}), y(F, {2, 1});
  s2.poison();
  y.poison();
  expect_error([&] { bias_gelu(s.cref(), b.cref(), s2.ref()); },
               {"bias_gelu: x has shape []", "at least one dimension"}, {&s2});
  expect_error([&] { geglu(odd.cref(), y.ref()); },
               {"geglu: x has shape [2, 3]", "even last dimension"}, {&y});
  expect_error([&] { geglu(s.cref(), s2.ref()); }, {"geglu: x has shape []"}, {&s2});
}

TEST(Validation, DTypes) {
  Buffer x(F, {8}), yb(DType::bf16, {8}), xb(DType::bf16, {8}), db16(DType::f16, {8});
  Buffer dxb(DType::bf16, {8}), dbf(DType::f32, {8}), dbb(DType::bf16, {8});
  for (Buffer* b : {&yb, &db16, &dxb, &dbf, &dbb}) b->poison();
  expect_error([&] { gelu(x.cref(), yb.ref()); },
               {"gelu: y has dtype bf16, expected f32 (the dtype of x)"}, {&yb});
  expect_error(
      [&] {
        bias_gelu_backward(xb.cref(), xb.cref(), xb.cref(), dxb.ref(), db16.ref());
      },
      {"bias_gelu_backward: dbias has dtype f16, expected bf16 or f32"}, {&dxb, &db16});
  // dbias may be f32 (or the inputs' dtype) when the inputs are bf16.
  bias_gelu_backward(xb.cref(), xb.cref(), xb.cref(), dxb.ref(), dbf.ref());
  bias_gelu_backward(xb.cref(), xb.cref(), xb.cref(), dxb.ref(), dbb.ref());
  const TensorRef bad{yb.data(), static_cast<DType>(7), {8}};
  expect_error([&] { gelu(x.cref(), bad); },
               {"gelu: y has dtype 7", "f32, bf16 or f16"}, {&yb});
}

TEST(Validation, NullDataAndEmptyTensors) {
  Buffer x(F, {2, 3}), y(F, {2, 3});
  y.poison();
  expect_error(
      [&] {
        gelu(ConstTensorRef{nullptr, F, {2, 3}}, y.ref());
      },
      {"gelu: x is null", "6 elements"}, {&y});
  expect_error(
      [&] {
        gelu(x.cref(), TensorRef{nullptr, F, {2, 3}});
      },
      {"gelu: y is null"}, {});
  // Empty tensors are valid no-ops, null data or not.
  gelu(ConstTensorRef{nullptr, F, {0, 3}}, TensorRef{nullptr, F, {0, 3}});
  bias_gelu(ConstTensorRef{nullptr, F, {0, 3}}, ConstTensorRef{x.data(), F, {3}},
            TensorRef{nullptr, F, {0, 3}});
  geglu(ConstTensorRef{nullptr, F, {5, 0}}, TensorRef{nullptr, F, {5, 0}});
}

TEST(Validation, EmptyRowsStillZeroDbias) {
  // dx has no elements, but dbias has 3: the sum over no rows is 0.
  Buffer db(F, {3});
  db.poison();
  bias_gelu_backward(
      ConstTensorRef{nullptr, F, {0, 3}}, ConstTensorRef{nullptr, F, {0, 3}},
      ConstTensorRef{db.data(), F, {3}}, TensorRef{nullptr, F, {0, 3}}, db.ref());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(db.get(i), 0.0f);
}

TEST(Validation, NegativeAndOverflowingDimensions) {
  Buffer y(F, {4});
  y.poison();
  float dummy = 0;
  expect_error(
      [&] {
        gelu(ConstTensorRef{&dummy, F, {2, -2}}, TensorRef{y.data(), F, {2, -2}});
      },
      {"gelu: x has shape [2, -2]", "non-negative"}, {&y});
  const int64_t big = int64_t{1} << 40;
  expect_error(
      [&] {
        gelu(ConstTensorRef{&dummy, F, {big, big}}, TensorRef{y.data(), F, {big, big}});
      },
      {"gelu: x has shape", "at most 2^61 elements"}, {&y});
}

TEST(Validation, OptionsAreChecked) {
  Buffer x(F, {4}), y(F, {4});
  y.poison();
  expect_error(
      [&] {
        gelu(x.cref(), y.ref(), Options{Approx::none, -1});
      },
      {"gelu: num_threads is -1, expected >= 0"}, {&y});
  expect_error(
      [&] {
        gelu(x.cref(), y.ref(), Options{static_cast<Approx>(9), 0});
      },
      {"gelu: approximate is 9, expected a form: 'none', 'tanh' or 'quick'"}, {&y});
  EXPECT_THROW(parse_approx("erf"), Error);
  EXPECT_EQ(parse_approx("tanh"), Approx::tanh);
  // The form list (GELU_FUSION_FORMS): every form's name parses back to it,
  // in Approx order, and an unknown name's message lists them all.
  ASSERT_EQ(std::size(kAllForms), 3u);
  for (std::size_t i = 0; i < std::size(kAllForms); ++i) {
    EXPECT_EQ(static_cast<std::size_t>(kAllForms[i]), i);
    EXPECT_EQ(parse_approx(approx_name(kAllForms[i])), kAllForms[i]);
  }
  EXPECT_STREQ(approx_name(static_cast<Approx>(9)), "invalid approximate");
  try {
    parse_approx("gelu");
    ADD_FAILURE() << "parse_approx(\"gelu\") did not throw";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "approximate is 'gelu', expected 'none', 'tanh' or 'quick'");
  }
  EXPECT_THROW(parse_dtype("f64"), Error);
  EXPECT_EQ(parse_dtype("bfloat16"), DType::bf16);
}

TEST(Validation, OverlapIsAnErrorButExactInPlaceIsAllowed) {
  std::vector<float> arena(64, 1.0f);
  float* p = arena.data();
  const std::vector<unsigned char> before(reinterpret_cast<unsigned char*>(p),
                                          reinterpret_cast<unsigned char*>(p + 64));
  auto untouched = [&] { return std::memcmp(before.data(), p, before.size()) == 0; };
  auto throws = [&](const std::function<void()>& f, const char* part) {
    try {
      f();
      ADD_FAILURE() << "no error for " << part;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
    }
    EXPECT_TRUE(untouched()) << part;
  };
  throws([&] { gelu({p, F, {8}}, TensorRef{p + 1, F, {8}}); }, "gelu: y overlaps x");
  throws(
      [&] {
        gelu({p, F, {8}}, TensorRef{p, F, {2, 4}});
      },
      "gelu: y has shape [2, 4]");
  throws([&] { geglu({p, F, {8}}, TensorRef{p, F, {4}}); }, "geglu: y overlaps x");
  throws(
      [&] {
        geglu_backward({p + 16, F, {4}}, {p + 24, F, {8}}, TensorRef{p + 20, F, {8}});
      },
      "geglu_backward: dx overlaps");
  throws(
      [&] {
        bias_gelu_backward({p, F, {2, 4}}, {p + 8, F, {2, 4}}, {p + 16, F, {4}},
                           TensorRef{p + 24, F, {2, 4}}, TensorRef{p + 28, F, {4}});
      },
      "bias_gelu_backward: dx overlaps dbias");
  throws(
      [&] {
        add_gelu_backward({p, F, {8}}, {p + 8, F, {8}}, {p + 16, F, {8}},
                          TensorRef{p + 12, F, {8}});
      },
      "add_gelu_backward: dx overlaps a");
  // Exactly the same buffer as an input of the same shape: in place, fine.
  gelu({p, F, {8}}, TensorRef{p, F, {8}});
  add_gelu_backward({p, F, {8}}, {p + 8, F, {8}}, {p + 16, F, {8}},
                    TensorRef{p + 8, F, {8}});
  bias_gelu_backward({p, F, {2, 4}}, {p + 8, F, {2, 4}}, {p + 16, F, {4}},
                     TensorRef{p, F, {2, 4}}, TensorRef{p + 16, F, {4}});
  // Inputs may overlap each other freely.
  add_gelu({p + 32, F, {8}}, {p + 33, F, {8}}, TensorRef{p + 48, F, {8}});
}

}  // namespace
}  // namespace gelu::testing
