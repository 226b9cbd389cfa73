// The one kernel driver, per target: every op of src/cpu/kernels.hpp is a
// call of Row<Math, Storage, Flags> (Transformer Engine style: the form's math
// struct and the fusion flags are template parameters, nothing is copied per
// dtype or per op).
//
// Row walks `count` consecutive positions a step (two vectors) at a time,
// in blocks of kBlockSteps steps: every step runs the core; the lanes that
// need the exact tail are packed and run densely at the end of the block
// (Deferred, FinishDeferred), or on AVX2 a vector at a time between the
// steps of the next block (TailVector), so the tail costs per tail lane. The last,
// partial step goes through the same Step, in the same loop (TailCopies):
// its inputs are copied into a zero-padded stack buffer and its outputs out
// of one, so no lane is read or written out of bounds on any target
// (Highway 1.0 has no LoadN, and its MaskedLoad may touch the whole vector
// on SSE4/EMU128).
//
// In place: a step loads all of its inputs before it stores (a deferred
// step's tail inputs are copies), and positions map one to one, so an
// output may be the very buffer of an input.
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_DRIVER_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_DRIVER_INL_H_
#undef GELU_CPU_DRIVER_INL_H_
#else
#define GELU_CPU_DRIVER_INL_H_
#endif

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "cpu/cpu_features.hpp"
#include "cpu/fp_status.hpp"
#include "cpu/gelu_math-inl.h"
#include "cpu/storage-inl.h"
#include "gelu/gelu.hpp"
#include "hwy/cache_control.h"
#include "hwy/highway.h"
#include "math/gelu_forms.hpp"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Fusion flags of Row.
enum : unsigned {
  kSum = 1,       // pre-activation is x + x2 (add_gelu: b; bias_gelu: bias)
  kGated = 2,     // x2 is the GeGLU gate: y = gelu(x) * x2
  kBackward = 4,  // dy in, dx out (and dx2, the gate's gradient, if gated)
  kDbias = 8,     // dx also feeds dbias (the math of f32 results)
  kAcc = 16,      // dx also goes to acc (f32, per column): Streams::acc_first
  kValue = 64,    // with kBackward: also store the forward's value to val
};

// The streams of one Row call; unused ones are null. All hold `count`
// elements (acc: `count` floats). What changes only how results are stored
// is a run-time choice, not a flag: one instance of the driver serves both
// (each is a branch per step, always taken the same way in a call).
template <class S>
struct Streams {
  using T = typename S::T;
  const T* dy;
  const T* x;
  const T* x2;
  T* out;
  T* out2;
  float* acc;
  T* val = nullptr;  // kValue: the forward's result, recomputed
  // Outputs by non-temporal stores (every output aligned to a vector:
  // StreamHead; the kernel fences: FenceStreamed).
  bool stream = false;
  // kAcc: acc = dx (a group's first row) rather than acc += dx.
  bool acc_first = false;
};

namespace detail {

constexpr size_t kMaxF32Lanes = HWY_MAX_BYTES / sizeof(float) > 0
                                    ? HWY_MAX_BYTES / sizeof(float)
                                    : 1;
// Positions of the largest step (two vectors when paired).
constexpr size_t kMaxStep = 2 * kMaxF32Lanes;

// sums[0, lanes) += v in double, or = v when kFirst (the sums' first
// term: no zeroing pass, no load).
template <bool kFirst, class DF>
HWY_INLINE void AddToSums(DF df, hn::Vec<DF> v, double* sums) {
  const auto put = [](auto dd, auto w, double* p) {
    hn::StoreU(kFirst ? w : hn::Add(hn::LoadU(dd, p), w), dd, p);
  };
#if HWY_TARGET == HWY_SCALAR
  const hn::Rebind<double, DF> dd;
  put(dd, hn::PromoteTo(dd, v), sums);
#else
  const hn::Half<DF> dh;
  const hn::Rebind<double, decltype(dh)> dd;
  put(dd, hn::PromoteTo(dd, hn::LowerHalf(dh, v)), sums);
  put(dd, hn::PromoteTo(dd, hn::UpperHalf(dh, v)), sums + hn::Lanes(dd));
#endif
  (void)df;
}

// a * b as one FMA with -0 added: the same bits as Mul (a + -0 keeps the
// sign of a zero product), but some x86 cores run vmulps with subnormal
// operands or results on a slow path and FMA at full speed. gelu' and gelu
// are subnormal deep in the negative tail (docs/notes/kernel-decisions.md, "MulTail").
template <class DF>
HWY_INLINE hn::Vec<DF> MulTail(DF df, hn::Vec<DF> a, hn::Vec<DF> b) {
  return hn::MulAdd(a, b, hn::Set(df, -0.0f));
}

// a * b * c rounded once (but for a tiny second-order term): a * b = p + e
// exactly (FMA), then p c + e c. Rounding a * b first added up to 0.5 ulp to
// geglu's dx of the value half (2.48 ulp measured, 2 allowed). Where a * b
// is not finite, e is not a number: it is dropped there.
// Targets without FMA (SSE4, SCALAR) would round p c + e c twice anyway, so
// they keep the plain two products.
template <class DF>
HWY_INLINE hn::Vec<DF> MulExact2(DF df, hn::Vec<DF> a, hn::Vec<DF> b, hn::Vec<DF> c) {
#if HWY_NATIVE_FMA
  const auto p = hn::Mul(a, b);
  const auto finite = hn::Lt(hn::Abs(p), hn::Set(df, HUGE_VALF));
  const auto e = hn::IfThenElseZero(finite, hn::MulSub(a, b, p));
  return hn::MulAdd(p, c, MulTail(df, e, c));
#else
  return MulTail(df, hn::Mul(a, b), c);
#endif
}

// The per-lane op on f32 vectors, x the pre-activation (Step has added x2
// already for kSum; x2 is otherwise the gate); `out`/`out2` get the results,
// `val` the forward's result (kValue: the forward's very formula, so the
// same bits as the forward op with the same Math).
template <class Math, unsigned F, class DF>
HWY_INLINE void Compute(DF df, hn::Vec<DF> x, hn::Vec<DF> x2, hn::Vec<DF> dy,
                        hn::Vec<DF>& out, hn::Vec<DF>& out2, hn::Vec<DF>& val) {
  if constexpr ((F & kBackward) == 0) {
    out = Math::Value(df, x);
    if constexpr ((F & kGated) != 0) out = MulTail(df, out, x2);
  } else if constexpr ((F & kGated) != 0) {
    hn::Vec<DF> value, grad;
    Math::ValueAndGrad(df, x, value, grad);
    out = MulExact2(df, dy, x2, grad);
    out2 = MulTail(df, dy, value);
    if constexpr ((F & kValue) != 0) val = MulTail(df, value, x2);
  } else if constexpr ((F & kValue) != 0) {
    hn::Vec<DF> grad;
    Math::ValueAndGrad(df, x, val, grad);
    out = MulTail(df, dy, grad);
  } else {
    out = MulTail(df, dy, Math::Grad(df, x));
  }
}

// Whether a step's two vectors hold the even and the odd positions of its
// 2N (BF16Pairs) rather than the first and second N. The dbias tile then
// holds each 2N chunk as N even-column sums followed by N odd-column sums;
// ColumnOrder puts them back in column order when the group's sums are added.
template <class S>
constexpr bool kSplitPairs = std::is_base_of_v<BF16Pairs, S>;

// Column order from a split pair: even holds positions 0, 2, ..., odd
// 1, 3, ...; c0 gets positions [0, N), c1 [N, 2N). Highway 1.0 interleaves
// within 128-bit blocks, so wider vectors reorder whole blocks after.
template <class DF>
HWY_INLINE void ColumnOrder(DF df, hn::Vec<DF> even, hn::Vec<DF> odd, hn::Vec<DF>& c0,
                            hn::Vec<DF>& c1) {
#if HWY_TARGET == HWY_SCALAR  // one lane: even and odd are columns 0 and 1
  (void)df;
  c0 = even;
  c1 = odd;
#else
  constexpr size_t kN = hn::MaxLanes(DF());
  static_assert(kN == 4 || kN == 8 || kN == 16, "vectors of 4, 8 or 16 f32 lanes");
  const auto lo = hn::InterleaveLower(df, even, odd);  // per block: e0 o0 e1 o1
  const auto hi = hn::InterleaveUpper(df, even, odd);  // per block: e2 o2 e3 o3
  if constexpr (kN == 4) {
    c0 = lo;
    c1 = hi;
  } else {
    // Blocks [lo0 lo1 hi0 hi1] and [lo2 lo3 hi2 hi3] (of 4 lanes); with 16
    // lanes the middle two blocks swap to give lo0 hi0 lo1 hi1, etc.
    c0 = hn::ConcatLowerLower(df, hi, lo);
    c1 = hn::ConcatUpperUpper(df, hi, lo);
    if constexpr (kN == 16) {
      alignas(64) static constexpr int32_t kSwap[16] = {0, 1, 2, 3, 8,  9,  10, 11,
                                                        4, 5, 6, 7, 12, 13, 14, 15};
      const auto idx = hn::SetTableIndices(df, kSwap);
      c0 = hn::TableLookupLanes(c0, idx);
      c1 = hn::TableLookupLanes(c1, idx);
    }
  }
#endif
}

// acc[0, lanes) = v when `first`, else acc += v.
template <class DF>
HWY_INLINE void Accumulate(DF df, hn::Vec<DF> v, float* acc, bool first) {
  hn::StoreU(first ? v : hn::Add(hn::LoadU(df, acc), v), df, acc);
}

// Positions per step: two f32 vectors.
template <class DF>
HWY_INLINE size_t StepLanes(DF df) {
  return 2 * hn::Lanes(df);
}

// A 16-bit storage's results at its overflow boundary. A result is an f32
// value within 2^-16 (relative) of the exact one (the ForBf16F16 math's
// 2^-17, plus the products' roundings); rounded to bf16/f16 directly, an f32
// value just at or above the boundary would be inf where the exact result
// is just below it, finite (double rounding). So results from the boundary
// up to 2^-16 above it are stored as the largest finite value, within one
// ulp of the exact result either way, and those further up as inf. Lanes
// are only changed in the rare step that has such a result. Not needed
// where a result cannot exceed its input (F = 0: gelu(x) of a stored x);
// Step skips it where the core bounds the result.
inline constexpr float kOverflowBand = 1.0f + 0x1p-16f;
template <class S, unsigned F, class DF>
HWY_INLINE void BoundaryToFinite(DF df, hn::Vec<DF>& a, hn::Vec<DF>& b) {
  if constexpr (sizeof(typename S::T) == 2 && F != 0) {
    const auto boundary = hn::Set(df, S::kOverflowBoundary);
    const auto over_a = hn::Ge(hn::Abs(a), boundary);
    const auto over_b = hn::Ge(hn::Abs(b), boundary);
    if (HWY_UNLIKELY(!hn::AllFalse(df, hn::Or(over_a, over_b)))) {
      const auto band = hn::Set(df, S::kOverflowBoundary * kOverflowBand);
      const auto largest = hn::Set(df, S::kLargestFinite);
      a = hn::IfThenElse(hn::And(over_a, hn::Lt(hn::Abs(a), band)),
                         hn::CopySign(largest, a), a);
      b = hn::IfThenElse(hn::And(over_b, hn::Lt(hn::Abs(b), band)),
                         hn::CopySign(largest, b), b);
    }
  }
}

// S::Store2 of a step's two result vectors at p, or when `stream` the same
// bytes by non-temporal stores: a step's results are a whole number of
// vectors' bytes in every storage (2N f32, or 2N 16-bit values: N u32), and
// p is vector-aligned (the caller checked the output's alignment; steps are
// 2N positions apart). The 16-bit storages round into an aligned stack copy
// first, then stream it.
template <class S, class DF>
HWY_INLINE void StoreOut(DF df, hn::Vec<DF> a, hn::Vec<DF> b, typename S::T* p,
                         bool stream) {
  // Streamed calls are memory-bound: the in-cache path gets the layout.
  if (HWY_LIKELY(!stream)) {
    S::Store2(df, a, b, p);
  } else if constexpr (std::is_same_v<typename S::T, float>) {
    hn::Stream(a, df, p);
    hn::Stream(b, df, p + hn::Lanes(df));
  } else {
    static_assert(sizeof(typename S::T) == 2, "16-bit storage");
    const hn::RebindToUnsigned<DF> du;
    HWY_ALIGN typename S::T rounded[kMaxStep];
    S::Store2(df, a, b, rounded);
    hn::Stream(hn::Load(du, reinterpret_cast<const uint32_t*>(rounded)), du,
               reinterpret_cast<uint32_t*>(p));
  }
}

// The FP status flags (fp_status.hpp) through which S's Store2Flagged
// reports the results of F that need the boundary rule, or 0: F's results
// never need it (f32; F = 0), or only a non-core step's do (the forward of
// add/bias_gelu: Step tests those), or S has no flagged store.
template <class S, unsigned F>
constexpr unsigned FlagsOfStore() {
  if constexpr (sizeof(typename S::T) == 2 && (F & (kGated | kBackward)) != 0)
    return S::kFlagsOfStore;
  return 0;
}
template <class S, unsigned F>
inline constexpr unsigned kFlagsOfStore = FlagsOfStore<S, F>();

// Stores a step's results at p: with the boundary rule applied when `check`
// (StoreOut), or, when the row detects through the flags (`flagged`, Row),
// by S::Store2Flagged, which raises them where the rule may apply (Row then
// reruns the block with the rule: Recheck).
template <class S, unsigned F, class DF>
HWY_INLINE void StoreResults(DF df, hn::Vec<DF> a, hn::Vec<DF> b, typename S::T* p,
                             bool stream, bool check, bool flagged) {
  if constexpr (kFlagsOfStore<S, F> != 0) {
    if (HWY_LIKELY(flagged)) {
      S::Store2Flagged(df, a, b, p);
      return;
    }
  }
  if (check) BoundaryToFinite<S, F>(df, a, b);
  StoreOut<S>(df, a, b, p, stream);
}

// The lanes of one vector that mask m selects, packed to the front of
// dst (a whole vector is written); returns how many.
#if HWY_TARGET == HWY_AVX2
// The 8-lane permutes of CompressTo and ExpandFrom for each mask (lane j
// in bit j), in static storage. Highway 1.0's AVX2 Compress keeps its
// table in a function-local constexpr array, which g++ 12 copies onto the
// stack (1 KiB, rep movsq) at every call: that made the deferred tail path
// slower than the blended math it replaces.
struct PermuteIndices8 {
  // compress[m][i]: the lane of the i-th set bit of m (0 past the last).
  int32_t compress[256][8];
  // expand[m][j]: where m has bit j, how many bits of m are below it (the
  // packed lane that lands in lane j), with the sign bit set (the blend's
  // mask); 0 elsewhere (blended out).
  int32_t expand[256][8];
  constexpr PermuteIndices8() : compress{}, expand{} {
    for (int m = 0; m < 256; ++m) {
      int32_t k = 0;
      for (int j = 0; j < 8; ++j) {
        if (((m >> j) & 1) == 0) continue;
        compress[m][k] = j;
        expand[m][j] = static_cast<int32_t>(0x80000000u | static_cast<uint32_t>(k++));
      }
    }
  }
};
alignas(32) inline constexpr PermuteIndices8 kPermuteIndices8{};

// The 8 lane indices of a table row.
HWY_INLINE __m256i LaneIndices8(const int32_t* row) {
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(row));
}
#endif

template <class DF>
HWY_INLINE size_t CompressTo(DF df, hn::Vec<DF> v, hn::Mask<DF> m, float* dst) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(DF()) == 16) {
    // The register form: some cores microcode vcompressps to memory
    // (docs/notes/kernel-decisions.md, "Compress and expand in registers").
    _mm512_storeu_ps(dst, _mm512_maskz_compress_ps(m.raw, v.raw));
    return static_cast<size_t>(__builtin_popcount(m.raw));
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(DF()) == 8) {
    const unsigned bits = static_cast<unsigned>(_mm256_movemask_ps(m.raw));
    const __m256i idx = LaneIndices8(kPermuteIndices8.compress[bits]);
    _mm256_storeu_ps(dst, _mm256_permutevar8x32_ps(v.raw, idx));
    return static_cast<size_t>(__builtin_popcount(bits));
  }
#endif
  hn::StoreU(hn::Compress(v, m), df, dst);
  return hn::CountTrue(df, m);
}

#if HWY_TARGET == HWY_AVX2
// The positions of the lanes CompressTo(df, v, m, ...) packs, `off` + the
// lane, to dst (the compress permute's own indices: the same table row).
template <class DF>
HWY_INLINE void CompressPositionsTo(hn::Mask<DF> m, uint32_t off, uint32_t* dst) {
  const unsigned bits = static_cast<unsigned>(_mm256_movemask_ps(m.raw));
  const __m256i idx = LaneIndices8(kPermuteIndices8.compress[bits]);
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                      _mm256_add_epi32(idx, _mm256_set1_epi32(static_cast<int>(off))));
}
#endif

// v with the lanes of mask m (bits, lane 0 in bit 0) replaced by src[0],
// src[1], ... in lane order (Highway 1.0 has no Expand); `used` += how many.
// Reads a whole vector at src.
template <class DF>
HWY_INLINE hn::Vec<DF> ExpandFrom(DF df, hn::Vec<DF> v, uint64_t bits, const float* src,
                                  size_t& used) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(DF()) == 16) {
    used += static_cast<size_t>(__builtin_popcount(static_cast<unsigned>(bits)));
    // The register form too: the empty asm keeps g++ from folding the load
    // into vexpandps from memory, which some cores microcode.
    __m512 packed = _mm512_loadu_ps(src);
    asm("" : "+v"(packed));
    return hn::Vec<DF>{
        _mm512_mask_expand_ps(v.raw, static_cast<__mmask16>(bits), packed)};
  }
#elif HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(DF()) == 8) {
    const unsigned m = static_cast<unsigned>(bits) & 0xFFu;
    used += static_cast<size_t>(__builtin_popcount(m));
    const __m256i idx = LaneIndices8(kPermuteIndices8.expand[m]);
    const __m256 packed = _mm256_permutevar8x32_ps(_mm256_loadu_ps(src), idx);
    return hn::Vec<DF>{_mm256_blendv_ps(v.raw, packed, _mm256_castsi256_ps(idx))};
  }
#endif
  HWY_ALIGN float lanes[kMaxF32Lanes];
  hn::Store(v, df, lanes);
  size_t k = 0;
  for (size_t j = 0; j < hn::Lanes(df); ++j)
    if ((bits >> j) & 1) lanes[j] = src[k++];
  used += k;
  return hn::Load(df, lanes);
}

// The lanes of m as bits (lane j in bit j).
template <class DF>
HWY_INLINE uint64_t MaskBits(DF df, hn::Mask<DF> m) {
#if HWY_TARGET == HWY_AVX2
  if constexpr (hn::MaxLanes(DF()) == 8) {
    (void)df;
    return static_cast<uint64_t>(_mm256_movemask_ps(m.raw));
  }
#elif HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  if constexpr (hn::MaxLanes(DF()) == 16) {
    (void)df;
    return static_cast<uint64_t>(m.raw);
  }
#endif
  uint8_t bytes[8] = {};
  hn::StoreMaskBits(df, m, bytes);
  uint64_t bits;
  std::memcpy(&bits, bytes, sizeof(bits));
  return bits;
}

// Steps per block: a step whose pair holds a tail lane (|x| >= the core's
// kTailStart, inf, NaN) stores its core results here instead of its outputs, and its
// tail lanes' inputs are packed densely; at the end of the block one pass runs the tail
// path over the packed lanes and the steps are completed (on AVX2's pipelined rows,
// during the next block instead: PipelineTails). So the tail costs per tail
// lane, not per pair that holds one. 32 steps: the block's fixed costs (the tail pass's
// constants, its last partial vector, two loop exits) over more pairs, measured against
// 8 and 16 steps with tools/fit/driver_ab (docs/notes/kernel-decisions.md,
// "kBlockSteps"). The block lives on the stack: about 24 KiB with AVX-512, 15 KiB
// with AVX2, whose pipelined rows keep two.
inline constexpr size_t kBlockSteps = 32;
// AVX-512 compresses and expands in one instruction each; AVX2 in a table
// load and a permute each (CompressTo, ExpandFrom above). Elsewhere
// Highway 1.0's Expand would go through the stack lane by lane, which made
// the deferral slower than the blended math in place (docs/notes/cpu-kernels-log.md,
// "Input scale: the negative tail per lane"), so other targets keep the
// blended math for a step with a tail lane.
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL || HWY_TARGET == HWY_AVX2
inline constexpr bool kDeferTails = true;
#else
inline constexpr bool kDeferTails = false;
#endif
// Row runs a block dense (Step's core_below) when the block before it packed
// at least one tail lane per kDenseSteps steps: at about that density the
// all-core branch mispredicts often enough to cost more than deferring
// every pair (docs/notes/simd-targets-log.md, "Dense blocks and scattered
// tails"). The first block of a row runs sparse. Only for AVX2's f32
// storage: AVX-512's dense blocks were slower than its sparse ones (the
// branch hints below lay the deferred path out of line), and without the
// hints its N(0, 1) rows, and AVX2's 16-bit ones, were slower.
#if HWY_TARGET == HWY_AVX2
template <class S>
constexpr bool kDenseBlocks = std::is_same_v<S, F32>;
#else
template <class S>
constexpr bool kDenseBlocks = false;
#endif
inline constexpr size_t kDenseSteps = 4;
// A pair with more than this many tail lanes (of 2 * lanes) runs the
// blended math in place instead (deferring costs a fixed amount per pair
// on top of the core; the blended math costs the tail for every lane, and
// the core for every vector not wholly in the tail): more than a vector's
// worth, or with AVX-512's wide core only a pair wholly in the tail. Its
// core reaches far enough that a pair of mostly tail lanes (x in
// [-10, -4]) still holds core lanes, and the blended math then ran both
// paths on both vectors.
template <class DF>
constexpr size_t BlendAbove(DF) {
#if HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL
  return 2 * hn::MaxLanes(DF()) - 1;
#else
  return hn::MaxLanes(DF());
#endif
}
// A deferred pair runs the core on its tail lanes too (their results are
// replaced), so that it shares one core computation with the all-core
// pairs. Below this |x| that is quiet; from it on (and for inf and NaN)
// AVX2's index conversion would raise the invalid flag and the
// polynomials overflow, which a caller may have unmasked: such a pair
// runs the blended math, whose core sees core lanes only. (AVX-512's core
// caps t itself: Math::Quiet.)
inline constexpr float kDeferBelow = 65536.0f;

// f32 outputs without dbias: a deferred step stores its core results as
// any step does, and FinishDeferred patches its tail lanes in place (the
// outputs are the steps' own positions). Otherwise (a rounding storage,
// the dbias sums) the core results wait in Deferred::out/out2/val.
// Not when streaming either (PatchOutputs): a patch would read back a
// streamed line.
template <class S, unsigned F>
constexpr bool kPatchOutputs = std::is_same_v<S, F32> && (F & kAcc) == 0;
template <class S, unsigned F>
HWY_INLINE bool PatchOutputs(const Streams<S>& s) {
  return kPatchOutputs<S, F> && !s.stream;
}
// Patched outputs on AVX2: the tail results go straight to their
// positions, one scalar store a tail lane (Deferred::off), instead of a
// reload, an expand permute and a blend a vector: the expand's fixed cost
// a pair was most of the deferral's, while a pair holds few tail lanes
// (docs/notes/simd-targets-log.md, "Dense blocks and scattered tails").
// AVX-512 expands in one instruction and keeps it.
#if HWY_TARGET == HWY_AVX2
inline constexpr bool kScatterTails = true;
#else
inline constexpr bool kScatterTails = false;
#endif

// Pipelined tails (AVX2, f32 outputs patched in place): Row runs the tail
// path over the block before this one a vector at a time between the steps
// of this one, so that its FMAs share the cycles of the core's lookups;
// its lanes were packed a block earlier (no store to forward), and the
// branch is taken for the first vectors of each block, then not.
template <class S, unsigned F, class DF>
constexpr bool PipelineTails() {
  return kScatterTails && hn::MaxLanes(DF()) == 8 && kPatchOutputs<S, F>;
}

struct Deferred {
  size_t steps = 0;  // deferred steps
  size_t lanes = 0;  // packed tail lanes
  size_t pos[kBlockSteps];
  uint64_t bits[kBlockSteps][2];  // tail lanes of the step's two vectors
  // The steps' core results (garbage in tail lanes), f32.
  HWY_ALIGN float out[kBlockSteps][kMaxStep];
  HWY_ALIGN float out2[kBlockSteps][kMaxStep];
  HWY_ALIGN float val[kBlockSteps][kMaxStep];  // kValue
  // Packed tail lanes: x (pre-activation), the gate, dy; then the results
  // (out over x, out2 over x2, val over dy). One spare vector for the compress's
  // whole-vector write and the last partial vector.
  HWY_ALIGN float x[kBlockSteps * kMaxStep + kMaxF32Lanes];
  HWY_ALIGN float x2[kBlockSteps * kMaxStep + kMaxF32Lanes];
  HWY_ALIGN float dy[kBlockSteps * kMaxStep + kMaxF32Lanes];
  // kScatterTails: each packed lane's position, from `base` (the block's
  // first deferred step: under kBlockSteps steps on); one entry elsewhere.
  size_t base = 0;
  size_t done = 0;  // packed lanes finished by TailVector
  HWY_ALIGN uint32_t off[kScatterTails ? kBlockSteps * kMaxStep + kMaxF32Lanes : 1];
};

// Streamed runs are calls too large for the cache (plan.hpp), whose inputs
// come from memory: a step asks for its input lines kPrefetchBytes ahead,
// the distance that measured fastest among 1-16 KiB (docs/notes/kernel-decisions.md,
// "kPrefetchBytes"). Prefetches past the end of a stream are dropped by the
// hardware, never a fault.
inline constexpr size_t kPrefetchBytes = 4096;
template <class S>
HWY_INLINE void PrefetchAhead(const typename S::T* p) {
  using T = typename S::T;
  const T* ahead = p + kPrefetchBytes / sizeof(T);
  hwy::Prefetch(ahead);
  // A step of f32 spans two 64-byte lines with AVX-512 (one of 16-bit values).
  if constexpr (kMaxStep * sizeof(T) > 64) hwy::Prefetch(ahead + 64 / sizeof(T));
}

// One full step of positions [i, i + StepLanes): the core for every lane;
// a pair with a tail lane is deferred (FinishDeferred completes it).
// `flagged`: results stored by StoreResults' flagged store (Row).
// `dense`: a block expected to hold tail lanes in most pairs (Row,
// kDenseSteps), where every pair is deferred (a pair without tail lanes
// packs none), so that the first test's branch, unpredictable at that
// density as an all-core test, goes one way. `core_below`: that test's
// bound on |x|, Math::kTailStart; kDeferBelow when dense (the pairs the
// core runs on quietly, whatever their number of tail lanes).
template <class Math, class S, unsigned F, class DF>
HWY_INLINE void Step(DF df, const Streams<S>& s, size_t i, Deferred& def, bool flagged,
                     bool dense, hn::Vec<DF> core_below) {
  constexpr bool kTwo = (F & (kSum | kGated)) != 0;
  constexpr bool kBwd = (F & kBackward) != 0;
  constexpr bool kOut2 = (F & kGated) != 0 && kBwd;
  constexpr bool kVal = (F & kValue) != 0 && kBwd;
  // Two f32 vectors per step (Load2/Store2 of the storage): one tail check
  // for both, and bf16 converts them together. Named pairs, not arrays: g++
  // 12 keeps a 2-iteration loop over arrays rolled and round-trips every
  // vector through the stack.
  hn::Vec<DF> xa, xb, x2a, x2b, dya, dyb, outa, outb, out2a, out2b, vala, valb;
  if (s.stream) {
    PrefetchAhead<S>(s.x + i);
    if constexpr (kTwo) PrefetchAhead<S>(s.x2 + i);
    if constexpr (kBwd) PrefetchAhead<S>(s.dy + i);
  }
  S::Load2(df, s.x + i, xa, xb);
  if constexpr (kTwo) S::Load2(df, s.x2 + i, x2a, x2b);
  if constexpr (kBwd) S::Load2(df, s.dy + i, dya, dyb);
  if constexpr ((F & kSum) != 0) {
    xa = hn::Add(xa, x2a);
    xb = hn::Add(xb, x2b);
  }
  using Core = typename Math::CoreOnly;
  // One tail check for both vectors (a branch per vector measured slower).
  // A pair with few tail lanes runs the core and is deferred (its own
  // branch: one core computation shared with the all-core pairs measured
  // slower at x ~ N(0, 1); docs/notes/kernel-decisions.md, "One tail check a pair");
  // one mostly in the tail runs the blended math, which skips the core for a vector
  // wholly in the tail.
  bool core = true;
  [[maybe_unused]] bool defer = false;
  if (HWY_LIKELY(Math::AllCore(df, xa, xb, core_below))) {
    defer = dense;
    Compute<Core, F>(df, xa, x2a, dya, outa, out2a, vala);
    Compute<Core, F>(df, xb, x2b, dyb, outb, out2b, valb);
  } else if (!kDeferTails ||
             hn::CountTrue(df, Math::IsTail(df, xa)) +
                     hn::CountTrue(df, Math::IsTail(df, xb)) >
                 BlendAbove(df) ||
             !Math::Quiet(df, xa, xb, kDeferBelow)) {
    core = false;
    Compute<Math, F>(df, xa, x2a, dya, outa, out2a, vala);
    Compute<Math, F>(df, xb, x2b, dyb, outb, out2b, valb);
  } else {
    defer = true;
    Compute<Core, F>(df, xa, x2a, dya, outa, out2a, vala);
    Compute<Core, F>(df, xb, x2b, dyb, outb, out2b, valb);
  }
  if constexpr (kDeferTails) {
    if (HWY_UNLIKELY(defer)) {
      const auto ta = Math::IsTail(df, xa), tb = Math::IsTail(df, xb);
      const size_t k = def.steps++;
      const size_t N = hn::Lanes(df);
      def.pos[k] = i;
      const bool patch = PatchOutputs<S, F>(s);
      if (!patch) {
        hn::Store(outa, df, def.out[k]);
        hn::Store(outb, df, def.out[k] + N);
        if constexpr (kOut2) {
          hn::Store(out2a, df, def.out2[k]);
          hn::Store(out2b, df, def.out2[k] + N);
        }
        if constexpr (kVal) {
          hn::Store(vala, df, def.val[k]);
          hn::Store(valb, df, def.val[k] + N);
        }
      }
      const size_t at = def.lanes;
      size_t na = CompressTo(df, xa, ta, def.x + at);
      if constexpr ((F & kGated) != 0) CompressTo(df, x2a, ta, def.x2 + at);
      if constexpr (kBwd) CompressTo(df, dya, ta, def.dy + at);
      size_t nb = CompressTo(df, xb, tb, def.x + at + na);
      if constexpr ((F & kGated) != 0) CompressTo(df, x2b, tb, def.x2 + at + na);
      if constexpr (kBwd) CompressTo(df, dyb, tb, def.dy + at + na);
      def.lanes = at + na + nb;
      // Where FinishDeferred finds the lanes again: their positions
      // (kScatterTails, patched outputs), or the steps' masks.
      bool scatter = false;
#if HWY_TARGET == HWY_AVX2
      if constexpr (PipelineTails<S, F, DF>()) {
        if (patch) {
          if (k == 0) def.base = i;
          const uint32_t off = static_cast<uint32_t>(i - def.base);
          CompressPositionsTo<DF>(ta, off, def.off + at);
          CompressPositionsTo<DF>(tb, off + static_cast<uint32_t>(N),
                                  def.off + at + na);
          scatter = true;
        }
      }
#endif
      if (!scatter) {
        def.bits[k][0] = MaskBits(df, ta);
        def.bits[k][1] = MaskBits(df, tb);
      }
      if (!patch) return;
    }
  }
  // The forward's value of an all-core pair is below 4: the boundary
  // check is for the other results (and every result of FinishDeferred).
  constexpr bool kOutCoreBounded = (F & (kGated | kBackward)) == 0;
  constexpr bool kValCoreBounded = (F & kGated) == 0;
  // dbias (kAcc) sums outa, outb: the f32 results, not the stored ones
  // (StoreResults takes copies).
  StoreResults<S, F>(df, outa, outb, s.out + i, s.stream, !(kOutCoreBounded && core),
                     flagged);
  if constexpr (kOut2)
    StoreResults<S, F>(df, out2a, out2b, s.out2 + i, s.stream, true, flagged);
  if constexpr (kVal) {
    StoreResults<S, F>(df, vala, valb, s.val + i, s.stream, !(kValCoreBounded && core),
                       flagged);
  }
  // acc is null without kAcc, and in a block that Row runs again (its sums
  // are in already).
  if constexpr ((F & kAcc) != 0) {
    if (s.acc != nullptr) {
      // Split pairs (kSplitPairs) land as even sums, then odd sums.
      Accumulate(df, outa, s.acc + i, s.acc_first);
      Accumulate(df, outb, s.acc + i + hn::Lanes(df), s.acc_first);
    }
  }
}

// The packed lanes' spare lanes up to a whole vector: a benign tail input.
template <class DF>
HWY_INLINE void PadPacked(DF df, Deferred& def) {
  hn::StoreU(hn::Set(df, -4.0f), df, def.x + def.lanes);
  hn::StoreU(hn::Zero(df), df, def.x2 + def.lanes);
  hn::StoreU(hn::Zero(df), df, def.dy + def.lanes);
}

// The tail path over the vector of def's packed lanes at j (every lane is
// in the tail, so the same per-lane op as Compute<Math> gives there), its
// results over its inputs: out over x, out2 over x2, val over dy.
template <class Math, unsigned F, class DF>
HWY_INLINE void TailInPlace(DF df, Deferred& def, size_t j) {
  hn::Vec<DF> out, out2, val;
  Compute<typename Math::TailOnly, F>(df, hn::Load(df, def.x + j),
                                      hn::Load(df, def.x2 + j),
                                      hn::Load(df, def.dy + j), out, out2, val);
  hn::Store(out, df, def.x + j);
  if constexpr ((F & kGated) != 0 && (F & kBackward) != 0)
    hn::Store(out2, df, def.x2 + j);
  if constexpr ((F & kValue) != 0 && (F & kBackward) != 0)
    hn::Store(val, df, def.dy + j);
}

// The tail path over the next vector of def's packed lanes, each result
// stored to its position (Deferred::off).
template <class Math, class S, unsigned F, class DF>
HWY_INLINE void TailVector(DF df, const Streams<S>& s, Deferred& def) {
  constexpr bool kOut2 = (F & kGated) != 0 && (F & kBackward) != 0;
  constexpr bool kVal = (F & kValue) != 0 && (F & kBackward) != 0;
  const size_t N = hn::Lanes(df), j = def.done;
  TailInPlace<Math, F>(df, def, j);
  const size_t end = def.lanes - j < N ? def.lanes : j + N;
  for (size_t q = j; q < end; ++q) s.out[def.base + def.off[q]] = def.x[q];
  if constexpr (kOut2)
    for (size_t q = j; q < end; ++q) s.out2[def.base + def.off[q]] = def.x2[q];
  if constexpr (kVal)
    for (size_t q = j; q < end; ++q) s.val[def.base + def.off[q]] = def.dy[q];
  def.done = j + N;
}

// Finishes every packed lane of def (TailVector) and empties it.
template <class Math, class S, unsigned F, class DF>
HWY_INLINE void FinishPipelined(DF df, const Streams<S>& s, Deferred& def) {
  while (def.done < def.lanes) TailVector<Math, S, F>(df, s, def);
  def.steps = 0;
  def.lanes = 0;
  def.done = 0;
}

// The tail path over the packed lanes (TailInPlace), then each deferred
// step gets its tail lanes' results put back and stores as Step would have.
template <class Math, class S, unsigned F, class DF>
HWY_NOINLINE void FinishDeferred(DF df, const Streams<S>& s, Deferred& def) {
  constexpr bool kOut2 = (F & kGated) != 0 && (F & kBackward) != 0;
  constexpr bool kVal = (F & kValue) != 0 && (F & kBackward) != 0;
  const size_t N = hn::Lanes(df);
  PadPacked(df, def);
  for (size_t j = 0; j < def.lanes; j += N) TailInPlace<Math, F>(df, def, j);
  size_t used = 0;
  for (size_t k = 0; k < def.steps; ++k) {
    const size_t i = def.pos[k];
    const size_t at = used;
    const bool patch = PatchOutputs<S, F>(s);
    const float* core = patch ? reinterpret_cast<const float*>(s.out + i) : def.out[k];
    const auto outa = ExpandFrom(df, hn::LoadU(df, core), def.bits[k][0], def.x + used,
                                 used);
    auto outb = ExpandFrom(df, hn::LoadU(df, core + N), def.bits[k][1], def.x + used,
                           used);
    auto sa = outa, sb = outb;  // dbias sums outa, outb (Step says why)
    BoundaryToFinite<S, F>(df, sa, sb);
    StoreOut<S>(df, sa, sb, s.out + i, s.stream);
    if constexpr (kOut2) {
      size_t used2 = at;
      const float* core2 = patch ? reinterpret_cast<const float*>(s.out2 + i)
                                 : def.out2[k];
      auto out2a = ExpandFrom(df, hn::LoadU(df, core2), def.bits[k][0], def.x2 + used2,
                              used2);
      auto out2b = ExpandFrom(df, hn::LoadU(df, core2 + N), def.bits[k][1],
                              def.x2 + used2, used2);
      BoundaryToFinite<S, F>(df, out2a, out2b);
      StoreOut<S>(df, out2a, out2b, s.out2 + i, s.stream);
    }
    if constexpr (kVal) {
      size_t used3 = at;
      const float* core3 = patch ? reinterpret_cast<const float*>(s.val + i)
                                 : def.val[k];
      auto vala = ExpandFrom(df, hn::LoadU(df, core3), def.bits[k][0], def.dy + used3,
                             used3);
      auto valb = ExpandFrom(df, hn::LoadU(df, core3 + N), def.bits[k][1],
                             def.dy + used3, used3);
      BoundaryToFinite<S, F>(df, vala, valb);
      StoreOut<S>(df, vala, valb, s.val + i, s.stream);
    }
    if constexpr ((F & kAcc) != 0) {
      if (s.acc != nullptr) {  // as in Step
        Accumulate(df, outa, s.acc + i, s.acc_first);
        Accumulate(df, outb, s.acc + i + N, s.acc_first);
      }
    }
  }
  def.steps = 0;
  def.lanes = 0;
}

// Copies the first rem elements of src into a zero-padded vector-sized
// buffer (nothing when src is null) and returns the buffer, or null.
template <class T>
HWY_INLINE T* Stage(const T* src, T* buf, size_t rem) {
  if (src == nullptr) return nullptr;
  for (size_t k = 0; k < kMaxStep; ++k) buf[k] = T();
  std::memcpy(buf, src, rem * sizeof(T));
  return buf;
}

// Whether any output stream of s overlaps an input stream over n positions
// (an in-place call).
template <class S>
HWY_INLINE bool OutputsOverlapInputs(const Streams<S>& s, size_t n) {
  using T = typename S::T;
  const uintptr_t bytes = n * sizeof(T);
  for (const T* out : {s.out, s.out2, s.val}) {
    for (const T* in : {s.dy, s.x, s.x2}) {
      if (out == nullptr || in == nullptr) continue;
      const uintptr_t o = reinterpret_cast<uintptr_t>(out);
      const uintptr_t p = reinterpret_cast<uintptr_t>(in);
      if (o < p + bytes && p < o + bytes) return true;
    }
  }
  return false;
}

// The final partial step, positions [i, i + rem) of a Row: zero-padded
// stack copies of its inputs, which Row then runs through the same Step as
// every other step (one instance of Step per Row), and stack outputs, of
// which only rem elements are copied back. Inputs are all staged before any
// output is copied back (in place stays correct). With split pairs the
// dbias tile's chunk is a whole step's sums (the odd ones start N floats
// in), so all of it goes in and out: the tile has room for every chunk it
// starts (BiasBackwardRows).
template <class S>
struct TailCopies {
  using T = typename S::T;
  HWY_ALIGN T dy[kMaxStep], x[kMaxStep], x2[kMaxStep];
  HWY_ALIGN T out[kMaxStep], out2[kMaxStep], val[kMaxStep];
  HWY_ALIGN float acc[kMaxStep];

  // The streams of the staged step (plain stores: streaming is for the
  // outputs); nacc: how many sums of acc it covers.
  Streams<S> Stage(const Streams<S>& s, size_t i, size_t rem, size_t nacc) {
    auto at = [i](auto* p) { return p ? p + i : p; };
    return {detail::Stage(at(s.dy), dy, rem),
            detail::Stage(at(s.x), x, rem),
            detail::Stage(at(s.x2), x2, rem),
            s.out ? out : nullptr,
            s.out2 ? out2 : nullptr,
            detail::Stage(at(s.acc), acc, nacc),
            s.val ? val : nullptr,
            /*stream=*/false,
            s.acc_first};
  }

  // Only the outputs the flags write (g++ otherwise warns that out2 or val
  // may be read uninitialized where the stream is null anyway).
  template <unsigned F>
  void CopyBack(const Streams<S>& s, size_t i, size_t rem, size_t nacc) const {
    constexpr bool kBwd = (F & kBackward) != 0;
    if (s.out) std::memcpy(s.out + i, out, rem * sizeof(T));
    if constexpr (kBwd && (F & kGated) != 0)
      if (s.out2) std::memcpy(s.out2 + i, out2, rem * sizeof(T));
    if constexpr (kBwd && (F & kValue) != 0)
      if (s.val) std::memcpy(s.val + i, val, rem * sizeof(T));
    if (s.acc) std::memcpy(s.acc + i, acc, nacc * sizeof(float));
  }
};

}  // namespace detail

// The math of a Row: the form's cheaper ForBf16F16 core when the results
// are stored as bf16 or f16 (their 1-ulp contract leaves room), except when
// dx also feeds the dbias sums, whose 2^-20 bound is relative to the f32 dx.
template <class Math, bool kBf16F16>
struct MathForT {
  using type = Math;
};
template <class Math>
struct MathForT<Math, true> {
  using type = typename Math::ForBf16F16;
};
template <class Math, class S, unsigned F>
using MathFor =
    typename MathForT<Math, sizeof(typename S::T) == 2 && (F & kDbias) == 0>::type;

// Streamed (non-temporal) stores need vector-aligned outputs. How many
// leading positions of s to run with plain stores so that every output
// (out, out2, val; null ones aside) is aligned after them, or -1 when no
// count aligns them all (outputs at different offsets from an alignment
// boundary, or not aligned to their element size).
template <class S>
HWY_INLINE int64_t StreamHead(const Streams<S>& s) {
  using T = typename S::T;
  constexpr uintptr_t kAlign = detail::kMaxF32Lanes * sizeof(float);
  int64_t head = -1;
  for (const T* p : {s.out, s.out2, s.val}) {
    if (p == nullptr) continue;
    const uintptr_t off = (kAlign - reinterpret_cast<uintptr_t>(p) % kAlign) % kAlign;
    if (off % sizeof(T) != 0) return -1;
    const int64_t h = static_cast<int64_t>(off / sizeof(T));
    if (head >= 0 && h != head) return -1;
    head = h;
  }
  return head < 0 ? 0 : head;
}

// s with every stream advanced by k positions, stored as `stream` says.
template <class S>
HWY_INLINE Streams<S> Advance(const Streams<S>& s, size_t k, bool stream) {
  const auto at = [k](auto* p) { return p ? p + k : p; };
  return {at(s.dy),  at(s.x),   at(s.x2), at(s.out),  at(s.out2),
          at(s.acc), at(s.val), stream,   s.acc_first};
}

// Runs the op over positions [0, count) of the streams, in blocks of
// kBlockSteps steps (the deferred tail lanes are finished per block, or
// pipelined into the next: PipelineTails); the
// last, partial step runs on stack copies (TailCopies) through the same loop.
//
// The overflow-boundary rule (BoundaryToFinite) on 16-bit results: where S
// has flagged stores (kFlagsOfStore) and nothing stands against them, the
// row's steps store without testing their results and the row reads the FP
// status flags after each block; a block that raised them (a result at the
// boundary, or a false alarm: an operation of the block on a subnormal, say)
// runs again through the same steps, testing every result (dbias's sums,
// in already, are left alone). Otherwise every step tests its results.
// Against the flags: streamed stores (a rerun would reread streamed lines),
// outputs over inputs (in place: the inputs are gone), flags not usable
// (fp_status.hpp), rows shorter than a block (the status register's reads
// cost more than the tests they save: bias rows of 64 columns).
// In every case each result gets the same bits.
template <class Math, class S, unsigned F>
HWY_INLINE void Row(size_t count, const Streams<S>& s) {
  using M = MathFor<Math, S, F>;
  constexpr unsigned kFlags = detail::kFlagsOfStore<S, F>;
  const hn::ScalableTag<float> df;
  const size_t N = detail::StepLanes(df);
  const size_t full = count - count % N, rem = count - full;
  const size_t nacc = detail::kSplitPairs<S> ? N : rem;
  const bool flagged = kFlags != 0 && full >= detail::kBlockSteps * N && !s.stream &&
                       FpFlagsUsable(kFlags) && !detail::OutputsOverlapInputs(s, count);
  // The caller's flags: cleared for the row, set again after it.
  const unsigned callers = flagged ? TakeFpFlags(kFlags) : 0;
  // Pipelined tails: `now` packs this block's tail lanes while `prev`'s
  // are finished between its steps (PipelineTails); otherwise one.
  constexpr bool kPipe = detail::PipelineTails<S, F, decltype(df)>();
  detail::Deferred deferred[kPipe ? 2 : 1];
  detail::Deferred& def = deferred[0];
  detail::Deferred* now = &deferred[0];
  detail::Deferred* prev = &deferred[kPipe ? 1 : 0];
  detail::TailCopies<S> tail;
  Streams<S> cur = s;
  size_t i = 0, end = full;
  bool again = false;    // running a flagged block again
  bool dense = false;    // Step's dense
  float* acc = nullptr;  // cur.acc, set aside while again
  for (bool staged = false;; staged = true) {
    while (i < end) {
      const size_t steps = (end - i) / N < detail::kBlockSteps ? (end - i) / N
                                                               : detail::kBlockSteps;
      const size_t block = i;
      const auto core_below = hn::Set(df, dense ? detail::kDeferBelow : M::kTailStart);
      if constexpr (kPipe) {
        if (detail::PatchOutputs<S, F>(cur)) {
          for (size_t k = 0; k < steps; ++k, i += N) {
            detail::Step<M, S, F>(df, cur, i, *now, flagged && !again, dense,
                                  core_below);
            if (prev->done < prev->lanes) detail::TailVector<M, S, F>(df, cur, *prev);
          }
          detail::FinishPipelined<M, S, F>(df, cur, *prev);
          dense = detail::kDenseBlocks<S> && now->lanes * detail::kDenseSteps >= steps;
          if (now->steps != 0) {
            detail::PadPacked(df, *now);
            std::swap(now, prev);
          }
          continue;
        }
      }
      for (size_t k = 0; k < steps; ++k, i += N)
        detail::Step<M, S, F>(df, cur, i, def, flagged && !again, dense, core_below);
      const bool next_dense = detail::kDenseBlocks<S> &&
                              def.lanes * detail::kDenseSteps >= steps;
      if (def.steps != 0) detail::FinishDeferred<M, S, F>(df, cur, def);
      dense = next_dense;
      if constexpr (kFlags != 0) {
        if (again) {
          again = false;
          cur.acc = acc;
          TakeFpFlags(kFlags);  // the rerun's own
        } else if (flagged && HWY_UNLIKELY(TakeFpFlags(kFlags) != 0)) {
          again = true;
          acc = cur.acc;
          cur.acc = nullptr;
          i = block;
        }
      }
    }
    if constexpr (kPipe) detail::FinishPipelined<M, S, F>(df, cur, *prev);
    if (staged || rem == 0) break;
    cur = tail.Stage(s, full, rem, nacc);
    i = 0;
    end = N;
  }
  if (rem != 0) tail.template CopyBack<F>(s, full, rem, nacc);
  if (flagged) PutBackFpFlags(callers);
}

// Row<Math, S, F>, or with non-temporal stores when `stream` asks for them
// (st.stream is ignored):
// the positions before the outputs' first vector boundary with plain
// stores, the rest streamed (StreamHead: plain stores throughout when the
// outputs cannot all be aligned). The caller fences once after its last
// row (FenceStreamed), so that the op layer's join sees the stores.
template <class Math, class S, unsigned F>
HWY_INLINE void RowMaybeStreamed(bool stream, size_t n, const Streams<S>& st) {
  int64_t head = stream ? StreamHead(st) : -1;
  // Split pairs lay a dbias tile out per whole step from the row's first
  // column (ColumnOrder): no head there.
  if constexpr (detail::kSplitPairs<S> && (F & kAcc) != 0) {
    if (head > 0) head = -1;
  }
  if (head < 0 || static_cast<size_t>(head) >= n) {
    Row<Math, S, F>(n, Advance(st, 0, false));
    return;
  }
  const size_t h = static_cast<size_t>(head);
  if (h != 0) Row<Math, S, F>(h, Advance(st, 0, false));
  Row<Math, S, F>(n - h, Advance(st, h, true));
}

// The fence after a kernel's RowMaybeStreamed calls (non-temporal stores
// are weakly ordered).
HWY_INLINE void FenceStreamed(bool stream) {
  if (stream) hwy::FlushStream();
}

// bias_gelu_backward over `rows` rows of `cols` columns, rows `stride`
// apart in dy, x and dx (bias and dbias: `cols`): dx of every row, and
// dbias[j] += the f32 sum of dx[., j] over each group of kDbiasGroup
// consecutive rows, (((r0 + r1) + r2) + r3), the group sums added in double
// in row order. The group sum lives in a stack tile of f32 (one load, add
// and store per vector) instead of double sums per row (a convert, a load,
// an add and a store per half vector: a large share of the kernel,
// docs/notes/kernel-decisions.md, "The dbias group tile in f32"). The f32 sum of 4 adds
// at most 3 * 2^-24 * sum|dx|, well under the op's 2^-20. (F32 storage takes the same
// sums from dx itself: kDbiasReadBackTile below.)
inline constexpr size_t kDbiasGroup = 4;
inline constexpr size_t kDbiasTile = 4096;  // columns: 16 KiB of f32 sums
// The partial step's split-pair chunk (a whole step of sums, TailCopies)
// fits in the tile.
static_assert(kDbiasTile % detail::kMaxStep == 0, "tile of whole steps");

// sums[0, nc) += (or = when kFirst) the tile's group sums acc, in double;
// with split pairs, acc's 2N chunks are even sums then odd sums.
template <class S, bool kFirst>
HWY_INLINE void AddGroupSums(size_t nc, const float* acc, double* sums) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  if constexpr (detail::kSplitPairs<S>) {
    hn::Vec<decltype(df)> c0, c1;
    for (; j + 2 * N <= nc; j += 2 * N) {
      detail::ColumnOrder(df, hn::Load(df, acc + j), hn::Load(df, acc + j + N), c0, c1);
      detail::AddToSums<kFirst>(df, c0, sums + j);
      detail::AddToSums<kFirst>(df, c1, sums + j + N);
    }
    if (j < nc) {  // a partial chunk: its whole step of sums, then nc - j
      // Zeroed: g++ does not see ColumnOrder fill it on SCALAR (maybe-uninitialized).
      HWY_ALIGN float ordered[detail::kMaxStep] = {};
      detail::ColumnOrder(df, hn::Load(df, acc + j), hn::Load(df, acc + j + N), c0, c1);
      hn::Store(c0, df, ordered);
      hn::Store(c1, df, ordered + N);
      for (size_t k = 0; j + k < nc; ++k)
        sums[j + k] = kFirst ? static_cast<double>(ordered[k])
                             : sums[j + k] + static_cast<double>(ordered[k]);
    }
  } else {
    for (; j + N <= nc; j += N)
      detail::AddToSums<kFirst>(df, hn::Load(df, acc + j), sums + j);
    for (; j < nc; ++j)
      sums[j] = kFirst ? static_cast<double>(acc[j])
                       : sums[j] + static_cast<double>(acc[j]);
  }
}

// F32 storage stores dx as the very f32 values the sums take, so a group's
// sums are read back from its rows of dx (still in cache) after they are
// written, (((r0 + r1) + r2) + r3) in registers, instead of a tile of sums
// loaded, added and stored per row: the same sums, bit for bit, and faster
// at every row width measured (docs/notes/kernel-decisions.md, "dbias read back from
// dx"). The tile keeps a group's rows of dx (4 x 64 KiB) in L2 until read back; 4096
// columns measured slower at 65536 columns (more, shorter strided chunks), whole rows
// of 64K columns would not stay in L2.
inline constexpr size_t kDbiasReadBackTile = 16384;

// sums[0, nc) += (or = when kFirst) the f32 sums (((r0 + r1) + r2) + ...)
// of the nr rows of dx (`stride` apart), added in double.
template <bool kFirst>
HWY_INLINE void AddRowSums(size_t nr, size_t nc, const float* dx, size_t stride,
                           double* sums) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t j = 0;
  for (; j + N <= nc; j += N) {
    auto v = hn::LoadU(df, dx + j);
    for (size_t r = 1; r < nr; ++r) v = hn::Add(v, hn::LoadU(df, dx + r * stride + j));
    detail::AddToSums<kFirst>(df, v, sums + j);
  }
  for (; j < nc; ++j) {
    float v = dx[j];
    for (size_t r = 1; r < nr; ++r) v += dx[r * stride + j];
    sums[j] = kFirst ? static_cast<double>(v) : sums[j] + static_cast<double>(v);
  }
}

// kExtra: 0, or kValue to also store y = gelu(x + bias) (rows `stride`
// apart). `stream`: non-temporal stores of dx and y (RowMaybeStreamed; the
// caller fences).
template <class Math, class S, unsigned kExtra = 0>
HWY_INLINE void BiasBackwardRows(size_t rows, size_t cols, size_t stride,
                                 const typename S::T* dy, const typename S::T* x,
                                 const typename S::T* bias, typename S::T* dx,
                                 double* dbias, typename S::T* y, bool stream) {
  constexpr unsigned F = kSum | kBackward | kDbias | kExtra;
  // F32: the group's sums read back from dx (kDbiasReadBackTile says why);
  // bf16/f16 round dx, so their f32 values are summed in a tile as made.
  // Streamed dx is not in cache to read back: f32 sums in the tile too
  // (the same f32 additions in the same order, so the same bits).
  const bool read_back = std::is_same_v<S, F32> && !stream;
  const size_t tile = read_back ? kDbiasReadBackTile : kDbiasTile;
  HWY_ALIGN float acc[kDbiasTile];
  for (size_t c0 = 0; c0 < cols; c0 += tile) {
    const size_t nc = cols - c0 < tile ? cols - c0 : tile;
    for (size_t r0 = 0; r0 < rows; r0 += kDbiasGroup) {
      const size_t end = rows - r0 < kDbiasGroup ? rows : r0 + kDbiasGroup;
      for (size_t r = r0; r < end; ++r) {
        const size_t o = r * stride + c0;
        if (read_back) {
          Row<Math, S, F>(nc, {dy + o, x + o, bias + c0, dx + o, nullptr, nullptr,
                               y ? y + o : nullptr});
        } else {
          Streams<S> s{dy + o,  x + o, bias + c0,           dx + o,
                       nullptr, acc,   y ? y + o : nullptr, false,
                       r == r0};
          RowMaybeStreamed<Math, S, F | kAcc>(stream, nc, s);
        }
      }
      // The first group's sums are stored: no zeroing pass.
      if (read_back) {
        if constexpr (std::is_same_v<S, F32>) {
          const float* group = dx + r0 * stride + c0;
          if (r0 == 0) AddRowSums<true>(end - r0, nc, group, stride, dbias + c0);
          else AddRowSums<false>(end - r0, nc, group, stride, dbias + c0);
        }
      } else {
        if (r0 == 0) AddGroupSums<S, true>(nc, acc, dbias + c0);
        else AddGroupSums<S, false>(nc, acc, dbias + c0);
      }
    }
  }
}

// Calls fn(Math{}) with the math struct of the form.
template <class Fn>
HWY_INLINE void WithForm(Approx form, Fn&& fn) {
  ::gelu::math::visit_form(
      form, [&](auto f) { fn(typename FormMath<decltype(f)::value>::type()); });
}

// Calls fn(Storage{}) with the storage tag of the dtype.
template <class Fn>
HWY_INLINE void WithDType(DType t, Fn&& fn) {
  switch (t) {
    case DType::f32: return fn(F32());
    case DType::bf16:
#ifdef GELU_CPU_HAVE_BF16_ROUNDING_INSN
      if (use_avx512_bf16()) return fn(BF16PairsAvx512Bf16());
#endif
      return fn(BF16Pairs());
    case DType::f16: return fn(F16());
  }
}

// Calls fn(Math{}, Storage{}) for the form and dtype: one switch per call.
template <class Fn>
HWY_INLINE void WithFormAndDType(Approx form, DType t, Fn&& fn) {
  WithForm(form,
           [&](auto math) { WithDType(t, [&](auto storage) { fn(math, storage); }); });
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_DRIVER_INL_H_
