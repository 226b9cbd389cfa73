// Per-target SIMD math of the three GELU forms in f32: value and derivative.
//
// GeluErfMath, GeluTanhMath and GeluQuickMath each give
//   Value(d, x)   gelu(x) of the form,
//   Grad(d, x)    gelu'(x), the exact derivative of that form,
//   ValueAndGrad  both, sharing the work (bit-identical to the two alone),
// for any f32 descriptor D on every Highway target (AVX-512, AVX2, SSE4, the
// portable EMU128/SCALAR fallback). Include after hwy/highway.h, from a file
// compiled per target through foreach_target.h (Highway's toggle pattern).
//
// Method (t = |x|; s is the form's gate: gelu(x) = x s(x), s(-t) = 1 - s(t)):
//  * Core, t < 3.875: 16 intervals of width 1/4 picked by a permute of a
//    16-entry coefficient row (AVX-512; a gather elsewhere); a degree-6
//    polynomial in r = t - k/4 (exact) with its constant in hi + lo gives
//    V(t) = t s(-t) and G(t) = s(-t) - t s'(t):
//    gelu(x) = max(x, 0) - V(t), gelu'(x) = x < 0 ? G(t) : 1 - G(t).
//    No cancellation on either side, no exp, no division. Results rounded
//    to bf16/f16 use ForBf16F16: degree 4, c0 a single f32 (2^-17 relative).
//    AVX2 (8 lanes, where a 16-entry lookup is two permutes and a blend)
//    runs the narrow core instead: 8 intervals [k/2, k/2 + 1/2], k = 2t
//    truncated (so the first is a whole one), one permute a coefficient,
//    degree 7 (5 for bf16/f16), t < 4, each interval expanded at a point
//    where V and G are all but exact in f32 (so c0 is a single f32, one
//    lookup fewer than hi + lo) and whose f32 rounding is smallest
//    (gelu_coefficients_n8.h, tools/fit/fit_gelu.py --narrow). AVX-512's f32 results
//    run the wide core: 32 intervals, whose lookup (vpermt2ps, two registers) costs
//    what 16 do, of the form's width (erf 3/16, tanh 5/32, quick 5/16), degree 6, so
//    the tail takes over at 31.4375 widths: 5.89, 4.91, 9.82 (gelu_coefficients_w32.h,
//    tools/fit/fit_gelu.py --wide).
//  * Tail, t >= the core's end (3.875 with 16 intervals, 4 with 8, the
//    form's with 32) and inf/NaN, taken only when a vector
//    holds such a lane: e^-A with A computed as a double-float (the square
//    split exactly with FMA / Veltkamp), scaled by 2^(n+64) and 2^-64 so
//    that subnormal results round once. Erf: A = t^2/2 + ln sqrt(2 pi), times the Mills
//    ratio fitted as t R(t) = 1 + w P(w), w = 1/t^2. Tanh and quick:
//    A = 2u or 1.702 t, sigmoid(-A) = e^-A (1 - m), m = e^-A (1 - e^-A).
//    A vector wholly in the tail skips the core; the kernels' driver packs
//    tail lanes from many vectors and runs them through TailOnly densely.
//
// Measured errors (tests/gelu_math_test.cpp, every target, 2^24 evenly
// spread bit patterns plus dense tail sweeps and interval edges; see each
// struct's doc block).
// Speed: tools/fit/bench_gelu_math.cpp times each form's Value and the
// tail alone; where the cores are issue-bound the tail's cost is its
// operation count: about 32 for erf and quick, 47 for tanh (its
// double-float 2u), 21 in the core (docs/notes/kernel-decisions.md, "The math's speed
// per form").
//
// For callers: gelu' is subnormal deep in the negative tail. Multiply it by
// dy with an FMA (hn::MulAdd(dy, grad, -0.0f)), not hn::Mul: some cores
// take a slow path for vmulps with subnormal operands or results, not for
// FMA (docs/notes/kernel-decisions.md, "MulTail"). This header uses FMA for every step
// that can produce a subnormal.
#if defined(GELU_CPU_GELU_MATH_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_GELU_MATH_INL_H_
#undef GELU_CPU_GELU_MATH_INL_H_
#else
#define GELU_CPU_GELU_MATH_INL_H_
#endif

#include <type_traits>

#include "cpu/gelu_coefficients.h"
#include "cpu/gelu_coefficients_n8.h"
#include "cpu/gelu_coefficients_w32.h"
#include "gelu/gelu.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

namespace gelu_math {

// ---------------------------------------------------------------------------
// Coefficients: generated into gelu_coefficients.h by tools/fit/fit_gelu.py
// (the only place they live); the hand-set constants below.
using namespace ::gelu::cpu::gelu_coefficients;  // NOLINT(google-build-using-namespace)

// The core's shape for kN intervals. 16 intervals of width 1/4: k = t /
// width rounded, interval k = [k - 1/2, k + 1/2] widths, the tail from
// 3.875. 8 (the narrow core) of width 1/2: k = t / width truncated, interval
// k = [k, k + 1] widths, so the first is a whole one and the tail starts at
// 4; kS is the form's expansion points. 32 (the wide core): as 16, of the
// form's width kS[0] (kS[1] its reciprocal rounded), the tail from kS[2]
// (31.4375 widths: t / width rounded with the rounded reciprocal stays
// below 32; a form's width, and k times it, are exact in f32).
template <size_t kN, const float* kS>
struct CoreShape {
  static_assert(kN == 8 || kN == 16 || kN == 32, "fitted interval counts");
  static constexpr float kInvWidth = kN == 32 ? kS[1] : kN / 4.0f;
  static constexpr float kWidth = kN == 32 ? kS[0] : 4.0f / kN;
  static constexpr float kTailStart = kN == 8    ? 4.0f
                                      : kN == 32 ? kS[2]
                                                 : (kN - 0.5f) * kWidth;
};
inline constexpr float kLog2e = 1.44269504088896341f;
// Above these t the form's gelu(-t) and gelu'(-t) underflow to zero and
// gelu(t) = t, gelu'(t) = 1 exactly in f32.
inline constexpr float kErfTmax = 14.75f;
inline constexpr float kTanhTmax = 11.0f;
inline constexpr float kQuickTmax = 68.0f;

// ---------------------------------------------------------------------------
// Helpers.

template <class D>
using VecD = hn::Vec<D>;
template <class D>
using VecI = hn::Vec<hn::RebindToSigned<D>>;

// row[k] per lane, k = the low log2(kN) bits of `kbits` (the bits of
// 2^23 + k: the caller rounds with a magic number, so no float->int
// conversion).
template <size_t kN, class D>
HWY_INLINE VecD<D> Lookup(D d, const float* HWY_RESTRICT row, VecI<D> kbits) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (kN == 8 && hn::MaxLanes(D()) == 8) {
    // vpermps reads only the low 3 index bits.
    return VecD<D>{_mm256_permutevar8x32_ps(hn::Load(d, row).raw, kbits.raw)};
  }
#endif
  if constexpr (kN == 8 || kN == 32) {
    const hn::RebindToSigned<D> di;
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
    if constexpr (kN == 32 && hn::MaxLanes(D()) == 16) {
      // vpermt2ps: 32 entries in two registers, the low 5 index bits.
      return VecD<D>{_mm512_permutex2var_ps(hn::Load(d, row).raw, kbits.raw,
                                            hn::Load(d, row + 16).raw)};
    }
#endif
    return hn::GatherIndex(d, row, hn::And(kbits, hn::Set(di, int32_t(kN - 1))));
  }
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(D()) == 16) {
    // vpermps reads only the low 4 index bits.
    return VecD<D>{_mm512_permutexvar_ps(kbits.raw, hn::Load(d, row).raw)};
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(D()) == 8) {
    // Two 8-entry permutes (low 3 bits), picked by bit 3 moved to the sign.
    const VecD<D> lo{_mm256_permutevar8x32_ps(hn::Load(d, row).raw, kbits.raw)};
    const VecD<D> hi{_mm256_permutevar8x32_ps(hn::Load(d, row + 8).raw, kbits.raw)};
    const auto sel = hn::BitCast(d, hn::ShiftLeft<28>(kbits));
    return VecD<D>{_mm256_blendv_ps(lo.raw, hi.raw, sel.raw)};
  }
#endif
  const hn::RebindToSigned<D> di;
  return hn::GatherIndex(d, row, hn::And(kbits, hn::Set(di, 15)));
}

// min(c, t) that returns t when t is NaN.
template <class D>
HWY_INLINE VecD<D> MinKeepNaN(D d, VecD<D> c, VecD<D> t) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  (void)d;
  return hn::Min(c, t);  // minps returns its second operand if either is NaN
#else
  (void)d;
  return hn::IfThenElse(hn::Gt(t, c), c, t);  // Highway's emulated Min drops NaN
#endif
}

// max(c, t) that returns t when t is NaN.
template <class D>
HWY_INLINE VecD<D> MaxKeepNaN(D d, VecD<D> c, VecD<D> t) {
#if HWY_ARCH_X86 && HWY_TARGET != HWY_SCALAR && HWY_TARGET != HWY_EMU128
  (void)d;
  return hn::Max(c, t);  // maxps returns its second operand if either is NaN
#else
  (void)d;
  return hn::IfThenElse(hn::Lt(t, c), c, t);
#endif
}

// a * b - p exactly, for p = fl(a * b) (no overflow, no underflow).
template <class D>
HWY_INLINE VecD<D> ProdErr(D d, VecD<D> a, VecD<D> b, VecD<D> p) {
#if HWY_NATIVE_FMA
  (void)d;
  return hn::MulSub(a, b, p);
#else
  // Veltkamp split into 12 + 12 bits, then Dekker's product.
  const auto split = hn::Set(d, 4097.0f);
  const auto ca = hn::Mul(split, a), cb = hn::Mul(split, b);
  const auto ah = hn::Sub(ca, hn::Sub(ca, a)), al = hn::Sub(a, ah);
  const auto bh = hn::Sub(cb, hn::Sub(cb, b)), bl = hn::Sub(b, bh);
  auto e = hn::Sub(hn::Mul(ah, bh), p);
  e = hn::Add(e, hn::Mul(ah, bl));
  e = hn::Add(e, hn::Mul(al, bh));
  return hn::Add(e, hn::Mul(al, bl));
#endif
}

// e^r - 1 for |r| <= ln2/2, degree 6 or 7 (Horner: fewest instructions; the
// kernels are throughput-bound with many vectors in flight).
template <int kDeg, class D>
HWY_INLINE VecD<D> ExpM1Poly(D d, VecD<D> r) {
  static_assert(kDeg == 6 || kDeg == 7, "fitted degrees");
  const auto C = [&](int j) {
    return hn::Set(d, kDeg == 6 ? kExpPoly6[j] : kExpPoly7[j]);
  };
  auto p = C(kDeg - 2);
  if constexpr (kDeg == 7) p = hn::MulAdd(p, r, C(4));
  p = hn::MulAdd(p, r, C(3));
  p = hn::MulAdd(p, r, C(2));
  p = hn::MulAdd(p, r, C(1));
  p = hn::MulAdd(p, r, C(0));
  return hn::MulAdd(hn::Mul(r, r), p, r);
}

// 2^(n + 64) from km = 1.5 * 2^23 + n (n in [-191, 63]): the bits of km are
// 0x4B400000 + n, so one add and one shift (the shift drops the high bits).
template <class D>
HWY_INLINE VecD<D> ScaleFromMagic(D d, VecD<D> km) {
  const hn::RebindToSigned<D> di;
  const int32_t bias = 127 + 64 - 0x4B400000;
  return hn::BitCast(
      d, hn::ShiftLeft<23>(hn::Add(hn::BitCast(di, km), hn::Set(di, bias))));
}

// e^(-(ah + al)) = 2^n (1 + q) for ah in [4, 120], al tiny; returns q and
// scale = 2^(n + 64) (a normal float: the caller multiplies by 2^-64 last,
// so a subnormal result rounds once).
template <class D>
HWY_INLINE void ExpNeg(D d, VecD<D> ah, VecD<D> al, VecD<D>& q, VecD<D>& scale) {
  const auto magic = hn::Set(d, 12582912.0f);  // 1.5 * 2^23: round to int
  const auto km = hn::MulAdd(ah, hn::Set(d, -kLog2e), magic);
  const auto kf = hn::Sub(km, magic);
  // ah + k ln2_hi is exact (k ln2_hi has 16 + 8 bits, the sum is small).
  auto r = hn::NegMulSub(kf, hn::Set(d, kLn2[0]), ah);
  r = hn::Sub(r, hn::MulAdd(kf, hn::Set(d, kLn2[1]), al));
  q = ExpM1Poly<7>(d, r);
  scale = ScaleFromMagic(d, km);
}

// The core's t for x: |x|, and with AVX-512 at most kTailStart, in one
// vrangeps (the smaller magnitude of x and kTailStart, sign cleared) where
// |x| took an and. t < kTailStart exactly where |x| < kTailStart (false
// for NaN), and a core lane's t is |x|. A lane past the core (whose
// results the caller replaces) then runs the core at the tail's start,
// where it raises no flag (kCoreQuiet); far out, the polynomials would
// overflow, which a caller may have unmasked. Elsewhere the driver keeps
// such lanes from the core (its kDeferBelow).
template <class Shape, class D>
HWY_INLINE VecD<D> CoreT(D d, VecD<D> x) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  const auto cap = hn::Set(d, Shape::kTailStart);
  if constexpr (hn::MaxLanes(D()) == 16) {
    return VecD<D>{_mm512_range_ps(x.raw, cap.raw, 0x0A)};
  } else if constexpr (hn::MaxLanes(D()) == 8) {
    return VecD<D>{_mm256_range_ps(x.raw, cap.raw, 0x0A)};
  } else {
    return VecD<D>{_mm_range_ps(x.raw, cap.raw, 0x0A)};
  }
#else
  (void)d;
  return hn::Abs(x);
#endif
}
// Whether the core raises no flag at any x (CoreT caps t).
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr bool kCoreQuiet = true;
#else
inline constexpr bool kCoreQuiet = false;
#endif

// Core: V(t) and G(t) of the form's tables, t = CoreT(x) in
// [0, kTailStart) of the kN intervals (a lane past it computes results the
// caller replaces). Table rows: c0 hi, [c0 lo when kLo,] c1..c<kDeg>;
// Horner in r, the c0 lo added last before c0 hi. The narrow core (kN = 8)
// expands interval k at kS[k]: 0 for k = 0, else a point where V and G
// round to f32 within 1/64 ulp (its c0 needs no lo) and whose f32
// evaluation rounds least (tools/fit/fit_gelu.py, narrow_centres), within
// a factor 2 of every t of the interval, so r = t - kS[k] is exact
// (Sterbenz). The others expand interval k at k widths.
template <int kDeg, bool kLo, size_t kN, const float* kS, class D>
HWY_INLINE void Core(D d, VecD<D> x, const float (*tv)[kN], const float (*tg)[kN],
                     VecD<D>& v, VecD<D>& g) {
  static_assert(kDeg >= 2, "Horner below starts from c_deg r + c_(deg-1)");
  using Shape = CoreShape<kN, kS>;
  const hn::RebindToSigned<D> di;
  const auto t = CoreT<Shape>(d, x);
  VecD<D> r;
  VecI<D> k;
  if constexpr (kN == 8) {
    // k = t / width truncated (2t is exact). The lookups read its low 3
    // bits; lanes past the core get a k whose results the caller replaces
    // (the conversion raises invalid from 2^31 on: the driver's
    // kDeferBelow keeps such lanes from here).
    const auto y = hn::Mul(t, hn::Set(d, Shape::kInvWidth));
#if HWY_TARGET == HWY_AVX2
    if constexpr (hn::MaxLanes(D()) == 8) {
      k = VecI<D>{_mm256_cvttps_epi32(y.raw)};
    } else {
      k = hn::ConvertTo(di, y);
    }
#else
    k = hn::ConvertTo(di, y);
#endif
    r = hn::Sub(t, Lookup<kN>(d, kS, k));
  } else {
    // k = round(t / width) in the low mantissa bits of 2^23 + t / width;
    // r = t - k width, exact.
    const auto magic = hn::Set(d, 8388608.0f);
    const auto km = hn::MulAdd(t, hn::Set(d, Shape::kInvWidth), magic);
    r = hn::NegMulAdd(hn::Sub(km, magic), hn::Set(d, Shape::kWidth), t);
    k = hn::BitCast(di, km);
  }
  const auto L = [&](const float* row) { return Lookup<kN>(d, row, k); };
  constexpr int kC1 = kLo ? 2 : 1;  // row of c1; c_j is row j + kC1 - 1
  auto pv = hn::MulAdd(L(tv[kDeg + kC1 - 1]), r, L(tv[kDeg + kC1 - 2]));
  auto pg = hn::MulAdd(L(tg[kDeg + kC1 - 1]), r, L(tg[kDeg + kC1 - 2]));
#pragma GCC unroll 8
  for (int j = kDeg - 2; j >= 1; --j) {
    pv = hn::MulAdd(pv, r, L(tv[j + kC1 - 1]));
    pg = hn::MulAdd(pg, r, L(tg[j + kC1 - 1]));
  }
  if constexpr (kLo) {
    v = hn::Add(L(tv[0]), hn::MulAdd(pv, r, L(tv[1])));
    g = hn::Add(L(tg[0]), hn::MulAdd(pg, r, L(tg[1])));
  } else {
    v = hn::MulAdd(pv, r, L(tv[0]));
    g = hn::MulAdd(pg, r, L(tg[0]));
  }
}

// gelu and gelu' from V(t) and G(t) (core) for finite x.
template <class D>
HWY_INLINE void FinishCore(D d, VecD<D> x, VecD<D> v, VecD<D> g, VecD<D>& value,
                           VecD<D>& grad) {
  value = hn::Sub(hn::Max(x, hn::Zero(d)), v);
  grad = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), g, hn::Sub(hn::Set(d, 1.0f), g));
}

// gelu and gelu' from the tail's scaled magnitudes vs = V(t) 2^64 and
// gs = -G(t) 2^64 (both >= 0; NaN when x is NaN, which then propagates).
template <class D>
HWY_INLINE void FinishTail(D d, VecD<D> x, VecD<D> vs, VecD<D> gs, VecD<D>& value,
                           VecD<D>& grad) {
  const auto tiny = hn::Set(d, 5.42101086e-20f);  // 2^-64
  // max(x, -0) is -0 for x < 0, so an underflowing gelu(x < 0) is -0.
  value = hn::NegMulAdd(vs, tiny, hn::Max(x, hn::Set(d, -0.0f)));
  grad = hn::IfThenElse(hn::Lt(x, hn::Zero(d)),
                        hn::NegMulAdd(gs, tiny, hn::Set(d, -0.0f)),
                        hn::MulAdd(gs, tiny, hn::Set(d, 1.0f)));
}

// Tails, t >= the core's kTailStart (clamped to the form's tmax):
// vs = t s(-t) 2^64, gs = (t s'(t) - s(-t)) 2^64. kN: the core's interval
// count, whose tail start the erf tail's fit begins at.
struct ErfTail {
  static constexpr float kTmax = kErfTmax;
  // Whether core lanes (t below the core's tail start) run the tail
  // quietly: not here, 1/t^2 overflows near 0.
  static constexpr bool kQuietInCore = false;
  template <size_t kN, class D>
  static HWY_INLINE void Eval(D d, VecD<D> t, VecD<D>& vs, VecD<D>& gs) {
    // phi(t) = e^-(t^2/2 + ln sqrt(2 pi)) = 2^n (1 + q).
    const auto h = hn::Mul(t, t);
    const auto hl = ProdErr(d, t, t, h);
    const auto half = hn::Set(d, 0.5f);
    // A = h/2 + L: (h/2 + L_hi) is not exact, so reduce h/2 first and take
    // L_hi off after (exact: the reduced value is within [L_hi/2, 2 L_hi]).
    const auto ah = hn::MulAdd(h, half, hn::Set(d, kLnSqrt2Pi[0]));

    const auto magic = hn::Set(d, 12582912.0f);
    const auto km = hn::MulAdd(ah, hn::Set(d, -kLog2e), magic);
    const auto kf = hn::Sub(km, magic);
    auto r = hn::NegMulAdd(kf, hn::Set(d, kLn2[0]), hn::Mul(h, hn::Neg(half)));
    r = hn::Sub(r, hn::Set(d, kLnSqrt2Pi[0]));
    const auto lo = hn::MulAdd(hl, half, hn::Set(d, kLnSqrt2Pi[1]));
    r = hn::Sub(r, hn::MulAdd(kf, hn::Set(d, kLn2[1]), lo));
    const auto q = ExpM1Poly<6>(d, r);
    const auto scale = ScaleFromMagic(d, km);
    // t R(t) = 1 + a, a = w P(w).
    // w = 1/t^2: the approximate reciprocal and one Newton step (2^-22 or
    // better; a = w P(w) <= 0.07 scales that error down to 2^-26).
    const auto one = hn::Set(d, 1.0f);
    const auto w0 = hn::ApproximateReciprocal(h);
    const auto w = hn::MulAdd(w0, hn::NegMulAdd(h, w0, one), w0);
    const auto C = [&](int j) {
      return hn::Set(d, kN == 8 ? kErfTailN8[j] : kErfTail[j]);
    };
    auto pw = hn::MulAdd(C(5), w, C(4));
    pw = hn::MulAdd(pw, w, C(3));
    pw = hn::MulAdd(pw, w, C(2));
    pw = hn::MulAdd(pw, w, C(1));
    pw = hn::MulAdd(pw, w, C(0));
    const auto a = hn::Mul(w, pw);
    // V = t Q = phi (1 + a) = 2^n (1 + y), y = q + a (1 + q).
    const auto y = hn::Add(hn::MulAdd(a, q, a), q);
    vs = hn::MulAdd(y, scale, scale);
    // -G = t phi - Q = t phi (1 + b), b = -w (1 + a).
    const auto b = hn::NegMulSub(w, a, w);
    const auto y2 = hn::Add(hn::MulAdd(b, q, b), q);
    gs = hn::Mul(hn::MulAdd(t, y2, t), scale);
  }
};

// Shared by tanh and quick: z = zh + zl, V = t sigmoid(-z),
// -G = sigmoid(-z) K with K = t z' (1 - sigmoid(-z)) - 1 = kh + kl.
template <class D>
HWY_INLINE void SigmoidTail(D d, VecD<D> t, VecD<D> zh, VecD<D> zl, VecD<D> kh,
                            VecD<D> kl, VecD<D> tz1, VecD<D>& vs, VecD<D>& gs) {
  VecD<D> q, scale;
  ExpNeg(d, zh, zl, q, scale);
  // E = e^-z; sigmoid(-z) = E (1 - m), m = E (1 - E) (error E^3 < 2^-27).
  // E with its exponent clamped at -50: past that m is far below 2^-24 and
  // the clamp keeps E and E^2 normal (subnormal operands are slow).
  const auto sc = hn::Max(scale, hn::Set(d, 16384.0f));
  const auto e = hn::Mul(hn::MulAdd(q, sc, sc), hn::Set(d, 5.42101086e-20f));
  const auto m = hn::NegMulAdd(e, e, e);
  // (1 + q)(1 - m) = 1 + y.
  const auto y = hn::NegMulAdd(m, q, hn::Sub(q, m));
  vs = hn::Mul(hn::MulAdd(t, y, t), scale);
  // K (1 + y) = kh + (kh y + kl' (1 + y)), kl' = kl - t z' m.
  const auto kl2 = hn::NegMulAdd(tz1, m, kl);
  const auto kl3 = hn::MulAdd(kl2, y, kl2);
  gs = hn::Mul(hn::Add(kh, hn::MulAdd(kh, y, kl3)), scale);
}

// x + y = s + err exactly.
template <class V>
HWY_INLINE V TwoSumErr(V a, V b, V s) {
  const auto bv = hn::Sub(s, a);
  return hn::Add(hn::Sub(a, hn::Sub(s, bv)), hn::Sub(b, bv));
}

struct TanhTail {
  static constexpr float kTmax = kTanhTmax;
  static constexpr bool kQuietInCore = true;
  template <size_t kN, class D>
  static HWY_INLINE void Eval(D d, VecD<D> t, VecD<D>& vs, VecD<D>& gs) {
    // z = 2u = t (a1 + m), m = a3 t^2, each as a double-float. For t >=
    // 3.875 (either core's tail start), m >= 1.07 has the exponent of a1
    // (1.60), so the Fast2Sum
    // gh = m + a1, error a1 - (gh - m), is exact (core lanes that pass
    // through here compute garbage the caller discards). Against a1 t +
    // a3 t^3 with a TwoSum: 5 ops fewer for the value, 2 for the gradient.
    const auto h = hn::Mul(t, t);
    const auto hl = ProdErr(d, t, t, h);
    const auto a3h = hn::Set(d, kTanhA3[0]), a1h = hn::Set(d, kTanhA1[0]);
    const auto m = hn::Mul(a3h, h);
    const auto ml = hn::MulAdd(
        a3h, hl, hn::MulAdd(hn::Set(d, kTanhA3[1]), h, ProdErr(d, a3h, h, m)));
    const auto gh = hn::Add(m, a1h);
    const auto gl = hn::Add(hn::Sub(a1h, hn::Sub(gh, m)),
                            hn::Add(ml, hn::Set(d, kTanhA1[1])));
    const auto zh = hn::Mul(t, gh);
    const auto zl = hn::MulAdd(t, gl, ProdErr(d, t, gh, zh));
    // t z' = z + 2 a3 t^3 = z + 2 t m; K = (zh - 1) + 2 p3 + (zl + 2 p3l).
    const auto p3 = hn::Mul(t, m);
    const auto p3l = hn::MulAdd(t, ml, ProdErr(d, t, m, p3));
    const auto one = hn::Set(d, 1.0f);
    const auto k1 = hn::Sub(zh, one);  // exact
    const auto k2 = hn::Add(p3, p3);
    const auto kh = hn::Add(k1, k2);
    const auto kl = hn::Add(TwoSumErr(k1, k2, kh),
                            hn::MulAdd(hn::Set(d, 2.0f), p3l, zl));
    SigmoidTail(d, t, zh, zl, kh, kl, hn::Add(kh, one), vs, gs);
  }
};

struct QuickTail {
  static constexpr float kTmax = kQuickTmax;
  static constexpr bool kQuietInCore = true;
  template <size_t kN, class D>
  static HWY_INLINE void Eval(D d, VecD<D> t, VecD<D>& vs, VecD<D>& gs) {
    const auto ah = hn::Set(d, kQuickA[0]);
    const auto zh = hn::Mul(ah, t);
    const auto zl = hn::MulAdd(hn::Set(d, kQuickA[1]), t, ProdErr(d, ah, t, zh));
    // t z' = z; K = (zh - 1) + zl.
    const auto kh = hn::Sub(zh, hn::Set(d, 1.0f));
    SigmoidTail(d, t, zh, zl, kh, zl, zh, vs, gs);
  }
};

// Which lanes a caller has vouched for: kAny checks (one branch per vector),
// kCore has every lane in the core (AllCore below), kTail every lane in the
// tail or not finite (the driver's dense pass over gathered tail lanes).
enum class Lanes { kAny, kCore, kTail };

// Both value and grad; callers that use one get the other removed as dead
// code, so Value/Grad/ValueAndGrad compute bit-identical results, and so do
// the three Lanes modes on the lanes each covers.
template <class Tail, int kDeg, bool kLo, Lanes kLanes, size_t kN, const float* kS,
          class D>
HWY_INLINE void Eval(D d, VecD<D> x, const float (*tv)[kN], const float (*tg)[kN],
                     VecD<D>& value, VecD<D>& grad) {
  using Shape = CoreShape<kN, kS>;
  const auto t = hn::Abs(x);
  if constexpr (kLanes == Lanes::kCore) {
    VecD<D> v, g;
    Core<kDeg, kLo, kN, kS>(d, x, tv, tg, v, g);
    FinishCore(d, x, v, g, value, grad);
    return;
  }
  // false for NaN
  const auto in_core = hn::Lt(t, hn::Set(d, Shape::kTailStart));
  if constexpr (kLanes == Lanes::kAny) {
    if (HWY_LIKELY(hn::AllTrue(d, in_core))) {
      VecD<D> v, g;
      Core<kDeg, kLo, kN, kS>(d, x, tv, tg, v, g);
      FinishCore(d, x, v, g, value, grad);
      return;
    }
  }
  // Some lane is in the tail, infinite or NaN.
  VecD<D> vs, gs;
  // A NaN runs through the tail and comes out NaN. Core lanes run it too
  // (the blend below discards their results): quietly, or where the tail
  // would raise a flag below its start, at its start.
  auto tt = MinKeepNaN(d, hn::Set(d, Tail::kTmax), t);
  if constexpr (kLanes == Lanes::kAny && !Tail::kQuietInCore) {
    tt = MaxKeepNaN(d, hn::Set(d, Shape::kTailStart), tt);
  }
  Tail::template Eval<kN>(d, tt, vs, gs);
  FinishTail(d, x, vs, gs, value, grad);
  if constexpr (kLanes == Lanes::kTail) return;
  if (hn::AllFalse(d, in_core)) return;
  const auto xs = hn::IfThenElseZero(in_core, x);
  VecD<D> v, g, cv, cg;
  Core<kDeg, kLo, kN, kS>(d, xs, tv, tg, v, g);
  FinishCore(d, xs, v, g, cv, cg);
  value = hn::IfThenElse(in_core, cv, value);
  grad = hn::IfThenElse(in_core, cg, grad);
}

}  // namespace gelu_math

// The three forms share one shape; Tail and the tables select the form, kN
// the core's interval count, kS the narrow core's expansion points (nullptr
// for 16 intervals), kDeg and kLo the core polynomial (degree, c0 as f32
// hi + lo). CoreOnly is the same math without the tail check, for
// vectors AllCore has cleared: a caller with two vectors in hand checks both
// with one branch. TailOnly is the tail path alone, for vectors of gathered
// tail lanes (IsTail).
template <class Tail, size_t kN, const float (*kV)[kN], const float (*kG)[kN],
          const float* kS, int kDeg, bool kLo,
          gelu_math::Lanes kLanes = gelu_math::Lanes::kAny>
struct GeluMathImpl {
  using CoreOnly =
      GeluMathImpl<Tail, kN, kV, kG, kS, kDeg, kLo, gelu_math::Lanes::kCore>;
  using TailOnly =
      GeluMathImpl<Tail, kN, kV, kG, kS, kDeg, kLo, gelu_math::Lanes::kTail>;
  // Where the tail path takes over: 3.875 (16 intervals), 4 (8) or the
  // form's (32).
  using Shape = gelu_math::CoreShape<kN, kS>;
  static constexpr float kTailStart = Shape::kTailStart;
  // Lanes that need the tail path: |x| >= kTailStart, inf, NaN.
  template <class D>
  static HWY_INLINE hn::Mask<D> IsTail(D d, hn::Vec<D> x) {
#if HWY_TARGET == HWY_AVX2
    if constexpr (hn::MaxLanes(D()) == 8) {
      // "Not less than, or unordered" in one compare, where g++ makes Not(Lt)
      // a compare and an xor: a deferred pair tests both of its vectors.
      return hn::Mask<D>{_mm256_cmp_ps(gelu_math::CoreT<Shape>(d, x).raw,
                                       _mm256_set1_ps(kTailStart), _CMP_NLT_UQ)};
    }
#endif
    return hn::Not(hn::Lt(gelu_math::CoreT<Shape>(d, x), hn::Set(d, kTailStart)));
  }
  // Whether every lane of a and b has |x| < below (false for NaN), for
  // below <= kTailStart or wherever CoreT is |x|: with below =
  // Set(d, kTailStart), whether CoreOnly covers them all. A lower bound (0:
  // never) sends lanes to the tail check that did not need it.
  // Quiet: whether CoreOnly runs on all of them without raising a flag
  // (always with kCoreQuiet, else below the driver's kDeferBelow).
  template <class D>
  static HWY_INLINE bool AllCore(D d, hn::Vec<D> a, hn::Vec<D> b, hn::Vec<D> below) {
    return hn::AllTrue(d, hn::And(hn::Lt(gelu_math::CoreT<Shape>(d, a), below),
                                  hn::Lt(gelu_math::CoreT<Shape>(d, b), below)));
  }
  template <class D>
  static HWY_INLINE bool Quiet(D d, hn::Vec<D> a, hn::Vec<D> b, float below) {
    // Without kCoreQuiet, CoreT is |x|: AllCore for any bound.
    return gelu_math::kCoreQuiet || AllCore(d, a, b, hn::Set(d, below));
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Value(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    gelu_math::Eval<Tail, kDeg, kLo, kLanes, kN, kS>(d, x, kV, kG, v, g);
    return v;
  }
  template <class D>
  static HWY_INLINE hn::Vec<D> Grad(D d, hn::Vec<D> x) {
    hn::Vec<D> v, g;
    gelu_math::Eval<Tail, kDeg, kLo, kLanes, kN, kS>(d, x, kV, kG, v, g);
    return g;
  }
  template <class D>
  static HWY_INLINE void ValueAndGrad(D d, hn::Vec<D> x, hn::Vec<D>& value,
                                      hn::Vec<D>& grad) {
    gelu_math::Eval<Tail, kDeg, kLo, kLanes, kN, kS>(d, x, kV, kG, value, grad);
  }
};

// A form: the f32 math (F32: c0 in hi + lo, the f32 contract) and, as
// ForBf16F16, the math for results that are rounded to bf16 or f16: a lower
// degree without c0 lo. Its fit error, at most 2^-17 relative
// (tools/fit/fit_gelu.py), is below 1/64 ulp of f16 and 1/256 ulp of bf16,
// so those results stay within their 1-ulp contract; the tail path is the
// same exact one.
template <class F32, class Half>
struct GeluForm : F32 {
  using ForBf16F16 = Half;
};

// Each target's core, in the number of intervals a permute of one register
// or two looks up:
//  * AVX-512, 32 (the wide core): vpermt2ps costs what a 16-entry permute
//    does, so the f32 core reaches 4.9-9.8 (the form's width,
//    gelu_coefficients_w32.h) at the 16 intervals' degree 6, and fewer
//    lanes take the tail. The bf16/f16 results keep 16 intervals of width
//    1/4, degree 4 (at 32 their lower degree would not reach 2^-17).
//  * AVX2, 8 (the narrow core): a 16-entry lookup takes two 8-lane permutes
//    and a blend, so 8 intervals of width 1/2 at a degree more (7; 5 for
//    16-bit results): 9 permutes a value (8 coefficients, c0 a single f32,
//    and the centre) instead of 24 ops. The permutes, not the FMAs, bound
//    the core's speed there.
//  * The others, 16 intervals of width 1/4, degree 6 (4 for 16-bit
//    results): a 16-byte table shuffle or a gather.
#if HWY_TARGET == HWY_AVX2
inline constexpr size_t kCoreIntervals = 8;
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
inline constexpr size_t kCoreIntervals = 32;
#else
inline constexpr size_t kCoreIntervals = 16;
#endif

template <class Tail, const float (*kV)[16], const float (*kG)[16],
          const float (*kV16)[16], const float (*kG16)[16], const float* kSN,
          const float (*kVN)[8], const float (*kGN)[8], const float (*kVN16)[8],
          const float (*kGN16)[8], const float* kSW, const float (*kVW)[32],
          const float (*kGW)[32]>
using GeluFormFor = std::conditional_t<
    kCoreIntervals == 8,
    GeluForm<GeluMathImpl<Tail, 8, kVN, kGN, kSN, 7, false>,
             GeluMathImpl<Tail, 8, kVN16, kGN16, kSN, 5, false>>,
    std::conditional_t<
        kCoreIntervals == 32,
        GeluForm<GeluMathImpl<Tail, 32, kVW, kGW, kSW, 6, true>,
                 GeluMathImpl<Tail, 16, kV16, kG16, nullptr, 4, false>>,
        GeluForm<GeluMathImpl<Tail, 16, kV, kG, nullptr, 6, true>,
                 GeluMathImpl<Tail, 16, kV16, kG16, nullptr, 4, false>>>>;

// GELU, erf form: x Phi(x), Phi(x) = erfc(-x/sqrt 2)/2; Grad = Phi + x phi.
// Lanes: f32. Valid for every f32 input (NaN -> NaN, +-inf -> +inf/-0 and
// 1/0). Max error: Value 1.38 (AVX3, the wide core) / 1.42 (AVX2, the
// narrow core) / 1.42 (SSE4, SSSE3, SCALAR) ULP; Grad 1.32 / 1.41 / 1.51 ULP
// of |Phi| + |x phi|. The narrow core's figures are exhaustive over |x| in
// [2^-4, 4), the wide core's over [2^-4, 5.89) (docs/notes/simd-targets-log.md,
// "The narrow core's c0 in one f32"; docs/notes/cpu-kernels-log.md, "The wide
// core").
struct GeluErfMath
    : GeluFormFor<gelu_math::ErfTail, gelu_math::kErfValue, gelu_math::kErfGrad,
                  gelu_math::kErfValueBf16F16, gelu_math::kErfGradBf16F16,
                  gelu_math::kErfCentreN8, gelu_math::kErfValueN8,
                  gelu_math::kErfGradN8, gelu_math::kErfValueN8Bf16F16,
                  gelu_math::kErfGradN8Bf16F16, gelu_math::kErfWidthW32,
                  gelu_math::kErfValueW32, gelu_math::kErfGradW32> {};

// GELU, tanh form: x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); Grad
// is its exact derivative. Lanes: f32. Valid for every f32 input.
// Max error: Value 1.27 / 1.59 / 1.49 ULP; Grad 1.37 / 1.56 / 1.58 ULP of
// |s| + |x s'| (AVX3 / AVX2 / the others).
struct GeluTanhMath
    : GeluFormFor<gelu_math::TanhTail, gelu_math::kTanhValue, gelu_math::kTanhGrad,
                  gelu_math::kTanhValueBf16F16, gelu_math::kTanhGradBf16F16,
                  gelu_math::kTanhCentreN8, gelu_math::kTanhValueN8,
                  gelu_math::kTanhGradN8, gelu_math::kTanhValueN8Bf16F16,
                  gelu_math::kTanhGradN8Bf16F16, gelu_math::kTanhWidthW32,
                  gelu_math::kTanhValueW32, gelu_math::kTanhGradW32> {};

// GELU, quick form: x sigmoid(1.702 x); Grad its exact derivative.
// Lanes: f32. Valid for every f32 input.
// Max error: Value 1.34 / 1.48 / 1.70 ULP; Grad 1.40 / 1.61 / 1.67 ULP of
// |s| + |x s'| (AVX3 / AVX2 / the others).
struct GeluQuickMath
    : GeluFormFor<gelu_math::QuickTail, gelu_math::kQuickValue, gelu_math::kQuickGrad,
                  gelu_math::kQuickValueBf16F16, gelu_math::kQuickGradBf16F16,
                  gelu_math::kQuickCentreN8, gelu_math::kQuickValueN8,
                  gelu_math::kQuickGradN8, gelu_math::kQuickValueN8Bf16F16,
                  gelu_math::kQuickGradN8Bf16F16, gelu_math::kQuickWidthW32,
                  gelu_math::kQuickValueW32, gelu_math::kQuickGradW32> {};

// The math of each form (GELU_FUSION_FORMS), for the driver's dispatch.
template <Approx F>
struct FormMath;
template <>
struct FormMath<Approx::none> {
  using type = GeluErfMath;
};
template <>
struct FormMath<Approx::tanh> {
  using type = GeluTanhMath;
};
template <>
struct FormMath<Approx::quick> {
  using type = GeluQuickMath;
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_GELU_MATH_INL_H_
