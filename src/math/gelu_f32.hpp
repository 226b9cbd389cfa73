// The f32 GELU method of the CPU kernels (src/cpu/gelu_math-inl.h), one
// scalar at a time, for the GPU and the host alike: the CUDA kernels
// compute with it, and the CPU tests run the same code on the host.
//
//   value<F>(x), grad<F>(x), value_and_grad<F>(x, v, g)
//
// F: the form (erf `none`, `tanh`, `quick`). Options (Core<...>): kHalf
// selects the cheaper core of results that are rounded to bf16/f16 (the
// CPU's ForBf16F16: 2^-17 relative), kN the core's interval count (16, as
// the CPU's AVX-512, SSE4 and scalar targets; 8, as its AVX2 target).
//
// Method (t = |x|, s the form's gate, gelu(x) = x s(x)):
//  * Core, t < 3.875: interval k = round(t/width), r = t - k width; with 8
//    intervals, t < 4: k = t/width truncated, r = t - centre[k] (both
//    exact). V(t) = t s(-t) and G(t) = s(-t) - t s'(t) as
//    polynomials in r from the coefficient tables of
//    src/cpu/gelu_coefficients*.h (tools/fit/fit_gelu.py, the only place
//    they live); gelu = max(x, 0) - V, gelu' = x < 0 ? G : 1 - G.
//  * Tail and inf/NaN: e^-A with A as a double-float, times the erf form's
//    Mills ratio or the sigmoid's correction, scaled by 2^(n+64) and 2^-64
//    so that a subnormal result rounds once.
// Every step is an explicit fma, mul, add or sub rounded to f32 (device:
// the __f*_rn intrinsics, which nvcc never contracts; host: fmaf and plain
// operators, compiled with -ffp-contract=off), in the CPU's order. So on
// the host this gives the bits of the CPU's FMA targets with the same core
// (AVX-512: 16 intervals; AVX2: 8), except that 1/t^2 in the erf tail is
// the correctly rounded quotient here and an approximate reciprocal with a
// Newton step there (tests/gelu_f32_test.cpp measures both).
// Max error: as the CPU's (gelu_math-inl.h): value and grad <= 1.8 ULP in
// f32, 2^-17 relative with kHalf.
#pragma once

#include <math.h>
#include <stdint.h>

#include "cpu/gelu_coefficients.h"
#include "cpu/gelu_coefficients_n8.h"
#include "cpu/gelu_coefficients_w32.h"
#include "gelu/gelu.hpp"
#include "math/host_device.hpp"

namespace gelu::math {

namespace cf = ::gelu::cpu::gelu_coefficients;

// Single-rounding f32 steps.
GELU_HD float fma_rn(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return ::fmaf(a, b, c);
#endif
}
GELU_HD float mul_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fmul_rn(a, b);
#else
  return a * b;
#endif
}
GELU_HD float add_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fadd_rn(a, b);
#else
  return a + b;
#endif
}
GELU_HD float sub_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fsub_rn(a, b);
#else
  return a - b;
#endif
}
GELU_HD float div_rn(float a, float b) {
#if defined(__CUDA_ARCH__)
  return __fdiv_rn(a, b);
#else
  return a / b;
#endif
}

// ---------------------------------------------------------------------------
// The coefficient tables: the CPU's constexpr arrays on the host, device
// copies of them (made by the compiler from the same arrays) on the GPU,
// read through the read-only cache: a row of 16 intervals is 64 bytes, so
// a warp's lookups of one coefficient are one cache line.
template <int R, int C>
struct Table {
  float c[R][C];
};
template <int R, int C>
constexpr Table<R, C> table_of(const float (&a)[R][C]) {
  Table<R, C> t{};
  for (int i = 0; i < R; ++i)
    for (int j = 0; j < C; ++j) t.c[i][j] = a[i][j];
  return t;
}

// A form's tables in device memory, where nvcc compiles: one copy a CUDA
// unit (internal linkage: no relocatable device code).
#if defined(__CUDACC__)
#define GELU_DEVICE_TABLES(NAME)                                                      \
  namespace device_tables {                                                           \
  static __device__ const Table<8, 16> k##NAME##Value = table_of(cf::k##NAME##Value); \
  static __device__ const Table<8, 16> k##NAME##Grad = table_of(cf::k##NAME##Grad);   \
  static __device__ const Table<5, 16> k##NAME##ValueHalf = table_of(                 \
      cf::k##NAME##ValueBf16F16);                                                     \
  static __device__ const Table<5, 16> k##NAME##GradHalf = table_of(                  \
      cf::k##NAME##GradBf16F16);                                                      \
  }
#else
#define GELU_DEVICE_TABLES(NAME)
#endif
#if defined(__CUDA_ARCH__)
#define GELU_TABLE(host, dev) (&device_tables::dev.c[0][0])
#else
#define GELU_TABLE(host, dev) (&cf::host[0][0])
#endif

// p as the compiler cannot see through: on the GPU, loads at p + constant
// then use one address register and immediate offsets (otherwise the
// compiler folds the interval into each row's offset and builds a 64-bit
// address per row).
GELU_HD const float* opaque(const float* p) {
#if defined(__CUDA_ARCH__)
  asm("mov.b64 %0, %0;" : "+l"(p));
#endif
  return p;
}

GELU_HD float lookup(const float* p, int i) {
#if defined(__CUDA_ARCH__)
  return __ldg(p + i);
#else
  return p[i];
#endif
}

// The core of form F: its tables (value, grad, rows of kN), degree, c0 as
// hi + lo (kLo), and for 8 intervals the expansion points.
template <Approx F, bool kHalf, int kN>
struct Core;

#define GELU_CORE16(FORM, NAME)                                     \
  GELU_DEVICE_TABLES(NAME)                                          \
  template <>                                                       \
  struct Core<Approx::FORM, false, 16> {                            \
    static constexpr int kDeg = 6;                                  \
    static constexpr bool kLo = true;                               \
    GELU_HD static const float* v() {                               \
      return GELU_TABLE(k##NAME##Value, k##NAME##Value);            \
    }                                                               \
    GELU_HD static const float* g() {                               \
      return GELU_TABLE(k##NAME##Grad, k##NAME##Grad);              \
    }                                                               \
    GELU_HD static const float* centre() { return nullptr; }        \
  };                                                                \
  template <>                                                       \
  struct Core<Approx::FORM, true, 16> {                             \
    static constexpr int kDeg = 4;                                  \
    static constexpr bool kLo = false;                              \
    GELU_HD static const float* v() {                               \
      return GELU_TABLE(k##NAME##ValueBf16F16, k##NAME##ValueHalf); \
    }                                                               \
    GELU_HD static const float* g() {                               \
      return GELU_TABLE(k##NAME##GradBf16F16, k##NAME##GradHalf);   \
    }                                                               \
    GELU_HD static const float* centre() { return nullptr; }        \
  };
GELU_CORE16(none, Erf)
GELU_CORE16(tanh, Tanh)
GELU_CORE16(quick, Quick)
#undef GELU_CORE16
#undef GELU_DEVICE_TABLES
#undef GELU_TABLE

#if !defined(__CUDA_ARCH__)
// The narrow core (host only: the CPU's AVX2 target, for the tests).
#define GELU_CORE8(FORM, NAME)                                             \
  template <>                                                              \
  struct Core<Approx::FORM, false, 8> {                                    \
    static constexpr int kDeg = 7;                                         \
    static constexpr bool kLo = false; /* c0 exact at the centre */        \
    static const float* v() { return &cf::k##NAME##ValueN8[0][0]; }        \
    static const float* g() { return &cf::k##NAME##GradN8[0][0]; }         \
    static const float* centre() { return cf::k##NAME##CentreN8; }         \
  };                                                                       \
  template <>                                                              \
  struct Core<Approx::FORM, true, 8> {                                     \
    static constexpr int kDeg = 5;                                         \
    static constexpr bool kLo = false;                                     \
    static const float* v() { return &cf::k##NAME##ValueN8Bf16F16[0][0]; } \
    static const float* g() { return &cf::k##NAME##GradN8Bf16F16[0][0]; }  \
    static const float* centre() { return cf::k##NAME##CentreN8; }         \
  };
GELU_CORE8(none, Erf)
GELU_CORE8(tanh, Tanh)
GELU_CORE8(quick, Quick)
#undef GELU_CORE8

// The wide core (host only: the CPU's AVX-512 target, f32 results), of the
// form's width.
#define GELU_CORE32(FORM, NAME)                                      \
  template <>                                                        \
  struct Core<Approx::FORM, false, 32> {                             \
    static constexpr int kDeg = 6;                                   \
    static constexpr bool kLo = true;                                \
    static constexpr float kWidth = cf::k##NAME##WidthW32[0];        \
    static constexpr float kInvWidth = cf::k##NAME##WidthW32[1];     \
    static constexpr float kEnd = cf::k##NAME##WidthW32[2];          \
    static const float* v() { return &cf::k##NAME##ValueW32[0][0]; } \
    static const float* g() { return &cf::k##NAME##GradW32[0][0]; }  \
    static const float* centre() { return nullptr; }                 \
  };
GELU_CORE32(none, Erf)
GELU_CORE32(tanh, Tanh)
GELU_CORE32(quick, Quick)
#undef GELU_CORE32
#endif

// ---------------------------------------------------------------------------
// Scalar constants (constexpr scalars are usable in device code).
inline constexpr float kLn2Hi = cf::kLn2[0], kLn2Lo = cf::kLn2[1];
inline constexpr float kLnSqrt2PiHi = cf::kLnSqrt2Pi[0],
                       kLnSqrt2PiLo = cf::kLnSqrt2Pi[1];
inline constexpr float kTanhA1Hi = cf::kTanhA1[0], kTanhA1Lo = cf::kTanhA1[1];
inline constexpr float kTanhA3Hi = cf::kTanhA3[0], kTanhA3Lo = cf::kTanhA3[1];
inline constexpr float kQuickAHi = cf::kQuickA[0], kQuickALo = cf::kQuickA[1];
inline constexpr float kLog2e = 1.44269504088896341f;
inline constexpr float kTwoPow23 = 8388608.0f;
inline constexpr float kRoundMagic = 12582912.0f;  // 1.5 * 2^23
inline constexpr float kTwoPowM64 = 5.42101086e-20f;

// The erf tail's fit, from either core's tail start.
template <int kN>
GELU_HD float erf_tail_coefficient(int j) {
  constexpr float k16[6] = {cf::kErfTail[0], cf::kErfTail[1], cf::kErfTail[2],
                            cf::kErfTail[3], cf::kErfTail[4], cf::kErfTail[5]};
  constexpr float k8[6] = {cf::kErfTailN8[0], cf::kErfTailN8[1], cf::kErfTailN8[2],
                           cf::kErfTailN8[3], cf::kErfTailN8[4], cf::kErfTailN8[5]};
  return kN == 8 ? k8[j] : k16[j];
}

// Above these t the form's gelu(-t), gelu'(-t) underflow to zero and
// gelu(t) = t, gelu'(t) = 1 in f32 (as the CPU's).
template <Approx F>
inline constexpr float kTmax = F == Approx::none    ? 14.75f
                               : F == Approx::tanh  ? 11.0f
                               : F == Approx::quick ? 68.0f
                                                    : -1.0f;  // no such form

// ---------------------------------------------------------------------------
// The steps.

// a * b - p exactly, p = fl(a * b).
GELU_HD float prod_err(float a, float b, float p) { return fma_rn(a, b, -p); }

// a + b = s + err exactly.
GELU_HD float two_sum_err(float a, float b, float s) {
  const float bv = sub_rn(s, a);
  return add_rn(sub_rn(a, sub_rn(s, bv)), sub_rn(b, bv));
}

// e^r - 1 for |r| <= ln2/2, degree 6 or 7, Horner.
template <int kDeg>
GELU_HD float expm1_poly(float r) {
  // Local copies: device code reads constexpr scalars, not host arrays.
  constexpr float c7[6] = {cf::kExpPoly7[0], cf::kExpPoly7[1], cf::kExpPoly7[2],
                           cf::kExpPoly7[3], cf::kExpPoly7[4], cf::kExpPoly7[5]};
  constexpr float c6[5] = {cf::kExpPoly6[0], cf::kExpPoly6[1], cf::kExpPoly6[2],
                           cf::kExpPoly6[3], cf::kExpPoly6[4]};
  float p;
  if constexpr (kDeg == 7) {
    p = fma_rn(c7[5], r, c7[4]);
    p = fma_rn(p, r, c7[3]);
    p = fma_rn(p, r, c7[2]);
    p = fma_rn(p, r, c7[1]);
    p = fma_rn(p, r, c7[0]);
  } else {
    p = fma_rn(c6[4], r, c6[3]);
    p = fma_rn(p, r, c6[2]);
    p = fma_rn(p, r, c6[1]);
    p = fma_rn(p, r, c6[0]);
  }
  return fma_rn(mul_rn(r, r), p, r);
}

// 2^(n + 64) from km = 1.5 * 2^23 + n.
GELU_HD float scale_from_magic(float km) {
  const uint32_t bias = uint32_t(127 + 64) - 0x4B400000u;
  return float_from_bits((bits_of(km) + bias) << 23);
}

// The core's interval width and its reciprocal (C::kWidth: the wide core's,
// of its form).
template <class C, int kN>
GELU_HD constexpr float core_width(bool inverse) {
  if constexpr (kN == 32) {
    return inverse ? C::kInvWidth : C::kWidth;
  } else {
    return inverse ? kN / 4.0f : 4.0f / kN;
  }
}

// Core: V(t), G(t).
// 16 and 32 intervals: k = t / width rounded, r = t - k width; 8: k = t /
// width truncated, r = t - centre[k] (both exact; t < kTailStart<kN>).
template <class C, int kN>
GELU_HD void core(float t, float& v, float& g) {
  constexpr float kInvWidth = core_width<C, kN>(true),
                  kWidth = core_width<C, kN>(false);
  float r;
  int k;
  if constexpr (kN == 8) {
    k = int(mul_rn(t, kInvWidth)) & (kN - 1);
    r = sub_rn(t, C::centre()[k]);
  } else {
    const float km = fma_rn(t, kInvWidth, kTwoPow23);
    r = fma_rn(-sub_rn(km, kTwoPow23), kWidth, t);
    k = int(bits_of(km) & uint32_t(kN - 1));
  }
  // Row j of interval k at tv[j * kN]: one address, then constant offsets.
  const float* tv = opaque(C::v() + k);
  const float* tg = opaque(C::g() + k);
  constexpr int kC1 = C::kLo ? 2 : 1;  // row of c1; c_j is row j + kC1 - 1
  constexpr int kDeg = C::kDeg;
  float pv = fma_rn(lookup(tv, (kDeg + kC1 - 1) * kN), r,
                    lookup(tv, (kDeg + kC1 - 2) * kN));
  float pg = fma_rn(lookup(tg, (kDeg + kC1 - 1) * kN), r,
                    lookup(tg, (kDeg + kC1 - 2) * kN));
  GELU_UNROLL
  for (int j = kDeg - 2; j >= 1; --j) {
    pv = fma_rn(pv, r, lookup(tv, (j + kC1 - 1) * kN));
    pg = fma_rn(pg, r, lookup(tg, (j + kC1 - 1) * kN));
  }
  if constexpr (C::kLo) {
    v = add_rn(lookup(tv, 0), fma_rn(pv, r, lookup(tv, kN)));
    g = add_rn(lookup(tg, 0), fma_rn(pg, r, lookup(tg, kN)));
  } else {
    v = fma_rn(pv, r, lookup(tv, 0));
    g = fma_rn(pg, r, lookup(tg, 0));
  }
}

// Erf tail: vs = V(t) 2^64, gs = -G(t) 2^64.
template <int kN>
GELU_HD void erf_tail(float t, float& vs, float& gs) {
  const float h = mul_rn(t, t);
  const float hl = prod_err(t, t, h);
  const float ah = fma_rn(h, 0.5f, kLnSqrt2PiHi);
  const float km = fma_rn(ah, -kLog2e, kRoundMagic);
  const float kf = sub_rn(km, kRoundMagic);
  float r = fma_rn(-kf, kLn2Hi, mul_rn(h, -0.5f));
  r = sub_rn(r, kLnSqrt2PiHi);
  const float lo = fma_rn(hl, 0.5f, kLnSqrt2PiLo);
  r = sub_rn(r, fma_rn(kf, kLn2Lo, lo));
  const float q = expm1_poly<6>(r);
  const float scale = scale_from_magic(km);
  // w = 1/t^2: the quotient, then the CPU's Newton step.
  const float w0 = div_rn(1.0f, h);
  const float w = fma_rn(w0, fma_rn(-h, w0, 1.0f), w0);
  float pw = fma_rn(erf_tail_coefficient<kN>(5), w, erf_tail_coefficient<kN>(4));
  pw = fma_rn(pw, w, erf_tail_coefficient<kN>(3));
  pw = fma_rn(pw, w, erf_tail_coefficient<kN>(2));
  pw = fma_rn(pw, w, erf_tail_coefficient<kN>(1));
  pw = fma_rn(pw, w, erf_tail_coefficient<kN>(0));
  const float a = mul_rn(w, pw);
  const float y = add_rn(fma_rn(a, q, a), q);
  vs = fma_rn(y, scale, scale);
  const float b = fma_rn(-w, a, -w);
  const float y2 = add_rn(fma_rn(b, q, b), q);
  gs = mul_rn(fma_rn(t, y2, t), scale);
}

// tanh and quick: z = zh + zl, V = t sigmoid(-z), -G = sigmoid(-z) K.
GELU_HD void sigmoid_tail(float t, float zh, float zl, float kh, float kl, float tz1,
                          float& vs, float& gs) {
  const float km = fma_rn(zh, -kLog2e, kRoundMagic);
  const float kf = sub_rn(km, kRoundMagic);
  // e^-z = 2^n e^r, r = -z - n ln2 (n = kf; kf ln2_hi + zh is exact).
  float r = fma_rn(-kf, kLn2Hi, -zh);
  r = sub_rn(r, fma_rn(kf, kLn2Lo, zl));
  const float q = expm1_poly<7>(r);
  const float scale = scale_from_magic(km);
  const float sc = scale > 16384.0f ? scale : 16384.0f;
  const float e = mul_rn(fma_rn(q, sc, sc), kTwoPowM64);
  const float m = fma_rn(-e, e, e);
  const float y = fma_rn(-m, q, sub_rn(q, m));
  vs = mul_rn(fma_rn(t, y, t), scale);
  const float kl2 = fma_rn(-tz1, m, kl);
  const float kl3 = fma_rn(kl2, y, kl2);
  gs = mul_rn(add_rn(kh, fma_rn(kh, y, kl3)), scale);
}

GELU_HD void tanh_tail(float t, float& vs, float& gs) {
  const float h = mul_rn(t, t);
  const float hl = prod_err(t, t, h);
  const float m = mul_rn(kTanhA3Hi, h);
  const float ml = fma_rn(kTanhA3Hi, hl,
                          fma_rn(kTanhA3Lo, h, prod_err(kTanhA3Hi, h, m)));
  const float gh = add_rn(m, kTanhA1Hi);
  const float gl = add_rn(sub_rn(kTanhA1Hi, sub_rn(gh, m)), add_rn(ml, kTanhA1Lo));
  const float zh = mul_rn(t, gh);
  const float zl = fma_rn(t, gl, prod_err(t, gh, zh));
  const float p3 = mul_rn(t, m);
  const float p3l = fma_rn(t, ml, prod_err(t, m, p3));
  const float k1 = sub_rn(zh, 1.0f);
  const float k2 = add_rn(p3, p3);
  const float kh = add_rn(k1, k2);
  const float kl = add_rn(two_sum_err(k1, k2, kh), fma_rn(2.0f, p3l, zl));
  sigmoid_tail(t, zh, zl, kh, kl, add_rn(kh, 1.0f), vs, gs);
}

GELU_HD void quick_tail(float t, float& vs, float& gs) {
  const float zh = mul_rn(kQuickAHi, t);
  const float zl = fma_rn(kQuickALo, t, prod_err(kQuickAHi, t, zh));
  const float kh = sub_rn(zh, 1.0f);
  sigmoid_tail(t, zh, zl, kh, zl, zh, vs, gs);
}

// ---------------------------------------------------------------------------
// Where the tail takes over: |x| >= this, inf and NaN (the CPU's CoreShape;
// the wide core's is its form's: kCoreEnd).
template <int kN = 16>
inline constexpr float kTailStart = kN == 8 ? 4.0f : (kN - 0.5f) * (4.0f / kN);
template <Approx F, bool kHalf, int kN>
GELU_HD constexpr float core_end() {
  if constexpr (kN == 32) {
    return Core<F, kHalf, 32>::kEnd;
  } else {
    return kTailStart<kN>;
  }
}
template <Approx F, bool kHalf, int kN>
inline constexpr float kCoreEnd = core_end<F, kHalf, kN>();

// gelu(x) and gelu'(x) of form F. kHalf: results to be rounded to bf16/f16.
// kCoreOnly: the caller has checked |x| < kCoreEnd (no branch here).
template <Approx F, bool kHalf = false, int kN = 16, bool kCoreOnly = false>
GELU_HD void value_and_grad(float x, float& value, float& grad) {
  const float t = fabsf(x);
  if (kCoreOnly || t < kCoreEnd<F, kHalf, kN>) {  // false for NaN
    float v, g;
    core<Core<F, kHalf, kN>, kN>(t, v, g);
    value = sub_rn(x > 0.0f ? x : 0.0f, v);
    grad = x < 0.0f ? g : sub_rn(1.0f, g);
    return;
  }
  if constexpr (kCoreOnly) return;
  // Tail, inf or NaN (NaN runs through and comes out NaN).
  const float tt = kTmax<F> < t ? kTmax<F> : t;
  float vs, gs;
  if constexpr (F == Approx::none) {
    erf_tail<kN>(tt, vs, gs);
  } else if constexpr (F == Approx::tanh) {
    tanh_tail(tt, vs, gs);
  } else {
    static_assert(F == Approx::quick, "a form without its tail here");
    quick_tail(tt, vs, gs);
  }
  value = fma_rn(-vs, kTwoPowM64, x > -0.0f ? x : -0.0f);
  grad = x < 0.0f ? fma_rn(-gs, kTwoPowM64, -0.0f) : fma_rn(gs, kTwoPowM64, 1.0f);
}

template <Approx F, bool kHalf = false, int kN = 16, bool kCoreOnly = false>
GELU_HD float value(float x) {
  float v, g;
  value_and_grad<F, kHalf, kN, kCoreOnly>(x, v, g);
  return v;
}

template <Approx F, bool kHalf = false, int kN = 16, bool kCoreOnly = false>
GELU_HD float grad(float x) {
  float v, g;
  value_and_grad<F, kHalf, kN, kCoreOnly>(x, v, g);
  return g;
}

}  // namespace gelu::math
