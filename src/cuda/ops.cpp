// The public CUDA ops (gelu_cuda.hpp): validate through the op table, as
// the CPU ops do, check that the current device can run the kernels, then
// enqueue them (launch.hpp). No math here and no checks in the kernels.
#include <string>
#include <vector>

#include "core/op_table.hpp"
#include "core/validate.hpp"
#include "cuda/launch.hpp"
#include "cuda/ops.hpp"
#include "gelu/gelu_cuda.hpp"

namespace gelu::cuda {
namespace {

using core::OpId;
using core::TensorArg;
using detail::Addend;

TensorArg arg(const ConstTensorRef& t) { return {t.data, t.dtype, &t.shape}; }
TensorArg arg(const TensorRef& t) { return {t.data, t.dtype, &t.shape}; }

// Validates the call, then checks the device: misuse is reported as on the
// CPU, whatever the GPU.
template <size_t K>
void check(OpId id, const TensorArg (&args)[K], const Options& o) {
  core::validate(id, args, o);
  const std::string problem = detail::device_problem();
  if (!problem.empty())
    throw Error(std::string(core::op_decl(id).name) + ": " + problem);
}

int64_t last_dim(const std::vector<int64_t>& s) { return s.empty() ? 1 : s.back(); }

}  // namespace

const char* architectures() { return detail::built_architectures(); }

void gelu(ConstTensorRef x, TensorRef y, const Options& o, Stream s) {
  check(OpId::gelu, {arg(x), arg(y)}, o);
  detail::forward(o.approximate, x.dtype, Addend::none, numel(x.shape), 1, x.data,
                  nullptr, y.data, s);
}

void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, const Options& o,
                   Stream s) {
  gelu_backward(dy, x, dx, TensorRef{}, o, s);
}

void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, TensorRef y,
                   const Options& o, Stream s) {
  check(OpId::gelu_backward, {arg(dy), arg(x), arg(dx), arg(y)}, o);
  detail::backward(o.approximate, x.dtype, Addend::none, numel(x.shape), 1, dy.data,
                   x.data, nullptr, dx.data, y.data, s);
}

void bias_gelu(ConstTensorRef x, ConstTensorRef bias, TensorRef y, const Options& o,
               Stream s) {
  check(OpId::bias_gelu, {arg(x), arg(bias), arg(y)}, o);
  detail::forward(o.approximate, x.dtype, Addend::column, numel(x.shape),
                  last_dim(x.shape), x.data, bias.data, y.data, s);
}

std::size_t bias_gelu_backward_workspace_bytes(const std::vector<int64_t>& x_shape) {
  const int64_t n = numel(x_shape);
  const int64_t cols = last_dim(x_shape);
  if (cols == 0) return 0;
  return static_cast<std::size_t>(detail::dbias_workspace_bytes(n / cols, cols));
}

void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                        TensorRef dx, TensorRef dbias, const Options& o, Stream s,
                        Workspace w) {
  bias_gelu_backward(dy, x, bias, dx, dbias, TensorRef{}, o, s, w);
}

void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                        TensorRef dx, TensorRef dbias, TensorRef y, const Options& o,
                        Stream s, Workspace w) {
  const TensorArg args[] = {arg(dy), arg(x), arg(bias), arg(dx), arg(dbias), arg(y)};
  core::validate(OpId::bias_gelu_backward, args, o);
  const std::size_t need = bias_gelu_backward_workspace_bytes(x.shape);
  if (w.data != nullptr && w.bytes < need)
    throw Error("bias_gelu_backward: workspace has " + std::to_string(w.bytes) +
                " bytes, expected at least " + std::to_string(need) +
                " (gelu::cuda::bias_gelu_backward_workspace_bytes)");
  check(OpId::bias_gelu_backward, args, o);
  const int64_t cols = last_dim(x.shape);
  if (cols == 0) return;
  const int64_t rows = numel(x.shape) / cols;
  void* owned = nullptr;
  void* partial = w.data;
  if (partial == nullptr && need > 0) partial = owned = detail::stream_alloc(need, s);
  try {
    detail::bias_backward(o.approximate, x.dtype, dbias.dtype, rows, cols, dy.data,
                          x.data, bias.data, dx.data, y.data,
                          static_cast<double*>(partial), dbias.data, s);
  } catch (...) {
    detail::stream_free(owned, s);
    throw;
  }
  detail::stream_free(owned, s);
}

void add_gelu(ConstTensorRef a, ConstTensorRef b, TensorRef y, const Options& o,
              Stream s) {
  check(OpId::add_gelu, {arg(a), arg(b), arg(y)}, o);
  detail::forward(o.approximate, a.dtype, Addend::same, numel(a.shape), 1, a.data,
                  b.data, y.data, s);
}

void add_gelu_backward(ConstTensorRef dy, ConstTensorRef a, ConstTensorRef b,
                       TensorRef dx, const Options& o, Stream s) {
  check(OpId::add_gelu_backward, {arg(dy), arg(a), arg(b), arg(dx)}, o);
  detail::backward(o.approximate, a.dtype, Addend::same, numel(a.shape), 1, dy.data,
                   a.data, b.data, dx.data, nullptr, s);
}

void geglu(ConstTensorRef x, TensorRef y, const Options& o, Stream s) {
  check(OpId::geglu, {arg(x), arg(y)}, o);
  const int64_t h = last_dim(x.shape) / 2;
  detail::geglu_forward(o.approximate, x.dtype, h ? numel(x.shape) / (2 * h) : 0, h,
                        o.gelu_half == GeluHalf::second, x.data, y.data, s);
}

void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, const Options& o,
                    Stream s) {
  geglu_backward(dy, x, dx, TensorRef{}, o, s);
}

void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, TensorRef y,
                    const Options& o, Stream s) {
  check(OpId::geglu_backward, {arg(dy), arg(x), arg(dx), arg(y)}, o);
  const int64_t h = last_dim(x.shape) / 2;
  detail::geglu_backward(o.approximate, x.dtype, h ? numel(x.shape) / (2 * h) : 0, h,
                         o.gelu_half == GeluHalf::second, dy.data, x.data, dx.data,
                         y.data, s);
}

std::size_t workspace_bytes(const core::OpDecl& op,
                            const std::vector<int64_t>& primary) {
  return op.id == OpId::bias_gelu_backward ? bias_gelu_backward_workspace_bytes(primary)
                                           : 0;
}

void call(const core::OpDecl& op, std::span<const TensorRef> t, const Options& o,
          Stream s, Workspace w) {
  const auto opt = [&](size_t i) { return i < t.size() ? t[i] : TensorRef{}; };
  switch (op.id) {
    case OpId::gelu: return gelu(t[0], t[1], o, s);
    case OpId::gelu_backward: return gelu_backward(t[0], t[1], t[2], opt(3), o, s);
    case OpId::bias_gelu: return bias_gelu(t[0], t[1], t[2], o, s);
    case OpId::bias_gelu_backward:
      return bias_gelu_backward(t[0], t[1], t[2], t[3], t[4], opt(5), o, s, w);
    case OpId::add_gelu: return add_gelu(t[0], t[1], t[2], o, s);
    case OpId::add_gelu_backward:
      return add_gelu_backward(t[0], t[1], t[2], t[3], o, s);
    case OpId::geglu: return geglu(t[0], t[1], o, s);
    case OpId::geglu_backward: return geglu_backward(t[0], t[1], t[2], opt(3), o, s);
  }
}

}  // namespace gelu::cuda
