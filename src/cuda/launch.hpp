// The CUDA kernels' launchers, callable from host C++ without CUDA headers:
// device pointers, element counts and a stream. They check nothing (the ops
// in ops.cpp validate first through the op table) and enqueue their kernels
// on `stream` without waiting for them. Each throws gelu::Error when CUDA
// refuses the launch.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "gelu/gelu.hpp"

struct CUstream_st;

namespace gelu::cuda::detail {

using Stream = CUstream_st*;

// What is added to x before the GELU: nothing, b[i] (add_gelu), or
// bias[i % cols] (bias_gelu).
enum class Addend { none, same, column };

// y = gelu(x (+ addend)) over n elements.
void forward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* x,
             const void* addend, void* y, Stream stream);

// dx = dy * gelu'(x (+ addend)) over n elements, and y = gelu(...) where y
// is not null.
void backward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* dy,
              const void* x, const void* addend, void* dx, void* y, Stream stream);

// bias_gelu_backward's dbias: per-block column sums of the f32 dx into
// partial[block row][column] (doubles), then dbias[column] = those sums
// added in order (src/cuda/body/eltwise.hpp). The blocks depend only on the
// shape, so dbias does too.
int64_t dbias_partial_rows(int64_t rows, int64_t cols);
inline int64_t dbias_workspace_bytes(int64_t rows, int64_t cols) {
  return dbias_partial_rows(rows, cols) * cols * static_cast<int64_t>(sizeof(double));
}
// dx, y (where not null) as backward() with Addend::column, and dbias (of
// dtype dbias_t) through `partial` (dbias_workspace_bytes of device memory).
void bias_backward(Approx form, DType t, DType dbias_t, int64_t rows, int64_t cols,
                   const void* dy, const void* x, const void* bias, void* dx, void* y,
                   double* partial, void* dbias, Stream stream);

// geglu over rows x [2h] -> rows x [h]; `second`: the GELU applies to the
// second half (GeluHalf::second).
void geglu_forward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                   const void* x, void* y, Stream stream);
void geglu_backward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                    const void* dy, const void* x, void* dx, void* y, Stream stream);

// Empty when the current device can run this build's kernels; else why not
// (no device, no driver, no code for its architecture).
std::string device_problem();

// The CUDA architectures this build has code for ("sm_80 sm_90 compute_90").
const char* built_architectures();

}  // namespace gelu::cuda::detail

namespace gelu::cuda::detail {

// Device memory of `bytes`, stream-ordered (cudaMallocAsync on `stream`),
// and its release after the work enqueued on `stream` so far.
void* stream_alloc(std::size_t bytes, Stream stream);
void stream_free(void* p, Stream stream);

}  // namespace gelu::cuda::detail
