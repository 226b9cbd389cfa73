// The storage formats of the CUDA kernels, host and device alike: loading
// an f32, bf16 or f16 element as float (exact), and storing a double result
// rounded once, to nearest even, straight to the format (never through f32,
// which would round twice). The CPU tests compile this header with the host
// compiler and check it against src/ref/convert.hpp.
//
// The 16-bit formats follow the CPU's overflow-boundary rule (docs/contract.md,
// accuracy contract): a result from the boundary (largest finite value plus
// half an ulp) up to a band above it is stored as the largest finite value,
// one further up as inf.
#pragma once

#include <stdint.h>
#include <string.h>

#include <math.h>

#include "gelu/gelu.hpp"
#include "math/host_device.hpp"

namespace gelu::cuda::storage {

using ::gelu::math::bits_of;
using ::gelu::math::float_from_bits;

// A 16-bit format: mantissa bits, smallest normal exponent, its overflow
// boundary and largest finite value, and its quiet-NaN encoding of a float
// NaN (sign and payload kept, quiet bit set, as src/ref/convert.hpp).
struct Bf16 {
  using T = uint16_t;
  static constexpr int kMantissa = 7;
  static constexpr int kMinExp = -126;
  static constexpr double kBoundary = 0x1.ffp127;
  static constexpr double kLargest = 0x1.fep127;
  GELU_HD static float load(T h) { return float_from_bits(uint32_t(h) << 16); }
  GELU_HD static T nan_of(float f) { return T((bits_of(f) >> 16) | 0x0040u); }
};
struct F16 {
  using T = uint16_t;
  static constexpr int kMantissa = 10;
  static constexpr int kMinExp = -14;
  static constexpr double kBoundary = 65520.0;
  static constexpr double kLargest = 65504.0;
  GELU_HD static float load(T h) {
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu;
    const uint32_t man = h & 0x3ffu;
    if (exp == 0x1f) return float_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return float_from_bits(sign | ((exp + 112) << 23) | (man << 13));
    const float mag = float(man) * (1.0f / 16777216.0f);  // man * 2^-24, exact
    return float_from_bits(sign | bits_of(mag));
  }
  GELU_HD static T nan_of(float f) {
    const uint32_t u = bits_of(f);
    return T(((u >> 16) & 0x8000u) | 0x7e00u | ((u >> 13) & 0x3ffu));
  }
};

// The relative band above the boundary where a result is still stored as
// the largest finite value: the CPU's f32 error for an element (2^-16) and
// for a dbias sum (2^-20), so both backends store the same there.
inline constexpr double kElementBand = 1.0 + 0x1p-16;
inline constexpr double kSumBand = 1.0 + 0x1p-20;

// v rounded to nearest even in format S: a multiple n of the spacing
// q = 2^(e - mantissa) at v's binade e (or the subnormal spacing), encoded
// as ((e - min_exp) << mantissa) + n, which also carries into the next
// binade and into inf. Within `band` above the boundary: the largest finite
// value.
template <class S>
GELU_HD typename S::T round_to(double v, double band) {
  using T = typename S::T;
  if (v != v) return S::nan_of(float(v));  // NaN
  const T sign = signbit(v) ? T(0x8000u) : T(0);
  double a = fabs(v);
  constexpr T kInf = T(((1 << (15 - S::kMantissa)) - 1) << S::kMantissa);
  if (a >= S::kBoundary) {
    if (a >= S::kBoundary * band) return T(sign | kInf);
    a = S::kLargest;
  }
  if (a == 0.0) return sign;
  int e = ilogb(a);
  if (e < S::kMinExp) e = S::kMinExp;
  const double n = rint(ldexp(a, S::kMantissa - e));  // exact scaling
  return T(sign | ((T(e - S::kMinExp) << S::kMantissa) + T(n)));
}

// Element access by dtype: load(p, i) as float; store(p, i, v) rounds the
// double v once.
template <DType D>
struct Storage;
template <>
struct Storage<DType::f32> {
  using T = float;
  GELU_HD static float load(const T* p, int64_t i) { return p[i]; }
  GELU_HD static void store(T* p, int64_t i, double v, double = 0) { p[i] = float(v); }
};
template <>
struct Storage<DType::bf16> {
  using T = uint16_t;
  GELU_HD static float load(const T* p, int64_t i) { return Bf16::load(p[i]); }
  GELU_HD static void store(T* p, int64_t i, double v, double band = kElementBand) {
    p[i] = round_to<Bf16>(v, band);
  }
};
template <>
struct Storage<DType::f16> {
  using T = uint16_t;
  GELU_HD static float load(const T* p, int64_t i) { return F16::load(p[i]); }
  GELU_HD static void store(T* p, int64_t i, double v, double band = kElementBand) {
    p[i] = round_to<F16>(v, band);
  }
};

}  // namespace gelu::cuda::storage
