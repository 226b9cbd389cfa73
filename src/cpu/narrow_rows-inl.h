// Row ops on short rows, per target: many rows per vector instead of one
// Row call (and one partial, stack-staged step) per row. A row op on rows
// of a few columns otherwise pays a call and a stack-staged tail step for
// every few elements: bias_gelu on rows of 1 column cost ~100x gelu per
// element, rows of 8 ~10x (bench/shapes/shape_cliffs.cpp re-measures it).
//
//   bias_gelu:           one flat pass over the rows, the bias read from a
//                        copy extended by one chunk, at the chunk's column.
//   bias_gelu_backward:  the rows in spans of whole rows (a multiple of every
//                        step), the bias replicated over a span; dbias sums
//                        per span position, folded to columns at the end.
//   geglu (both ways):   spans of rows deinterleaved into a value and a gate
//                        buffer (Compress), one Row over them, and for the
//                        backward the two gradients interleaved back.
//
// Every helper here runs the same Step/Row of driver-inl.h, so the
// results of each element are those of the wide path, bit for bit; only
// dbias's summation order differs (BiasBackwardNarrow says how).
//
// Per-target include guard (Highway's toggle pattern).
#if defined(GELU_CPU_NARROW_ROWS_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef GELU_CPU_NARROW_ROWS_INL_H_
#undef GELU_CPU_NARROW_ROWS_INL_H_
#else
#define GELU_CPU_NARROW_ROWS_INL_H_
#endif

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/driver-inl.h"
#include "cpu/kernels.hpp"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Spans of rows: dbias_span(cols) elements (src/cpu/kernels.hpp), a
// multiple of kSpanAlign = 64 elements: every target's step (two f32
// vectors: at most 32 lanes) and every vector of 16-bit lanes (at most 32)
// divide it, and it does not depend on the target, so neither does dbias.
inline constexpr size_t kSpanAlign = 64;
static_assert(kSpanAlign % detail::kMaxStep == 0, "spans of whole steps");
static_assert(kSpanAlign % (HWY_MAX_BYTES / 2 > 0 ? HWY_MAX_BYTES / 2 : 1) == 0,
              "spans of whole 16-bit vectors");
// Row widths below this take the narrow paths (rows of 64 columns and more
// measured as fast as the flat op already, bench/shapes/shape_cliffs.cpp).
inline constexpr size_t kNarrowCols = static_cast<size_t>(kDbiasNarrowCols);
// The stack buffers hold the longest span, 63 * 64 elements.
inline constexpr size_t kMaxSpan = 4096;
static_assert(dbias_span(kDbiasNarrowCols - 1) <= static_cast<int64_t>(kMaxSpan),
              "spans fit");
// bias_gelu's flat pass keeps a bias copy of cols + one chunk on the stack;
// a chunk is whole steps on every target (kSpanAlign divides it).
inline constexpr size_t kFlatMaxCols = 1024;
inline constexpr size_t kFlatChunk = 1024;
static_assert(kFlatChunk % kSpanAlign == 0, "chunks of whole steps");

namespace narrow {

// The span for rows of `cols` (< kNarrowCols) elements.
inline size_t Span(size_t cols) {
  return static_cast<size_t>(dbias_span(static_cast<int64_t>(cols)));
}

// buf[0, span) = src repeated (span a multiple of cols).
template <class T>
HWY_INLINE void Replicate(const T* src, size_t cols, size_t span, T* buf) {
  std::memcpy(buf, src, cols * sizeof(T));
  for (size_t j = cols; j < span; j += j) {  // doubling copies
    std::memcpy(buf + j, buf, (span - j < j ? span - j : j) * sizeof(T));
  }
}

// Rows whose value half and gate half are one W lane each (h * sizeof(T) ==
// sizeof(W), or two: kTwoLanes): the values are the even W lanes, the gates the odd
// ones, so two vectors of rows split with one ConcatEven and one ConcatOdd and two
// whole-vector stores, where Compress costs two compresses, two stores
// straddling lines and a phase update per vector (most of geglu's time with
// narrow halves: docs/notes/kernel-decisions.md, "Narrow geglu rows"). Returns the
// elements done (whole vector pairs); the rest is Deinterleave's.
// kTwoLanes: halves of two W lanes (16 bytes): the even and odd W lanes
// then hold (value, gate) of each row's first and second lane, and
// InterleaveLower/Upper (per 128-bit block, blocks in order) pair them back
// into whole halves.
// Not on SCALAR (one lane: nothing to concatenate).
#if HWY_TARGET != HWY_SCALAR
template <class W, bool kTwoLanes, class T>
HWY_INLINE size_t DeinterleaveLanePairs(size_t m, const T* in, T* v, T* g) {
  const hn::ScalableTag<W> dw;
  const size_t n = hn::Lanes(dw);
  const size_t per = 2 * n * sizeof(W) / sizeof(T);  // elements of T per pair
  const W* src = reinterpret_cast<const W*>(in);
  W* vo = reinterpret_cast<W*>(v);
  W* go = reinterpret_cast<W*>(g);
  size_t i = 0;
  for (; i + per <= m; i += per, src += 2 * n, vo += n, go += n) {
    const auto a = hn::LoadU(dw, src);
    const auto b = hn::LoadU(dw, src + n);
    const auto even = hn::ConcatEven(dw, b, a);
    const auto odd = hn::ConcatOdd(dw, b, a);
    if constexpr (kTwoLanes) {
      hn::StoreU(hn::InterleaveLower(dw, even, odd), dw, vo);
      hn::StoreU(hn::InterleaveUpper(dw, even, odd), dw, go);
    } else {
      hn::StoreU(even, dw, vo);
      hn::StoreU(odd, dw, go);
    }
  }
  return i;
}
#endif

// Splits m elements of rows [value h | gate h] (m a multiple of 2h) into
// their values (v) and gates (g), each m/2 elements; v and g have room for
// one vector more (full-vector stores past the end).
template <class T>
HWY_INLINE void Deinterleave(size_t m, size_t h, const T* in, T* v, T* g) {
#if HWY_TARGET != HWY_SCALAR
  if (const size_t bytes = h * sizeof(T); bytes == 4 || bytes == 8 || bytes == 16) {
    size_t i = bytes == 4   ? DeinterleaveLanePairs<uint32_t, false>(m, in, v, g)
               : bytes == 8 ? DeinterleaveLanePairs<uint64_t, false>(m, in, v, g)
                            : DeinterleaveLanePairs<uint64_t, true>(m, in, v, g);
    T* vo = v + i / 2;
    T* go = g + i / 2;
    for (; i < m; i += 2 * h, vo += h, go += h) {  // whole rows are left
      std::memcpy(vo, in + i, h * sizeof(T));
      std::memcpy(go, in + i + h, h * sizeof(T));
    }
    return;
  }
#endif
  using U = hwy::MakeUnsigned<T>;
  const hn::ScalableTag<U> du;
  const size_t n = hn::Lanes(du);
  if (h % n == 0) {  // halves of whole vectors: copies, no Compress
    const U* src = reinterpret_cast<const U*>(in);
    U* vo = reinterpret_cast<U*>(v);
    U* go = reinterpret_cast<U*>(g);
    for (size_t i = 0; i < m; i += 2 * h, vo += h, go += h) {
      for (size_t j = 0; j < h; j += n) {
        hn::StoreU(hn::LoadU(du, src + i + j), du, vo + j);
        hn::StoreU(hn::LoadU(du, src + i + h + j), du, go + j);
      }
    }
    return;
  }
  const auto hh = hn::Set(du, static_cast<U>(h));
  const auto period = hn::Set(du, static_cast<U>(2 * h));
  const auto advance = hn::Set(du, static_cast<U>(n % (2 * h)));
  // Lane t's position within its row: (i + t) mod 2h, i a multiple of n.
  auto phase = hn::Iota(du, 0);
  for (size_t k = 0; k < n / (2 * h); ++k) {
    phase = hn::IfThenElse(hn::Lt(phase, period), phase, hn::Sub(phase, period));
  }
  const U* src = reinterpret_cast<const U*>(in);
  U* vo = reinterpret_cast<U*>(v);
  U* go = reinterpret_cast<U*>(g);
  size_t i = 0;
  if (m >= n) {
    for (; i <= m - n; i += n) {
      const auto w = hn::LoadU(du, src + i);
      const auto is_value = hn::Lt(phase, hh);
      const size_t nv = hn::CountTrue(du, is_value);
      hn::StoreU(hn::Compress(w, is_value), du, vo);
      hn::StoreU(hn::Compress(w, hn::Not(is_value)), du, go);
      vo += nv;
      go += n - nv;
      phase = hn::Add(phase, advance);
      phase = hn::IfThenElse(hn::Lt(phase, period), phase, hn::Sub(phase, period));
    }
  }
  for (size_t p = i % (2 * h); i < m; ++i) {
    if (p < h) *vo++ = src[i];
    else *go++ = src[i];
    if (++p == 2 * h) p = 0;
  }
}

// out[r * 2h + j] = v[r * h + j], out[r * 2h + h + j] = g[r * h + j] for
// `rows` rows.
template <class T>
HWY_INLINE void Interleave(size_t rows, size_t h, const T* v, const T* g, T* out) {
  for (size_t r = 0; r < rows; ++r) {
    T* o = out + r * 2 * h;
    const T* vr = v + r * h;
    const T* gr = g + r * h;
    for (size_t j = 0; j < h; ++j) o[j] = vr[j];
    for (size_t j = 0; j < h; ++j) o[h + j] = gr[j];
  }
}

}  // namespace narrow

// bias_gelu over `rows` contiguous rows of `cols` (<= kFlatMaxCols) columns
// as one flat pass, in chunks of kFlatChunk positions: the chunk at flat
// position i is one Row over x and y there, its bias read from a copy of
// the bias extended by one chunk (ext[j] = bias[j mod cols]) at column
// i mod cols, so a step may span rows. Row (not single Steps) so that the
// deferred tail lanes of driver-inl.h are finished per block here too.
template <class Math, class S>
HWY_INLINE void BiasForwardFlat(size_t rows, size_t cols, const typename S::T* x,
                                const typename S::T* bias, typename S::T* y) {
  using T = typename S::T;
  HWY_ALIGN T ext[kFlatMaxCols + kFlatChunk];
  std::memcpy(ext, bias, cols * sizeof(T));
  for (size_t j = cols; j < cols + kFlatChunk; ++j) ext[j] = ext[j - cols];
  const size_t n = rows * cols, advance = kFlatChunk % cols;
  for (size_t i = 0, col = 0; i < n; i += kFlatChunk) {
    const size_t len = n - i < kFlatChunk ? n - i : kFlatChunk;
    Row<Math, S, kSum>(len, {nullptr, x + i, ext + col, y + i, nullptr, nullptr});
    col += advance;
    if (col >= cols) col -= cols;
  }
}

// bias_gelu_backward over `rows` contiguous rows of `cols` (< kNarrowCols)
// columns. The rows are taken in spans of k = Span(cols) / cols rows; span
// position p = q * cols + j holds column j of the span's row q. As
// BiasBackwardRows does per column, dx of each group of kDbiasGroup
// consecutive spans is summed in f32 per span position, (((s0 + s1) + s2) +
// s3), and the group sums in double in span order; then dbias[j] = the sum
// over q of position q * cols + j, in q order (double). So a group of 4 is
// rows q, q + k, q + 2k, q + 3k of the call, not 4 consecutive rows.
// kExtra: 0, or kValue to also store y = gelu(x + bias) (laid out as dx).
template <class Math, class S, unsigned kExtra = 0>
HWY_INLINE void BiasBackwardNarrow(size_t rows, size_t cols, const typename S::T* dy,
                                   const typename S::T* x, const typename S::T* bias,
                                   typename S::T* dx, double* dbias,
                                   typename S::T* y = nullptr) {
  using T = typename S::T;
  constexpr unsigned F = kSum | kBackward | kDbias | kExtra;
  // F32: the group's sums read back from dx (BiasBackwardRows says why);
  // acc is then unused.
  constexpr bool kReadBack = std::is_same_v<S, F32>;
  const size_t span = narrow::Span(cols);
  HWY_ALIGN T ext[kMaxSpan];
  [[maybe_unused]] HWY_ALIGN float acc[kReadBack ? 1 : kMaxSpan];
  HWY_ALIGN double sums[kMaxSpan];
  narrow::Replicate(bias, cols, span, ext);
  const size_t n = rows * cols;
  for (size_t g0 = 0; g0 < n; g0 += kDbiasGroup * span) {
    const size_t first = n - g0 < span ? n - g0 : span;  // the group's longest span
    size_t spans = 0, last = 0;  // the group's spans, the last one's length
    for (size_t b = 0; b < kDbiasGroup && g0 + b * span < n; ++b) {
      const size_t o = g0 + b * span;
      const size_t len = n - o < span ? n - o : span;
      ++spans;
      last = len;
      if constexpr (kReadBack) {
        Row<Math, S, F>(
            len, {dy + o, x + o, ext, dx + o, nullptr, nullptr, y ? y + o : nullptr});
      } else {
        Row<Math, S, F | kAcc>(len, {dy + o, x + o, ext, dx + o, nullptr, acc,
                                     y ? y + o : nullptr, false, b == 0});
      }
    }
    if constexpr (kReadBack) {
      // Only the call's last span may be short: past its end the group has
      // one span less.
      const float* group = dx + g0;
      if (g0 == 0) {
        AddRowSums<true>(spans, last, group, span, sums);
        AddRowSums<true>(spans - 1, first - last, group + last, span, sums + last);
      } else {
        AddRowSums<false>(spans, last, group, span, sums);
        AddRowSums<false>(spans - 1, first - last, group + last, span, sums + last);
      }
    } else if (g0 == 0) {
      AddGroupSums<S, true>(first, acc, sums);
    } else {
      AddGroupSums<S, false>(first, acc, sums);
    }
  }
  const size_t spanned = rows < span / cols ? rows : span / cols;  // rows q with sums
  for (size_t j = 0; j < cols; ++j) dbias[j] = sums[j];
  for (size_t q = 1; q < spanned; ++q) {
    for (size_t j = 0; j < cols; ++j) dbias[j] += sums[q * cols + j];
  }
}

// GeGLU over `rows` rows of h (< kNarrowCols) columns per half: x rows 2h
// apart, y rows h apart (contiguous).
template <class Math, class S>
HWY_INLINE void GegluForwardNarrow(size_t rows, size_t h, const typename S::T* x,
                                   typename S::T* y) {
  using T = typename S::T;
  const size_t span = narrow::Span(h), k = span / h;
  HWY_ALIGN T v[kMaxSpan + kSpanAlign], g[kMaxSpan + kSpanAlign];
  for (size_t r0 = 0; r0 < rows; r0 += k) {
    const size_t kr = rows - r0 < k ? rows - r0 : k;
    narrow::Deinterleave(2 * kr * h, h, x + r0 * 2 * h, v, g);
    Row<Math, S, kGated>(kr * h, {nullptr, v, g, y + r0 * h, nullptr, nullptr});
  }
}

// geglu_backward over `rows` rows of h (< kNarrowCols) columns per half:
// dy rows h apart, x and dx rows 2h apart. Each span of x is read whole
// before its dx is written (dx may be x). kExtra: 0, or kValue to also store
// y = gelu(value) * gate (laid out as dy).
template <class Math, class S, unsigned kExtra = 0>
HWY_INLINE void GegluBackwardNarrow(size_t rows, size_t h, const typename S::T* dy,
                                    const typename S::T* x, typename S::T* dx,
                                    typename S::T* y = nullptr) {
  using T = typename S::T;
  const size_t span = narrow::Span(h), k = span / h;
  HWY_ALIGN T v[kMaxSpan + kSpanAlign], g[kMaxSpan + kSpanAlign];
  HWY_ALIGN T dv[kMaxSpan], dg[kMaxSpan];
  for (size_t r0 = 0; r0 < rows; r0 += k) {
    const size_t kr = rows - r0 < k ? rows - r0 : k;
    narrow::Deinterleave(2 * kr * h, h, x + r0 * 2 * h, v, g);
    Row<Math, S, kGated | kBackward | kExtra>(
        kr * h, {dy + r0 * h, v, g, dv, dg, nullptr, y ? y + r0 * h : nullptr});
    narrow::Interleave(kr, h, dv, dg, dx + r0 * 2 * h);
  }
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#endif  // GELU_CPU_NARROW_ROWS_INL_H_
