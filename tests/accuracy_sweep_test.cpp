// The accuracy contract over sweeps through the public API:
// f32: 2^24 evenly spread bit patterns (every sign and exponent) per
// function; bf16 and f16: all 65536 inputs. Prints the worst error found.
#include <gtest/gtest.h>

#include <cstdio>
#include <tuple>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

// Bit patterns i * 256 + a varying low byte: evenly spread over all 2^32,
// with low mantissa bits that are not all the same.
Buffer f32_sweep() {
  constexpr int64_t kCount = int64_t{1} << 24;
  Buffer x(DType::f32, {kCount});
  auto* p = static_cast<uint32_t*>(x.data());
  for (int64_t i = 0; i < kCount; ++i)
    p[i] = static_cast<uint32_t>(i * 256 + (i * 97 + 13) % 256);
  return x;
}

Buffer all_16bit(DType t) {
  Buffer x(t, {65536});
  auto* p = static_cast<uint16_t*>(x.data());
  for (int i = 0; i < 65536; ++i) p[i] = static_cast<uint16_t>(i);
  return x;
}

void sweep(Approx form, const Buffer& x) {
  const DType t = x.dtype();
  Buffer y(t, x.shape()), dy(t, x.shape()), dx(t, x.shape());
  for (int64_t i = 0; i < dy.size(); ++i) dy.set(i, 1.0f);
  y.poison();
  dx.poison();
  gelu::gelu(x.cref(), y.ref(), {form, 0});
  gelu::gelu_backward(dy.cref(), x.cref(), dx.ref(), {form, 0});
  const std::string w = std::string(approx_name(form)) + " " + dtype_name(t);
  const double fwd = check_all(
      y, [&](int64_t i) { return expect_fwd(form, x.get(i)); }, bound_ulps(t),
      "gelu sweep " + w);
  const double bwd = check_all(
      dx, [&](int64_t i) { return expect_bwd(form, x.get(i), 1.0); }, bound_ulps(t),
      "gelu_backward sweep " + w);
  std::printf(
      "sweep %s over %lld inputs: forward max %.3f ulp, backward max %.3f ulp\n",
      w.c_str(), static_cast<long long>(x.size()), fwd, bwd);
}

class AccuracySweep : public ::testing::TestWithParam<std::tuple<Approx, DType>> {};

TEST_P(AccuracySweep, ForwardAndBackward) {
  const auto [form, t] = GetParam();
  sweep(form, t == DType::f32 ? f32_sweep() : all_16bit(t));
}

INSTANTIATE_TEST_SUITE_P(All, AccuracySweep,
                         ::testing::Combine(::testing::ValuesIn(kForms),
                                            ::testing::ValuesIn(kDTypes)),
                         form_dtype_name);

}  // namespace
}  // namespace gelu::testing
