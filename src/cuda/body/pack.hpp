// Elements of each storage dtype as f32, host and device alike: loading
// (exact), storing an f32 result rounded to nearest even, and 16-byte
// vectors of them (4 f32 or 8 bf16/f16) for the kernels' aligned bodies.
//
// A 16-bit result passes the CPU's overflow-boundary rule first (docs/contract.md,
// accuracy contract; src/cpu/driver-inl.h BoundaryToFinite): from the
// boundary (largest finite plus half an ulp) up to 2^-16 above it, the
// largest finite value; further up, inf.
#pragma once

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "gelu/gelu.hpp"
#include "math/host_device.hpp"

#if defined(__CUDACC__)
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

namespace gelu::cuda::body {

using ::gelu::math::bits_of;
using ::gelu::math::float_from_bits;

GELU_HD float boundary_to_finite(float v, float boundary, float largest) {
  const float a = v < 0.0f ? -v : v;
  if (a >= boundary && a < boundary * (1.0f + 0x1p-16f))
    return v < 0.0f ? -largest : largest;
  return v;
}

template <DType D>
struct Elem;

template <>
struct Elem<DType::f32> {
  using T = float;
  GELU_HD static float load(T v) { return v; }
  template <bool kBoundary = true>
  GELU_HD static T store(float v) {
    return v;
  }
};

template <>
struct Elem<DType::bf16> {
  using T = uint16_t;
  static constexpr float kBoundary_ = 0x1.ffp127f, kLargest = 0x1.fep127f;
  GELU_HD static float load(T h) { return float_from_bits(uint32_t(h) << 16); }
  template <bool kBoundary = true>
  GELU_HD static T store(float v) {
    if constexpr (kBoundary) v = boundary_to_finite(v, kBoundary_, kLargest);
#if defined(__CUDA_ARCH__)
    return __bfloat16_as_ushort(__float2bfloat16_rn(v));
#else
    const uint32_t u = bits_of(v);
    if ((u & 0x7fffffffu) > 0x7f800000u) return T((u >> 16) | 0x0040u);  // quiet NaN
    return T((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
#endif
  }
};

template <>
struct Elem<DType::f16> {
  using T = uint16_t;
  static constexpr float kBoundary_ = 65520.0f, kLargest = 65504.0f;
  GELU_HD static float load(T h) {
#if defined(__CUDA_ARCH__)
    return __half2float(__ushort_as_half(h));
#else
    const uint32_t sign = uint32_t(h & 0x8000u) << 16;
    const uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
    if (exp == 0x1f) return float_from_bits(sign | 0x7f800000u | (man << 13));
    if (exp != 0) return float_from_bits(sign | ((exp + 112) << 23) | (man << 13));
    return float_from_bits(sign | bits_of(float(man) * 0x1p-24f));  // exact
#endif
  }
  template <bool kBoundary = true>
  GELU_HD static T store(float v) {
    if constexpr (kBoundary) v = boundary_to_finite(v, kBoundary_, kLargest);
#if defined(__CUDA_ARCH__)
    return __half_as_ushort(__float2half_rn(v));
#else
    const uint32_t u = bits_of(v);
    const T sign = T((u >> 16) & 0x8000u);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return T(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
    if (a >= 0x477ff000u) return T(sign | 0x7c00u);  // rounds to inf
    if (a >= 0x38800000u) {                          // normal in f16
      const uint32_t r = a - (112u << 23);
      return T(sign | ((r + 0xfffu + ((r >> 13) & 1u)) >> 13));
    }
    // Subnormal: |v| + 0.5 rounds |v| to a multiple of 2^-24 (0.5's ulp).
    return T(sign | (bits_of(float_from_bits(a) + 0.5f) - 0x3f000000u));
#endif
  }
};

// Elements per 16-byte vector.
template <DType D>
inline constexpr int kVecOf = int(16 / sizeof(typename Elem<D>::T));

// n (1 or kVecOf<D>) consecutive elements at p as f32: one 16-byte access
// when n is a vector (p 16-byte aligned), else one element.
template <DType D, int kN>
GELU_HD void load_elems(const typename Elem<D>::T* p, float (&out)[kN]) {
  using T = typename Elem<D>::T;
  if constexpr (kN == 1) {
    out[0] = Elem<D>::load(p[0]);
  } else {
    static_assert(kN * sizeof(T) == 16, "a 16-byte vector");
    uint32_t w[4];
#if defined(__CUDA_ARCH__)
    const uint4 q = *reinterpret_cast<const uint4*>(p);
    w[0] = q.x, w[1] = q.y, w[2] = q.z, w[3] = q.w;
#else
    memcpy(w, p, 16);
#endif
    for (int i = 0; i < 4; ++i) {
      if constexpr (sizeof(T) == 4) {
        out[i] = float_from_bits(w[i]);
      } else if constexpr (D == DType::bf16) {  // each half is an f32's top
        out[2 * i] = float_from_bits(w[i] << 16);
        out[2 * i + 1] = float_from_bits(w[i] & 0xffff0000u);
      } else {
        out[2 * i] = Elem<D>::load(T(w[i] & 0xffffu));
        out[2 * i + 1] = Elem<D>::load(T(w[i] >> 16));
      }
    }
  }
}

template <DType D, int kN, bool kBoundary = true>
GELU_HD void store_elems(typename Elem<D>::T* p, const float (&in)[kN]) {
  using T = typename Elem<D>::T;
  using E = Elem<D>;
  if constexpr (kN == 1) {
    p[0] = E::template store<kBoundary>(in[0]);
  } else {
    // The vector's four 32-bit words, built in registers (a local array
    // would be copied out word by word).
    float v[kN];
    bool over = false;  // the boundary rule: one test a vector, rarely more
    for (int i = 0; i < kN; ++i) {
      v[i] = in[i];
      if constexpr (kBoundary && sizeof(T) == 2)
        over = over || fabsf(v[i]) >= E::kBoundary_;
    }
    if constexpr (kBoundary && sizeof(T) == 2)
      if (over)
        for (int i = 0; i < kN; ++i)
          v[i] = boundary_to_finite(v[i], E::kBoundary_, E::kLargest);
    uint32_t w[4];
    for (int i = 0; i < 4; ++i) {
      if constexpr (sizeof(T) == 4) {
        w[i] = bits_of(v[i]);
      } else {
        w[i] = uint32_t(E::template store<false>(v[2 * i])) |
               (uint32_t(E::template store<false>(v[2 * i + 1])) << 16);
      }
    }
#if defined(__CUDA_ARCH__)
    // One 16-byte store (the compiler splits a uint4 assignment here into
    // four, not seeing the alignment plan_eltwise guarantees).
    asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"(w[0]),
                 "r"(w[1]), "r"(w[2]), "r"(w[3])
                 : "memory");
#else
    memcpy(p, w, 16);
#endif
  }
}

}  // namespace gelu::cuda::body
