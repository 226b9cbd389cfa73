// The kernels' vector storage conversions, bit for bit against the scalar
// ones of src/ref/convert.hpp, on every target: all 65536 bf16 and f16
// patterns in, and f32 values around every rounding boundary out.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "kernels_test_support.hpp"
#include "ref/convert.hpp"

namespace gelu::testing {
namespace {

class KernelsConvert : public KernelTarget {};

TEST_P(KernelsConvert, SixteenBitToF32AllPatterns) {
  std::vector<uint16_t> in(65536);
  for (uint32_t i = 0; i < 65536; ++i) in[i] = static_cast<uint16_t>(i);
  std::vector<float> out(65536 + 1);
  for (DType t : {DType::bf16, DType::f16}) {
    out.back() = 1234.5f;  // guard: the last element is never written
    cpu::to_f32(t, 65536, in.data(), out.data());
    for (uint32_t i = 0; i < 65536; ++i) {
      const float want = t == DType::bf16 ? bf16_to_f32(in[i]) : f16_to_f32(in[i]);
      ASSERT_EQ(f32_bits(out[i]), f32_bits(want))
          << dtype_name(t) << " pattern 0x" << std::hex << i;
    }
    EXPECT_EQ(out.back(), 1234.5f);
  }
}

// Every upper half with low halves at and around the bf16 (bit 16) and f16
// (bit 13) rounding points, then random patterns. Odd total: a tail.
std::vector<float> rounding_cases() {
  const uint32_t lows[] = {0x0000, 0x0001, 0x0fff, 0x1000, 0x1001, 0x1fff, 0x2000,
                           0x2001, 0x3000, 0x5fff, 0x6000, 0x7fff, 0x8000, 0x8001,
                           0x9000, 0xa000, 0xbfff, 0xc000, 0xe000, 0xf000, 0xffff};
  std::vector<float> v;
  for (uint32_t hi = 0; hi < 65536; ++hi)
    for (uint32_t lo : lows) v.push_back(f32_from_bits(hi << 16 | lo));
  std::mt19937 rng(7);
  for (int i = 0; i < (1 << 20) + 3; ++i) v.push_back(f32_from_bits(rng()));
  return v;
}

TEST_P(KernelsConvert, F32ToSixteenBitRoundsToNearestEven) {
  static const std::vector<float> in = rounding_cases();
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> out(in.size() + 1);
  for (DType t : {DType::bf16, DType::f16}) {
    out.back() = 0xabcd;
    cpu::from_f32(t, n, in.data(), out.data());
    for (int64_t i = 0; i < n; ++i) {
      const uint16_t want = t == DType::bf16 ? f32_to_bf16(in[i]) : f32_to_f16(in[i]);
      ASSERT_EQ(out[i], want) << dtype_name(t) << " from f32 bits 0x" << std::hex
                              << f32_bits(in[i]);
    }
    EXPECT_EQ(out.back(), 0xabcd);
  }
}

// The rounding of the kernels' bf16 results (the paired store, with the
// AVX512_BF16 instruction where the CPU has it and the test allows it), on
// the same cases less NaNs: subnormals among normals exercise its fallback.
TEST_P(KernelsConvert, KernelResultsRoundToNearestEvenBf16) {
  static const std::vector<float> in = [] {
    std::vector<float> v;
    for (float f : rounding_cases())
      if (!std::isnan(f)) v.push_back(f);
    return v;
  }();
  const int64_t n = static_cast<int64_t>(in.size());
  std::vector<uint16_t> out(in.size() + 1, 0xabcd);
  cpu::round_results_to_bf16(n, in.data(), out.data());
  for (int64_t i = 0; i < n; ++i)
    ASSERT_EQ(out[i], f32_to_bf16(in[i]))
        << "from f32 bits 0x" << std::hex << f32_bits(in[i]);
  EXPECT_EQ(out.back(), 0xabcd);
}

TEST_P(KernelsConvert, EveryTailLength) {
  for (int64_t n = 0; n <= 49; ++n) {
    std::vector<uint16_t> in(n + 8), back(n + 8, 0x5555);
    std::vector<float> mid(n + 8, -7.0f);
    for (int64_t i = 0; i < n + 8; ++i) in[i] = static_cast<uint16_t>(0x3c00 + 37 * i);
    cpu::to_f32(DType::f16, n, in.data(), mid.data());
    cpu::from_f32(DType::f16, n, mid.data(), back.data());
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(back[i], in[i]) << "n " << n;
    for (int64_t i = n; i < n + 8; ++i) {
      ASSERT_EQ(mid[i], -7.0f) << "n " << n << " wrote past the end";
      ASSERT_EQ(back[i], 0x5555) << "n " << n << " wrote past the end";
    }
  }
}

GELU_INSTANTIATE_PER_TARGET(KernelsConvert);

}  // namespace
}  // namespace gelu::testing
