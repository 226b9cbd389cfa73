// Per-target loads and stores of f32 vectors from/to the storage dtypes.
//
// Each storage tag (F32, BF16, F16) converts a vector's worth of elements to
// f32 lanes on the way in and rounds to nearest-even on the way out, bit for
// bit as src/ref/convert.hpp does (tested for all 65536 16-bit patterns and
// many f32 values in tests/kernels_convert_test.cpp):
//  - bf16 out: Highway 1.0's DemoteTo truncates, so the rounding is done here
//    in integer lanes (u + 0x7fff + lsb) >> 16, NaN kept quiet with its sign.
//  - f16 in: F16C (vcvtph2ps) on AVX2 and better in the kernels (it quiets
//    signaling NaNs, which their arithmetic does anyway); the integer decode
//    elsewhere and in the to_f32 conversion (convert.hpp keeps sNaNs).
//  - f16 out: F16C (vcvtps2ph, round-to-nearest-even) on AVX2 and better,
//    the same rounding in integer lanes elsewhere.
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_STORAGE_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_STORAGE_INL_H_
#undef GELU_CPU_STORAGE_INL_H_
#else
#define GELU_CPU_STORAGE_INL_H_
#endif

#include <cstdint>

#include "cpu/fp_status.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Stores that report through the FP status flags (fp_status.hpp): on x86's
// SIMD targets a 16-bit storage's Store2Flagged raises kFlagsOfStore for
// every result the overflow-boundary rule may change (and the insn rounding
// for a subnormal result it would flush), instead of testing them; the
// driver tests the flags once per block. 0 where there is no such store.
#undef GELU_CPU_FLAGGED_STORES  // per target (this file is re-included)
#if defined(GELU_CPU_HAVE_FP_STATUS) && HWY_ARCH_X86 && HWY_TARGET <= HWY_SSE4
#define GELU_CPU_FLAGGED_STORES 1
// Makes a and b operands of an empty volatile asm, so that the multiplies
// that made them (probes, whose only effect is on the flags) stay.
template <class V>
HWY_INLINE void KeepForFlags(V a, V b) {
#if HWY_TARGET <= HWY_AVX3
  asm volatile("" : : "v"(a.raw), "v"(b.raw));
#else
  asm volatile("" : : "x"(a.raw), "x"(b.raw));
#endif
}
#endif

// Two consecutive vectors per step, for storages whose Load/Store convert one
// vector at a time: [p, p + N) and [p + N, p + 2N).
template <class S, class T>
struct Contiguous2 {
  template <class DF>
  static HWY_INLINE void Load2(DF df, const T* p, hn::Vec<DF>& a, hn::Vec<DF>& b) {
    a = S::Load(df, p);
    b = S::Load(df, p + hn::Lanes(df));
  }
  template <class DF>
  static HWY_INLINE void Store2(DF df, hn::Vec<DF> a, hn::Vec<DF> b, T* p) {
    S::Store(df, a, p);
    S::Store(df, b, p + hn::Lanes(df));
  }
};

// f32 storage: plain unaligned loads and stores.
struct F32 : Contiguous2<F32, float> {
  using T = float;
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Load(DF df, const T* p) {
    return hn::LoadU(df, p);
  }
  template <class DF>
  static HWY_INLINE void Store(DF df, hn::Vec<DF> v, T* p) {
    hn::StoreU(v, df, p);
  }
};

// bf16 storage (raw uint16_t bits): the upper half of an f32.
struct BF16 {
  using T = uint16_t;
  // The format's overflow boundary, as f32: its largest finite value plus
  // half an ulp; f32 values from it up round to inf. (F16 has the same.)
  static constexpr float kOverflowBoundary = 0x1.ffp127f;
  static constexpr float kLargestFinite = 0x1.fep127f;
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Load(DF df, const T* p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> d16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
  }
  // The f32 bits rounded to nearest-even in the upper 16 bits (the lower
  // bits are garbage); right for every value but a NaN with nonzero low
  // bits, which can carry (Store handles NaN apart).
  template <class DF>
  static HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundHigh(DF, hn::Vec<DF> v) {
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    return hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), lsb));
  }
  template <class DF>
  static HWY_INLINE void Store(DF df, hn::Vec<DF> v, T* p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    const auto rounded = hn::ShiftRight<16>(RoundHigh(df, v));
    const auto quiet = hn::Or(hn::ShiftRight<16>(hn::BitCast(du, v)),
                              hn::Set(du, 0x0040u));
    const auto r = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), quiet, rounded);
    // Every lane is < 2^16, so the saturating i32 -> u16 demotion is exact.
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, r)), d16, p);
  }
};

// bf16 storage, two f32 vectors per step without any shuffle: the 2N
// elements are loaded as N u32 lanes, even elements in the low halves and
// odd elements in the high halves; each half becomes an f32 vector in
// place, and the two rounded results are merged back the same way. Lane
// order does not matter to an element-wise op (not used where a lane's
// column matters: the dbias sums).
struct BF16Pairs : BF16 {
  template <class DF>
  static HWY_INLINE void Load2(DF df, const T* p, hn::Vec<DF>& even, hn::Vec<DF>& odd) {
    const hn::RebindToUnsigned<DF> du;
    const auto w = hn::LoadU(du, reinterpret_cast<const uint32_t*>(p));
    even = hn::BitCast(df, hn::ShiftLeft<16>(w));
    odd = hn::BitCast(df, hn::And(w, hn::Set(du, 0xffff0000u)));
  }
  // RoundHigh without Store's NaN case: Store2 only ever sees the kernels'
  // results, and a NaN result is an input NaN (a bf16, so its low 16 bits
  // are zero) or the default NaN (low bits zero too), quieted or not; adding
  // 0x7fff + lsb to zero low bits cannot carry, so it stays that NaN. The
  // three NaN ops were a visible share of the bf16 forward
  // (docs/notes/kernel-decisions.md, "bf16 rounding without the NaN case"). Every bf16
  // NaN pattern goes through every input of every op, on every target, in
  // tests/ops_nan_patterns_test.cpp.
  template <class DF>
  static HWY_INLINE void Store2(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p) {
    const hn::RebindToUnsigned<DF> du;
    const auto w = hn::Or(hn::And(RoundHigh(df, odd), hn::Set(du, 0xffff0000u)),
                          hn::ShiftRight<16>(RoundHigh(df, even)));
    hn::StoreU(w, du, reinterpret_cast<uint32_t*>(p));
  }

#ifdef GELU_CPU_FLAGGED_STORES
  // Overflow from a probe: v (1 + 2^-8) rounds to inf in f32 for every |v|
  // at or above the boundary ((2^128 - 2^119)(1 + 2^-8) > 2^128), and for a
  // few values just below it (a needless recheck). One multiply per vector
  // instead of two compares, an or and a test on every step.
  static constexpr unsigned kFlagsOfStore = kFpOverflow;
  template <class DF>
  static HWY_INLINE void Probe(DF df, hn::Vec<DF> even, hn::Vec<DF> odd) {
    const auto grow = hn::Set(df, 1.0f + 0x1p-8f);
    KeepForFlags(hn::Mul(even, grow), hn::Mul(odd, grow));
  }
  template <class DF>
  static HWY_INLINE void Store2Flagged(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p) {
    Probe(df, even, odd);
    Store2(df, even, odd, p);
  }
#else
  static constexpr unsigned kFlagsOfStore = 0;
#endif
};

#undef GELU_CPU_HAVE_BF16_ROUNDING_INSN  // per target (this file is re-included)
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
#define GELU_CPU_HAVE_BF16_ROUNDING_INSN 1
// BF16Pairs with the rounding of AVX512_BF16's vcvtne2ps2bf16: one
// instruction for both vectors (round-to-nearest-even, NaN quieted as
// BF16::Store does) and one vpermw back to the even/odd layout, against 10
// integer ops (docs/notes/kernel-decisions.md, "vcvtne2ps2bf16"). Only where
// use_avx512_bf16() (src/cpu/cpu_features.hpp) says so; written as inline asm
// because Highway 1.0's AVX3 target does not enable the instruction set.
// The instruction flushes subnormal inputs to zero, so a step with a
// subnormal result (deep negative tail, tiny dy) rounds in integer lanes.
struct BF16PairsAvx512Bf16 : BF16Pairs {
  // One vector (the dbias path and the from_f32 conversion): vcvtneps2bf16;
  // a NaN comes out as BF16::Store makes it (upper half, quiet bit set).
  template <class DF>
  static HWY_INLINE void Store(DF df, hn::Vec<DF> v, T* p) {
    static_assert(hn::MaxLanes(DF()) == 16, "512-bit vectors only");
    const __mmask16 sub = _mm512_fpclass_ps_mask(v.raw, 0x20);
    if (HWY_UNLIKELY(!_kortestz_mask16_u8(sub, sub))) {
      BF16::Store(df, v, p);
      return;
    }
    __m256i r;
    asm("vcvtneps2bf16 %1, %0" : "=v"(r) : "v"(v.raw));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), r);
  }
  template <class DF>
  static HWY_INLINE void Store2(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p) {
    static_assert(hn::MaxLanes(DF()) == 16, "512-bit vectors only");
    const __mmask16 sub = _kor_mask16(_mm512_fpclass_ps_mask(even.raw, 0x20),
                                      _mm512_fpclass_ps_mask(odd.raw, 0x20));
    if (HWY_UNLIKELY(!_kortestz_mask16_u8(sub, sub))) {
      BF16Pairs::Store2(df, even, odd, p);
      return;
    }
    RoundBoth(even, odd, p);
  }

  // The probe (BF16Pairs) also raises denormal-operand for a subnormal
  // result, which the instruction would flush: Store2's two classifications,
  // an or and a test per step become flags read once per block.
  static constexpr unsigned kFlagsOfStore = kFpOverflow | kFpDenormal;
  template <class DF>
  static HWY_INLINE void Store2Flagged(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p) {
    Probe(df, even, odd);
    RoundBoth(even, odd, p);
  }

 private:
  template <class V>
  static HWY_INLINE void RoundBoth(V even, V odd, T* p) {
    __m512i halves;  // words 0..15: even lanes, 16..31: odd lanes
    asm("vcvtne2ps2bf16 %2, %1, %0" : "=v"(halves) : "v"(odd.raw), "v"(even.raw));
    const __m512i interleave = _mm512_set_epi16(
        31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8,  //
        23, 7, 22, 6, 21, 5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
    _mm512_storeu_si512(p, _mm512_permutexvar_epi16(interleave, halves));
  }
};
#endif

// IEEE binary16 storage (raw uint16_t bits).
struct F16 : Contiguous2<F16, uint16_t> {
  using T = uint16_t;
  static constexpr float kOverflowBoundary = 65520.0f;  // 65504 + half an ulp
  static constexpr float kLargestFinite = 65504.0f;
#if defined(GELU_CPU_FLAGGED_STORES) && HWY_TARGET <= HWY_AVX2 && \
    !defined(HWY_DISABLE_F16C)
  // vcvtps2ph raises overflow for a finite value that rounds to inf: every
  // result at or above the boundary, and no other. Store2 is flagged as is.
  static constexpr unsigned kFlagsOfStore = kFpOverflow;
  template <class DF>
  static HWY_INLINE void Store2Flagged(DF df, hn::Vec<DF> a, hn::Vec<DF> b, T* p) {
    Store2(df, a, b, p);
  }
#else
  static constexpr unsigned kFlagsOfStore = 0;
#endif
  // The kernels' load: F16C (vcvtph2ps) on AVX2 and better, exact except
  // that a signaling NaN comes back quiet. That never shows in a kernel's
  // results: every result is arithmetic on its inputs (no input is passed
  // through), which quiets a signaling NaN anyway. The integer decode
  // elsewhere.
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Load(DF df, const T* p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
    const hn::Rebind<hwy::float16_t, DF> dh;
    return hn::PromoteTo(df, hn::LoadU(dh, reinterpret_cast<const hwy::float16_t*>(p)));
#else
    return LoadExact(df, p);
#endif
  }

  // Exact on every target, NaN payloads and signaling NaNs kept, as
  // src/ref/convert.hpp (the conversion kernel to_f32 uses it).
  template <class DF>
  static HWY_INLINE hn::Vec<DF> LoadExact(DF df, const T* p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    const auto h = hn::PromoteTo(du, hn::LoadU(d16, p));
    const auto sign = hn::ShiftLeft<16>(hn::And(h, hn::Set(du, 0x8000u)));
    const auto em = hn::And(h, hn::Set(du, 0x7fffu));
    const auto exp = hn::And(h, hn::Set(du, 0x7c00u));
    const auto shifted = hn::ShiftLeft<13>(em);
    // Normal: rebias the exponent 15 -> 127.
    const auto normal = hn::Add(shifted, hn::Set(du, (127u - 15u) << 23));
    // Inf/NaN: exponent all ones, payload kept as is.
    const auto infnan = hn::Or(shifted, hn::Set(du, 0x7f800000u));
    // Zero/subnormal: mantissa * 2^-24, exact in f32.
    const auto sub = hn::BitCast(du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, em)),
                                             hn::Set(df, 1.0f / 16777216.0f)));
    auto r = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), sub, normal);
    r = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x7c00u)), infnan, r);
    return hn::BitCast(df, hn::Or(r, sign));
  }

  template <class DF>
  static HWY_INLINE void Store(DF df, hn::Vec<DF> v, T* p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
    (void)df;
    const hn::Rebind<hwy::float16_t, DF> dh;
    hn::StoreU(hn::DemoteTo(dh, v), dh, reinterpret_cast<hwy::float16_t*>(p));
#else
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    const auto u = hn::BitCast(du, v);
    const auto sign = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 0x8000u));
    const auto a = hn::And(u, hn::Set(du, 0x7fffffffu));
    const auto ai = hn::BitCast(di, a);
    // Subnormal f16 (or zero): |v| + 0.5 puts the f16 ulp 2^-24 at f32's
    // last bit, so the f32 addition rounds to nearest-even for us.
    auto r = hn::Sub(hn::BitCast(du, hn::Add(hn::BitCast(df, a), hn::Set(df, 0.5f))),
                     hn::Set(du, 0x3f000000u));
    // Normal f16: rebias 127 -> 15 and round away the 13 dropped bits.
    const auto rb = hn::Sub(a, hn::Set(du, 0x38000000u));
    const auto lsb = hn::And(hn::ShiftRight<13>(rb), hn::Set(du, 1u));
    const auto normal = hn::ShiftRight<13>(
        hn::Add(rb, hn::Add(hn::Set(du, 0xfffu), lsb)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x38800000 - 1))),
                       normal, r);
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x477ff000 - 1))),
                       hn::Set(du, 0x7c00u), r);
    const auto nan = hn::Or(hn::Set(du, 0x7e00u),
                            hn::And(hn::ShiftRight<13>(a), hn::Set(du, 0x3ffu)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7f800000))), nan, r);
    r = hn::Or(r, sign);
    hn::StoreU(hn::DemoteTo(d16, hn::BitCast(di, r)), d16, p);
#endif
  }
};

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_STORAGE_INL_H_
