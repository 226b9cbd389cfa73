// The CUDA kernels' storage code, compiled here by the host compiler (it is
// __host__ __device__): its loads and its rounding of double results
// straight to bf16/f16. The f32 math has its own test (gelu_f32_test.cpp);
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

}  // namespace
}  // namespace gelu::testing
