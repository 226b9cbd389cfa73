// gelu-fusion on NVIDIA GPUs: the ops of gelu.hpp on device memory.
//
// Every function takes the same tensor views, options and checks as its
// CPU namesake in gelu.hpp (the same op table: shapes, dtypes, aliasing
// rules, error messages), with pointers to device memory (cudaMalloc,
// cudaMallocAsync, managed memory, or a PyTorch CUDA tensor's data_ptr())
// of the current device (cudaSetDevice), and a stream:
//
//   gelu::cuda::bias_gelu(x, bias, y, gelu::Options{gelu::Approx::tanh}, stream);
//
// A call validates its arguments on the host and throws gelu::Error on
// misuse before anything is enqueued; then it enqueues its kernels on
// `stream` and returns without waiting for them (results are there once
// the stream reaches that point). `stream` is a cudaStream_t (CUstream_st*
// is its type; nullptr is the legacy default stream); this header needs no
// CUDA header. Options::num_threads is checked (>= 0) and otherwise unused.
//
// The accuracy contract is the CPU's (docs/contract.md): f32 within 2 ULP, bf16/f16
// within 1 ULP, the limits at +-inf, NaN in, NaN out, and the overflow
// boundary rule; dbias is summed in an order that depends only on the
// shape (bit-identical on every run and GPU), not the CPU's order.
//
// gelu::Error also comes when there is no usable GPU, or the build has no
// code for the current one (its CUDA architectures), or CUDA refuses a
// launch. These functions exist in builds with the CUDA backend
// (GELU_WITH_CUDA, the library gelu::gelu_fusion_cuda).
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include "gelu/gelu.hpp"

struct CUstream_st;

namespace gelu::cuda {

// A cudaStream_t.
using Stream = CUstream_st*;

// Device memory a call may use for temporaries (bias_gelu_backward's
// partial sums). Left empty, the call allocates and frees it itself,
// stream-ordered (cudaMallocAsync / cudaFreeAsync on its stream).
struct Workspace {
  void* data = nullptr;
  std::size_t bytes = 0;
};

namespace detail {
// The generic entry of gelu.hpp's detail::run_op on the GPU.
void run_op(OpId id, std::initializer_list<gelu::detail::OpArg> tensors,
            const Options& options, Stream stream, Workspace workspace = {});
// Bytes of workspace op `id` takes when its primary tensor has this shape.
std::size_t workspace_bytes(OpId id, const std::vector<int64_t>& primary_shape);
}  // namespace detail

// y = gelu(x)
inline void gelu(ConstTensorRef x, TensorRef y, const Options& o = {},
                 Stream s = nullptr) {
  detail::run_op(OpId::gelu, {x, y}, o, s);
}
// dx = dy * gelu'(x), and y = gelu(x) where y is given (not TensorRef{})
inline void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                          const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::gelu_backward, {dy, x, dx}, o, s);
}
inline void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                          TensorRef y, const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::gelu_backward, {dy, x, dx, y}, o, s);
}

// y = gelu(x + bias)
inline void bias_gelu(ConstTensorRef x, ConstTensorRef bias, TensorRef y,
                      const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::bias_gelu, {x, bias, y}, o, s);
}
// dx = dy * gelu'(x + bias), dbias = column sums of dx (its order depends
// only on x's shape), y = gelu(x + bias) where given. `workspace`, when
// given, must hold bias_gelu_backward_workspace_bytes(x's shape).
inline void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                               TensorRef dx, TensorRef dbias, const Options& o = {},
                               Stream s = nullptr, Workspace w = {}) {
  detail::run_op(OpId::bias_gelu_backward, {dy, x, bias, dx, dbias}, o, s, w);
}
inline void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                               TensorRef dx, TensorRef dbias, TensorRef y,
                               const Options& o = {}, Stream s = nullptr,
                               Workspace w = {}) {
  detail::run_op(OpId::bias_gelu_backward, {dy, x, bias, dx, dbias, y}, o, s, w);
}
// Bytes of workspace bias_gelu_backward takes for x of this shape (at most
// 128 x its last dimension doubles).
inline std::size_t bias_gelu_backward_workspace_bytes(
    const std::vector<int64_t>& x_shape) {
  return detail::workspace_bytes(OpId::bias_gelu_backward, x_shape);
}

// y = gelu(a + b)
inline void add_gelu(ConstTensorRef a, ConstTensorRef b, TensorRef y,
                     const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::add_gelu, {a, b, y}, o, s);
}
// dx = dy * gelu'(a + b)
inline void add_gelu_backward(ConstTensorRef dy, ConstTensorRef a, ConstTensorRef b,
                              TensorRef dx, const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::add_gelu_backward, {dy, a, b, dx}, o, s);
}

// y [..., H] = gelu(x[..., :H]) * x[..., H:] (halves swapped with
// Options::gelu_half = second)
inline void geglu(ConstTensorRef x, TensorRef y, const Options& o = {},
                  Stream s = nullptr) {
  detail::run_op(OpId::geglu, {x, y}, o, s);
}
inline void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                           const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::geglu_backward, {dy, x, dx}, o, s);
}
inline void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                           TensorRef y, const Options& o = {}, Stream s = nullptr) {
  detail::run_op(OpId::geglu_backward, {dy, x, dx, y}, o, s);
}

// The CUDA architectures this build has code for, as CMake named them
// ("80-real;90").
const char* architectures();

}  // namespace gelu::cuda
