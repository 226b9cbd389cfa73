// The kernel contract between the op layer (src/core) and the CPU kernels.
//
// A kernel computes over one contiguous chunk: no allocation, no threads, no
// argument checks (the op layer has validated everything). Pointers are of the
// op's dtype and already offset to the chunk's first element. The op layer
// chooses chunks and threads (src/core/plan.hpp); a kernel picks its SIMD
// target once per call.
//
// Aliasing: an output may be the very same buffer as an input of its size, so
// a kernel reads every element of a position before it writes that position.
#pragma once

#include <cstdint>
#include <vector>

#include "gelu/gelu.hpp"

namespace gelu::cpu {

// The backward kernels' y (null: not requested) also gets the forward's
// result for the same positions, from the same pass: gelu(x), gelu(x + bias),
// gelu(value half) * gate half (y laid out as dy).

// Element-wise over n elements. `stream`: write the outputs with
// non-temporal stores (same values; the op layer asks for it when the
// call's tensors are too large to stay in cache, Plan::stream_outputs), from
// the outputs' first vector boundary on; plain stores before it, and
// throughout when the outputs sit at different offsets from a boundary.
void gelu_fwd(Approx, DType, int64_t n, const void* x, void* y, bool stream = false);
void gelu_bwd(Approx, DType, int64_t n, const void* dy, const void* x, void* dx,
              void* y = nullptr, bool stream = false);
void add_fwd(Approx, DType, int64_t n, const void* a, const void* b, void* y,
             bool stream = false);
void add_bwd(Approx, DType, int64_t n, const void* dy, const void* a, const void* b,
             void* dx, bool stream = false);

// Row kernels over `rows` rows of `cols` elements; consecutive rows are
// `stride` elements apart in x, y, dy and dx; bias (and dbias) hold `cols`.
// bias_fwd's `stream`: as for the element-wise kernels, per row, on rows
// of more than kFlatMaxCols columns (src/cpu/narrow_rows-inl.h) or strided.
void bias_fwd(Approx, DType, int64_t rows, int64_t cols, int64_t stride, const void* x,
              const void* bias, void* y, bool stream = false);
// dbias[j] = sum over the chunk's rows of dx[i, j] (the f32 values, before
// rounding to storage): each group of 4 consecutive rows from the chunk's
// first summed in f32, (((r0 + r1) + r2) + r3), the group sums added in
// double in row order; stored, not accumulated. The op layer combines chunk
// sums in a fixed order.
// Narrow rows (dbias_narrow: contiguous, more than one, under
// kDbiasNarrowCols columns) are summed by spans instead: the rows taken
// k = dbias_span(cols) / cols at a time, a group of 4 is rows q, q + k,
// q + 2k, q + 3k of consecutive spans (f32, in that order), the group sums
// of each q added in double in span order, then dbias[j] = the sum over
// q = 0, 1, ... of those (double, in q order).
inline constexpr int64_t kDbiasNarrowCols = 64;
constexpr bool dbias_narrow(int64_t rows, int64_t cols, int64_t stride) {
  return stride == cols && rows > 1 && cols < kDbiasNarrowCols;
}
// The smallest multiple of lcm(cols, 64) of at least 1024 elements (64: a
// multiple of every target's step, so the order does not depend on the
// target; at most 63 * 64 for cols < kDbiasNarrowCols).
constexpr int64_t dbias_span(int64_t cols) {
  int64_t a = cols, b = 64;
  while (b != 0) {
    const int64_t r = a % b;
    a = b;
    b = r;
  }
  const int64_t l = cols / a * 64;
  return l >= 1024 ? l : (1024 + l - 1) / l * l;
}
// `stream`: dx and y as bias_fwd's y, on rows the narrow path leaves (the
// f32 dbias sums then come from registers, not read back: same bits).
void bias_bwd(Approx, DType, int64_t rows, int64_t cols, int64_t stride, const void* dy,
              const void* x, const void* bias, void* dx, double* dbias,
              void* y = nullptr, bool stream = false);

// GeGLU over `rows` rows, columns [0, cols) of a row whose gate half begins
// `h` elements after its value half: x rows are 2h apart, y/dy rows h apart,
// dx rows 2h apart. x and dx point at the value half's first column.
// gelu_second: the GELU's half is the second one (GeluHalf::second).
// `stream`: as for bias_fwd, on rows the narrow path does not take.
void geglu_fwd(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* x,
               void* y, bool gelu_second = false, bool stream = false);
void geglu_bwd(Approx, DType, int64_t rows, int64_t cols, int64_t h, const void* dy,
               const void* x, void* dx, bool gelu_second = false, void* y = nullptr,
               bool stream = false);

// Storage conversions on the kernels' own vector path (bf16/f16 rounded to
// nearest-even, bit for bit as src/ref/convert.hpp).
void to_f32(DType, int64_t n, const void* in, float* out);
void from_f32(DType, int64_t n, const float* in, void* out);
// out[j] = (((in[j] + in[n + j]) + in[2n + j]) + ...) over `blocks` rows of
// n doubles, rounded to f32 (nearest-even, as a cast), then stored as dtype
// t (rounded again, nearest-even, for bf16/f16). dbias's last step.
void sums_to(DType, int64_t n, int64_t blocks, const double* in, void* out);

// For tests: gelu_fwd / gelu_bwd on f32 values, not rounded, with the math
// the kernels use for results of dtype `result` (bf16, f16: the form's
// cheaper ForBf16F16 core, see MathFor in src/cpu/driver-inl.h).
void gelu_fwd_f32_with_math_of(DType result, Approx, int64_t n, const float* x,
                               float* y);
void gelu_bwd_f32_with_math_of(DType result, Approx, int64_t n, const float* dy,
                               const float* x, float* dx);

// For tests: the bf16 rounding the element-wise kernels apply to their
// results (BF16Pairs::Store2, or the AVX512_BF16 instruction where used) on
// non-NaN f32 values; NaN results are covered through the ops.
void round_results_to_bf16(int64_t n, const float* in, uint16_t* out);

// Name and Highway bit of the SIMD target the kernels dispatch to on this
// CPU.
const char* target_name();
int64_t dispatch_target();

// The targets this build compiled that this CPU runs, best first, as
// (Highway target bit, name); what the CPU runs, whatever pin_target set.
struct Target {
  int64_t bit;
  const char* name;
};
std::vector<Target> runnable_targets();
// Dispatch to `bit` alone (one of runnable_targets()), or to the best
// again with 0. Process-wide (Highway's supported-target mask).
void pin_target(int64_t bit);

// The Highway target bits (HWY_AVX3, HWY_AVX2, ...) the kernels were compiled
// for; intersect with hwy::SupportedTargets() for those this CPU can run.
// Tests pin each in turn with hwy::SetSupportedTargetsForTest.
int64_t compiled_targets();

}  // namespace gelu::cpu
