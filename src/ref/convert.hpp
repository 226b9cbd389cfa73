// Scalar conversions between f32 and the 16-bit storage formats, rounding to
// nearest-even on the way out (what PyTorch's .to(bfloat16/float16) does).
// Highway 1.0's scalar BF16FromF32 truncates, so we keep our own; the SIMD
// kernels implement the same rounding in vectors and are tested against these.
#pragma once

#include <cstdint>
#include <cstring>

namespace gelu {

inline uint32_t f32_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float f32_from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline float bf16_to_f32(uint16_t h) { return f32_from_bits(uint32_t(h) << 16); }

inline uint16_t f32_to_bf16(float f) {
  const uint32_t u = f32_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u)  // NaN: keep sign, force quiet.
    return uint16_t((u >> 16) | 0x0040u);
  // Round to nearest, ties to even: add 0x7fff plus the lowest kept bit.
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

inline float f16_to_f32(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0x1f)  // inf / NaN
    return f32_from_bits(sign | 0x7f800000u | (man << 13));
  if (exp != 0) return f32_from_bits(sign | ((exp + 112) << 23) | (man << 13));
  // Zero or subnormal: man * 2^-24, exact in f32.
  const float mag = float(man) * (1.0f / 16777216.0f);
  return f32_from_bits(sign | f32_bits(mag));
}

inline uint16_t f32_to_f16(float f) {
  const uint32_t u = f32_bits(f);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (a >= 0x38800000u) {  // normal f16: rebias and round the 13 dropped bits
    const uint32_t r = a - 0x38000000u;  // exponent 127 -> 15
    return uint16_t(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
  }
  // Subnormal f16 (or zero): round |f| / 2^-24 to an integer, ties to even.
  // Adding 0.5f * 2^-24 * 2^23 aligns the binary point (magic-number trick).
  const float mag = f32_from_bits(a) + 0.5f;  // 0.5 = 2^-1: ulp 2^-24 there
  return uint16_t(sign | (f32_bits(mag) - f32_bits(0.5f)));
}

}  // namespace gelu
