// The CUDA kernels' scalar code, compiled here by the host compiler (it is
// __host__ __device__): its loads, its rounding of double results straight
// to bf16/f16, and its double GELU math against the reference. On the GPU
// only the math library under it changes (CUDA's erfc and exp for glibc's);
// tests/cuda checks the kernels themselves where a GPU is present.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "cuda/storage.hpp"
#include "ref/convert.hpp"
#include "test_support.hpp"

namespace gelu::testing {
namespace {

namespace cs = cuda::storage;
namespace cm = cuda::math;

TEST(CudaScalar, LoadsEveryPatternExactly) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const auto u = static_cast<uint16_t>(h);
    EXPECT_EQ(f32_bits(cs::Bf16::load(u)), f32_bits(bf16_to_f32(u))) << h;
    EXPECT_EQ(f32_bits(cs::F16::load(u)), f32_bits(f16_to_f32(u))) << h;
  }
}

// Exact rounding of a double, by the reference's float rounding where the
// double is a float and by bracketing otherwise.
// `dropped`: the f32 bits a normal value loses in S; every other sample is
// made a tie there.
template <class S>
void check_rounding(uint16_t (*ref_round)(float), float (*ref_load)(uint16_t),
                    uint32_t dropped) {
  std::mt19937_64 rng(7);
  for (int k = 0; k < 2'000'000; ++k) {
    uint32_t u = static_cast<uint32_t>(rng());
    if (k % 2) u = (u & ~dropped) | ((dropped + 1) >> 1);
    float f;
    std::memcpy(&f, &u, 4);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(S::load(cs::round_to<S>(f, cs::kElementBand))));
      continue;
    }
    const double boundary = S::kBoundary;
    const uint16_t got = cs::round_to<S>(f, cs::kElementBand);
    if (std::fabs(f) >= boundary && std::fabs(f) < boundary * cs::kElementBand) {
      EXPECT_EQ(S::load(got), std::copysign(float(S::kLargest), f)) << f;
      continue;
    }
    ASSERT_EQ(got, ref_round(f)) << "float " << f;
    // A double just off f (off the tie, for ties) rounds to a value at
    // least as near as f's rounding; through f32 it would land on the tie
    // and round to even, the farther side half the time.
    const double d = static_cast<double>(f) * (1 + 0x1p-40);
    const uint16_t gd = cs::round_to<S>(d, cs::kElementBand);
    const double err = std::fabs(double(S::load(gd)) - d);
    const double alt = std::fabs(double(ref_load(ref_round(f))) - d);
    if (std::isfinite(S::load(gd))) {
      EXPECT_LE(err, alt) << "double " << d;
    }
  }
  // Exactly at the boundary, and past the band: inf.
  EXPECT_EQ(S::load(cs::round_to<S>(S::kBoundary * (1 + 0x1p-15), cs::kElementBand)),
            INFINITY);
  EXPECT_EQ(S::load(cs::round_to<S>(-S::kBoundary, cs::kSumBand)), -float(S::kLargest));
  EXPECT_EQ(S::load(cs::round_to<S>(S::kBoundary * (1 + 0x1p-19), cs::kSumBand)),
            INFINITY);
  EXPECT_EQ(cs::round_to<S>(-0.0, 1.0), 0x8000);
}

TEST(CudaScalar, RoundsBf16Once) {
  check_rounding<cs::Bf16>(f32_to_bf16, bf16_to_f32, 0xffffu);
}
TEST(CudaScalar, RoundsF16Once) {
  check_rounding<cs::F16>(f32_to_f16, f16_to_f32, 0x1fffu);
}

template <Approx F>
void check_math(Approx form) {
  // Every bf16 and f16 value, and f32 values across the range.
  std::vector<double> xs;
  for (uint32_t h = 0; h < 65536; ++h) {
    xs.push_back(bf16_to_f32(static_cast<uint16_t>(h)));
    xs.push_back(f16_to_f32(static_cast<uint16_t>(h)));
  }
  std::mt19937 rng(3);
  for (int k = 0; k < 1'000'000; ++k) {
    const uint32_t u = rng();
    float f;
    std::memcpy(&f, &u, 4);
    xs.push_back(k % 2 ? f : -14.0 + 11.0 * (u >> 8) * 0x1p-24);
  }
  double worst_fwd = 0, worst_bwd = 0;
  for (double x : xs) {
    const Expect ef = expect_fwd(form, x), eb = expect_bwd(form, x, 1.0);
    const double f = error_ulps(DType::f32, float(cm::value<F>(x)), ef);
    const double b = error_ulps(DType::f32, float(cm::grad<F>(x)), eb);
    worst_fwd = std::fmax(worst_fwd, f);
    worst_bwd = std::fmax(worst_bwd, b);
    ASSERT_LE(f, 0.5 + 1e-6) << approx_name(form) << " gelu(" << x << ")";
    ASSERT_LE(b, 0.5 + 1e-6) << approx_name(form) << " gelu'(" << x << ")";
  }
  std::printf(
      "[ figures  ] %s: worst f32 error of the double math, rounded once: "
      "gelu %.3f ulp, gelu' %.3f ulp\n",
      approx_name(form), worst_fwd, worst_bwd);
}

TEST(CudaScalar, MathRoundsCorrectlyErf) { check_math<Approx::none>(Approx::none); }
TEST(CudaScalar, MathRoundsCorrectlyTanh) { check_math<Approx::tanh>(Approx::tanh); }
TEST(CudaScalar, MathRoundsCorrectlyQuick) { check_math<Approx::quick>(Approx::quick); }

}  // namespace
}  // namespace gelu::testing
