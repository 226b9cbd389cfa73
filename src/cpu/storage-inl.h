// Per-target loads and stores of f32 vectors from/to the storage dtypes.
//
// Each storage tag (F32, BF16, F16) converts a vector's worth of elements to
// f32 lanes on the way in and rounds to nearest-even on the way out, bit for
// bit as src/core/convert.hpp does (tested for all 65536 16-bit patterns and
// many f32 values in tests/kernels_convert_test.cpp):
//  - bf16 out: Highway 1.0's DemoteTo truncates, so the rounding is done here
//    in integer lanes (u + 0x7fff + lsb) >> 16, NaN kept quiet with its sign.
//  - f16 in: integer decode on every target (hardware F16C quiets signaling
//    NaNs, convert.hpp keeps them).
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

#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// f32 storage: plain unaligned loads and stores.
struct F32 {
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
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Load(DF df, const T* p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::Rebind<uint16_t, DF> d16;
    return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, hn::LoadU(d16, p))));
  }
  template <class DF>
  static HWY_INLINE void Store(DF, hn::Vec<DF> v, T* p) {
    const hn::RebindToUnsigned<DF> du;
    const hn::RebindToSigned<DF> di;
    const hn::Rebind<uint16_t, DF> d16;
    const auto u = hn::BitCast(du, v);
    const auto hi = hn::ShiftRight<16>(u);
    const auto lsb = hn::And(hi, hn::Set(du, 1u));
    const auto rounded =
        hn::ShiftRight<16>(hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), lsb)));
    const auto quiet = hn::Or(hi, hn::Set(du, 0x0040u));
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
  // The f32 bits rounded to nearest-even in the upper 16 bits (lower bits
  // are garbage), NaN kept quiet with its sign.
  template <class DF>
  static HWY_INLINE hn::Vec<hn::RebindToUnsigned<DF>> RoundHigh(DF, hn::Vec<DF> v) {
    const hn::RebindToUnsigned<DF> du;
    const auto u = hn::BitCast(du, v);
    const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1u));
    const auto rounded = hn::Add(u, hn::Add(hn::Set(du, 0x7fffu), lsb));
    return hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)),
                          hn::Or(u, hn::Set(du, 0x00400000u)), rounded);
  }
  template <class DF>
  static HWY_INLINE void Store2(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, T* p) {
    const hn::RebindToUnsigned<DF> du;
    const auto w = hn::Or(hn::And(RoundHigh(df, odd), hn::Set(du, 0xffff0000u)),
                          hn::ShiftRight<16>(RoundHigh(df, even)));
    hn::StoreU(w, du, reinterpret_cast<uint32_t*>(p));
  }
};

// IEEE binary16 storage (raw uint16_t bits).
struct F16 {
  using T = uint16_t;
  template <class DF>
  static HWY_INLINE hn::Vec<DF> Load(DF df, const T* p) {
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
    const auto sub = hn::BitCast(
        du, hn::Mul(hn::ConvertTo(df, hn::BitCast(di, em)),
                    hn::Set(df, 1.0f / 16777216.0f)));
    auto r = hn::IfThenElse(hn::Eq(exp, hn::Zero(du)), sub, normal);
    r = hn::IfThenElse(hn::Eq(exp, hn::Set(du, 0x7c00u)), infnan, r);
    return hn::BitCast(df, hn::Or(r, sign));
  }

  template <class DF>
  static HWY_INLINE void Store(DF df, hn::Vec<DF> v, T* p) {
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2 && !defined(HWY_DISABLE_F16C)
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
    const auto normal =
        hn::ShiftRight<13>(hn::Add(rb, hn::Add(hn::Set(du, 0xfffu), lsb)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x38800000 - 1))),
                       normal, r);
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x477ff000 - 1))),
                       hn::Set(du, 0x7c00u), r);
    const auto nan = hn::Or(hn::Set(du, 0x7e00u),
                            hn::And(hn::ShiftRight<13>(a), hn::Set(du, 0x3ffu)));
    r = hn::IfThenElse(hn::RebindMask(du, hn::Gt(ai, hn::Set(di, 0x7f800000))),
                       nan, r);
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
