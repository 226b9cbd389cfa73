// Sweeps on the GPU against the double reference:
//   - every bf16 and f16 bit pattern (NaNs, infinities, subnormals, the
//     overflow range included) as the pre-activation of every op and form,
//     the other inputs (bias, b, dy, the GeGLU multiplier) from a fixed
//     sample;
//   - 10^8 f32 inputs per form through gelu and gelu_backward: a quarter
//     in the negative tail [-14, -3], a quarter N(0, 3), the rest random
//     finite bit patterns; plus the special values.
// The checks run on every core (OpenMP); the worst error is printed.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "cuda_test_support.hpp"

namespace gelu::testing {
namespace {

using core::OpId;

// Every 16-bit pattern as an element of a bf16/f16 buffer of 65536.
void every_pattern(Buffer& b) {
  for (int64_t i = 0; i < b.size(); ++i) {
    const uint16_t h = static_cast<uint16_t>(i);
    std::memcpy(static_cast<char*>(b.data()) + 2 * i, &h, 2);
  }
}

// The worst contract error over out, in parallel; fails above `bound`.
template <class ExpectFn>
void check_parallel(const Buffer& out, ExpectFn expect, double bound,
                    const std::string& what) {
  double worst = 0.0;
  int64_t worst_i = -1, unwritten = 0;
#pragma omp parallel
  {
    double w = 0.0;
    int64_t wi = -1, un = 0;
#pragma omp for schedule(static)
    for (int64_t i = 0; i < out.size(); ++i) {
      if (out.bits(i) == poison_bits(out.dtype())) {
        ++un;
        continue;
      }
      const double e = error_ulps(out.dtype(), out.get(i), expect(i));
      if (!(e <= w)) {
        w = e;
        wi = i;
      }
    }
#pragma omp critical
    {
      unwritten += un;
      if (wi >= 0 && (!(w <= worst) || worst_i < 0)) {
        worst = w;
        worst_i = wi;
      }
    }
  }
  EXPECT_EQ(unwritten, 0) << what;
  EXPECT_TRUE(out.guard_intact()) << what;
  if (worst_i >= 0) {
    EXPECT_LE(worst, bound) << what << ": worst at element " << worst_i << ", got "
                            << out.get(worst_i);
    std::printf("[ figures  ] %s: worst %.3g ulp\n", what.c_str(), worst);
  }
}

class CudaEveryPattern : public ::testing::TestWithParam<std::tuple<Approx, DType>> {
 protected:
  void SetUp() override { GELU_NEED_GPU(); }
  Approx form() const { return std::get<0>(GetParam()); }
  DType dtype() const { return std::get<1>(GetParam()); }
  std::string what(const char* op) const {
    return std::string(op) + " " + approx_name(form()) + " " + dtype_name(dtype()) +
           " every pattern";
  }
};

constexpr int64_t kPatterns = 65536;

TEST_P(CudaEveryPattern, EveryOp) {
  const DType t = dtype();
  const Options o{form(), 0};
  const double bound = bound_ulps(t);
  Buffer x(t, {kPatterns}), other(t, {kPatterns}), dy(t, {kPatterns});
  every_pattern(x);
  fill_inputs(other, 21, 1.0f);
  fill_inputs(dy, 22, 1.0f);
  {
    Buffer y(t, {kPatterns}), dx(t, {kPatterns}), v(t, {kPatterns});
    y.poison();
    dx.poison();
    v.poison();
    run_on_gpu(OpId::gelu, {&x, &y}, o);
    run_on_gpu(OpId::gelu_backward, {&dy, &x, &dx, &v}, o);
    check_parallel(
        y, [&](int64_t i) { return expect_fwd(form(), x.get(i)); }, bound,
        what("gelu"));
    check_parallel(
        v, [&](int64_t i) { return expect_fwd(form(), x.get(i)); }, bound,
        what("gelu_backward y"));
    check_parallel(
        dx, [&](int64_t i) { return expect_bwd(form(), x.get(i), dy.get(i)); }, bound,
        what("gelu_backward"));
  }
  {
    Buffer y(t, {kPatterns}), dx(t, {kPatterns});
    y.poison();
    dx.poison();
    run_on_gpu(OpId::add_gelu, {&x, &other, &y}, o);
    run_on_gpu(OpId::add_gelu_backward, {&dy, &x, &other, &dx}, o);
    auto pre = [&](int64_t i) { return double(x.get(i) + other.get(i)); };
    check_parallel(
        y, [&](int64_t i) { return expect_fwd(form(), pre(i)); }, bound,
        what("add_gelu"));
    check_parallel(
        dx, [&](int64_t i) { return expect_bwd(form(), pre(i), dy.get(i)); }, bound,
        what("add_gelu_backward"));
  }
  {
    // [256, 256]: bias from the sample, one per column.
    const std::vector<int64_t> s{256, 256};
    Buffer xs(t, s), dys(t, s), bias(t, {256}), y(t, s), dx(t, s),
        db(DType::f32, {256}), v(t, s);
    std::memcpy(xs.data(), x.data(), 2 * kPatterns);
    std::memcpy(dys.data(), dy.data(), 2 * kPatterns);
    fill_inputs(bias, 23, 1.0f);
    y.poison();
    dx.poison();
    v.poison();
    db.poison();
    run_on_gpu(OpId::bias_gelu, {&xs, &bias, &y}, o);
    run_on_gpu(OpId::bias_gelu_backward, {&dys, &xs, &bias, &dx, &db, &v}, o);
    auto pre = [&](int64_t i) { return double(xs.get(i) + bias.get(i % 256)); };
    check_parallel(
        y, [&](int64_t i) { return expect_fwd(form(), pre(i)); }, bound,
        what("bias_gelu"));
    check_parallel(
        v, [&](int64_t i) { return expect_fwd(form(), pre(i)); }, bound,
        what("bias_gelu_backward y"));
    check_parallel(
        dx, [&](int64_t i) { return expect_bwd(form(), pre(i), dys.get(i)); }, bound,
        what("bias_gelu_backward"));
    // NaN and inf pre-activations make some columns' sums NaN/inf; the rest
    // are checked in ops_test's shapes.
    int64_t nan_cols = 0;
    for (int64_t j = 0; j < 256; ++j) {
      bool nan = false;
      for (int64_t r = 0; r < 256; ++r)
        nan = nan ||
              std::isnan(
                  expect_bwd(form(), pre(r * 256 + j), dys.get(r * 256 + j)).value);
      nan_cols += nan;
      EXPECT_EQ(std::isnan(db.get(j)), nan) << what("dbias") << " column " << j;
    }
    EXPECT_GT(nan_cols, 0);
  }
  for (GeluHalf half : {GeluHalf::first, GeluHalf::second}) {
    // x [32768, 2]: a from every pattern at one half, the multiplier from
    // the sample at the other.
    const bool second = half == GeluHalf::second;
    Options og = o;
    og.gelu_half = half;
    Buffer xg(t, {kPatterns, 2}), y(t, {kPatterns, 1}), dx(t, {kPatterns, 2}),
        v(t, {kPatterns, 1});
    for (int64_t i = 0; i < kPatterns; ++i) {
      const int64_t a = 2 * i + (second ? 1 : 0), g = 2 * i + (second ? 0 : 1);
      std::memcpy(static_cast<char*>(xg.data()) + 2 * a,
                  static_cast<const char*>(x.data()) + 2 * i, 2);
      xg.set(g, other.get(i));
    }
    y.poison();
    dx.poison();
    v.poison();
    run_on_gpu(OpId::geglu, {&xg, &y}, og);
    Buffer dyg(t, {kPatterns, 1});
    std::memcpy(dyg.data(), dy.data(), 2 * kPatterns);
    run_on_gpu(OpId::geglu_backward, {&dyg, &xg, &dx, &v}, og);
    const double gbound = bound_ulps(t, ref::kProductRoundingUlps);
    auto expect_y = [&](int64_t i) {
      return expect_fwd(form(), x.get(i), other.get(i));
    };
    const std::string w = what("geglu") + (second ? " second" : " first");
    check_parallel(y, expect_y, gbound, w);
    check_parallel(v, expect_y, gbound, w + " backward y");
    check_parallel(
        dx,
        [&](int64_t k) {
          const int64_t i = k / 2;
          const bool is_a = (k % 2 == 1) == second;
          const double d = dyg.get(i);
          return is_a ? expect_bwd(form(), x.get(i), d * other.get(i))
                      : expect_fwd(form(), x.get(i), d);
        },
        gbound, w + " backward dx");
  }
}

INSTANTIATE_TEST_SUITE_P(Half, CudaEveryPattern,
                         ::testing::Combine(::testing::ValuesIn(kForms),
                                            ::testing::Values(DType::bf16, DType::f16)),
                         [](const auto& info) {
                           return std::string(approx_name(std::get<0>(info.param))) +
                                  "_" + dtype_name(std::get<1>(info.param));
                         });

// 10^8 f32 inputs per form (GELU_CUDA_SWEEP_F32 overrides the count).
int64_t f32_count() {
  const char* v = std::getenv("GELU_CUDA_SWEEP_F32");
  return v ? std::atoll(v) : 100'000'000;
}

// Chunk c of the f32 inputs: a quarter tail, a quarter N(0, 3), half random
// finite bit patterns; the first chunk starts with the special values.
void fill_f32(Buffer& b, uint32_t seed) {
  const float specials[] = {0.0f,
                            -0.0f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::numeric_limits<float>::max(),
                            -std::numeric_limits<float>::max(),
                            std::numeric_limits<float>::denorm_min(),
                            -std::numeric_limits<float>::denorm_min(),
                            std::numeric_limits<float>::min(),
                            -0.7518f,
                            -14.0f,
                            -3.0f};
  // Blocks of 65536 with a generator each: the same values on any number
  // of threads.
  const int64_t blocks = (b.size() + 65535) / 65536;
#pragma omp parallel for schedule(static)
  for (int64_t k = 0; k < blocks; ++k) {
    std::mt19937 rng(seed * 2654435761u + static_cast<uint32_t>(k));
    std::normal_distribution<float> normal(0.0f, 3.0f);
    for (int64_t i = k * 65536; i < std::min(b.size(), (k + 1) * 65536); ++i) {
      const uint32_t pick = rng() % 4;
      float v;
      if (pick == 0) {
        v = -14.0f + 11.0f * static_cast<float>(rng() >> 8) * 0x1p-24f;
      } else if (pick == 1) {
        v = normal(rng);
      } else {
        uint32_t u;
        do u = rng();
        while ((u & 0x7f800000u) == 0x7f800000u);
        std::memcpy(&v, &u, 4);
      }
      b.set(i, v);
    }
  }
  if (seed == 0)
    for (size_t i = 0; i < std::size(specials) && i < size_t(b.size()); ++i)
      b.set(static_cast<int64_t>(i), specials[i]);
}

class CudaF32Sweep : public ::testing::TestWithParam<Approx> {
 protected:
  void SetUp() override { GELU_NEED_GPU(); }
};

TEST_P(CudaF32Sweep, GeluAndBackward) {
  const Approx a = GetParam();
  const int64_t total = f32_count(), chunk = int64_t{1} << 24;
  for (int64_t done = 0, c = 0; done < total; done += chunk, ++c) {
    const int64_t n = std::min(chunk, total - done);
    Buffer x(DType::f32, {n}), dy(DType::f32, {n}), y(DType::f32, {n}),
        dx(DType::f32, {n});
    fill_f32(x, static_cast<uint32_t>(c));
    fill_inputs(dy, 100 + static_cast<uint32_t>(c), 1.0f);
    y.poison();
    dx.poison();
    run_on_gpu(OpId::gelu, {&x, &y}, Options{a, 0});
    run_on_gpu(OpId::gelu_backward, {&dy, &x, &dx}, Options{a, 0});
    const std::string w = std::string("f32 sweep ") + approx_name(a) + " chunk " +
                          std::to_string(c);
    check_parallel(
        y, [&](int64_t i) { return expect_fwd(a, x.get(i)); }, 2.0, w + " gelu");
    check_parallel(
        dx, [&](int64_t i) { return expect_bwd(a, x.get(i), dy.get(i)); }, 2.0,
        w + " gelu_backward");
    if (HasFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Forms, CudaF32Sweep, ::testing::ValuesIn(kForms),
                         [](const auto& info) { return approx_name(info.param); });

}  // namespace
}  // namespace gelu::testing
