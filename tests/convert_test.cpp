// f32 <-> bf16/f16 conversions: round to nearest, ties to even, checked
// against an independent rule (pick the nearer of the two neighbours in
// double, the even one on a tie) and exhaustively on the 16-bit side.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>

#include "ref/convert.hpp"

namespace gelu {
namespace {

// The correctly rounded 16-bit value of f by search: widen every candidate
// near f's neighbours and pick the nearest (ties: even bits). Infinity counts
// as the format's next power of two, `overflow`, as IEEE rounding has it.
template <class Widen>
uint16_t nearest(float f, uint16_t guess, Widen widen, double overflow) {
  auto value = [&](uint16_t c) {
    const double v = widen(c);
    return std::isinf(v) ? std::copysign(overflow, v) : v;
  };
  uint16_t best = guess;
  double best_d = std::fabs(value(guess) - double(f));
  for (int delta = -2; delta <= 2; ++delta) {
    const uint16_t c = static_cast<uint16_t>(guess + delta);
    if (std::isnan(widen(c)) || (c ^ guess) & 0x8000u) continue;
    const double d = std::fabs(value(c) - double(f));
    if (d < best_d || (d == best_d && (c & 1u) == 0 && (best & 1u)))
      best = c, best_d = d;
  }
  return best;
}

TEST(Convert, Bf16RoundTripsEvery16BitValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = bf16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(f))));
      continue;
    }
    EXPECT_EQ(f32_to_bf16(f), h) << h;
  }
}

TEST(Convert, F16RoundTripsEvery16BitValue) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    EXPECT_EQ(f32_to_f16(f), h) << h;
  }
}

TEST(Convert, NearestEvenOnSpreadF32Patterns) {
  for (uint64_t u = 0; u < (uint64_t{1} << 32); u += 65521) {
    const float f = f32_from_bits(static_cast<uint32_t>(u));
    if (std::isnan(f)) continue;
    const uint16_t b = f32_to_bf16(f);
    EXPECT_EQ(b, nearest(f, b, bf16_to_f32, std::ldexp(1.0, 128)))
        << std::hexfloat << f;
    const uint16_t h = f32_to_f16(f);
    EXPECT_EQ(h, nearest(f, h, f16_to_f32, 65536.0)) << std::hexfloat << f;
  }
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00u);  // halfway to 2^16 rounds to inf
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bffu);  // max half
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f808000u)), 0x3f80u);  // tie -> even
  EXPECT_EQ(f32_to_bf16(f32_from_bits(0x3f818000u)), 0x3f82u);  // tie -> even
  EXPECT_EQ(f32_to_f16(5.9604645e-8f), 0x0001u);  // smallest subnormal half
  EXPECT_EQ(f32_to_f16(2.9802322e-8f), 0x0000u);  // half of it: tie -> 0
}

}  // namespace
}  // namespace gelu
