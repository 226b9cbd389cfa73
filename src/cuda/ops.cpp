// The public CUDA ops (gelu_cuda.hpp): validate through the op table, as
// the CPU ops do, check that the current device can run the kernels, then
// enqueue them (launch.hpp). No math here and no checks in the kernels.
#include <algorithm>
#include <span>
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
using core::OpKind;
using core::Role;
using core::TensorArg;
using detail::Addend;

int64_t last_dim(const std::vector<int64_t>& s) { return s.empty() ? 1 : s.back(); }

// Bytes of workspace an op of kind rows_reduce takes (its partial sums).
std::size_t reduce_workspace_bytes(const std::vector<int64_t>& shape) {
  const int64_t cols = last_dim(shape);
  if (cols == 0) return 0;
  return static_cast<std::size_t>(
      detail::dbias_workspace_bytes(numel(shape) / cols, cols));
}

// The generic entry: validates, checks the device, then launches by the
// op's kind and direction, with its tensors found by role.
void run_table_op(const core::OpDecl& op, std::span<const TensorArg> a,
                  const Options& o, Stream s, Workspace w) {
  core::validate(op.id, a, o);
  const int primary = op.primary();
  const std::vector<int64_t>& shape = *a[primary].shape;
  const std::size_t need = op.kind == OpKind::rows_reduce
                               ? reduce_workspace_bytes(shape)
                               : 0;
  if (w.data != nullptr && w.bytes < need)
    throw Error(std::string(op.name) + ": workspace has " + std::to_string(w.bytes) +
                " bytes, expected at least " + std::to_string(need) +
                " (gelu::cuda::" + op.name + "_workspace_bytes)");
  const std::string problem = detail::device_problem();
  if (!problem.empty()) throw Error(std::string(op.name) + ": " + problem);

  const auto in = [&](Role r) -> const void* {
    const int i = op.tensor_of(r);
    return i >= 0 && i < static_cast<int>(a.size()) ? a[i].data : nullptr;
  };
  const auto out = [&](Role r) { return const_cast<void*>(in(r)); };
  const Approx f = o.approximate;
  const DType t = a[primary].dtype;
  const int64_t n = numel(shape);
  const int addend = op.tensor_of(Role::addend);
  const Addend add = addend < 0 ? Addend::none
                     : op.tensors[addend].shape == core::ShapeRule::last_dim
                         ? Addend::column
                         : Addend::same;
  const int64_t cols = add == Addend::column ? last_dim(shape) : 1;
  switch (op.kind) {
    case OpKind::eltwise:
    case OpKind::rows:
      if (op.is_backward())
        detail::backward(f, t, add, n, cols, in(Role::dy), in(Role::x),
                         in(Role::addend), out(Role::dx), out(Role::y), s);
      else
        detail::forward(f, t, add, n, cols, in(Role::x), in(Role::addend), out(Role::y),
                        s);
      return;
    case OpKind::gated: {
      const int64_t h = last_dim(shape) / 2;
      const int64_t rows = h ? n / (2 * h) : 0;
      const bool second = o.gelu_half == GeluHalf::second;
      if (op.is_backward())
        detail::geglu_backward(f, t, rows, h, second, in(Role::dy), in(Role::x),
                               out(Role::dx), out(Role::y), s);
      else detail::geglu_forward(f, t, rows, h, second, in(Role::x), out(Role::y), s);
      return;
    }
    case OpKind::rows_reduce: {
      const int64_t c = last_dim(shape);
      if (c == 0) return;
      const int sum = op.tensor_of(Role::dbias);
      void* owned = nullptr;
      void* partial = w.data;
      if (partial == nullptr && need > 0)
        partial = owned = detail::stream_alloc(need, s);
      try {
        detail::bias_backward(f, t, a[sum].dtype, n / c, c, in(Role::dy), in(Role::x),
                              in(Role::addend), out(Role::dx), out(Role::y),
                              static_cast<double*>(partial), out(Role::dbias), s);
      } catch (...) {
        detail::stream_free(owned, s);
        throw;
      }
      detail::stream_free(owned, s);
      return;
    }
  }
}

}  // namespace

const char* architectures() { return detail::built_architectures(); }

// The public functions' entry (gelu_cuda.hpp: each op is one inline call).
void detail::run_op(OpId id, std::initializer_list<gelu::detail::OpArg> tensors,
                    const Options& o, Stream s, Workspace w) {
  run_table_op(core::op_decl(id),
               std::span<const TensorArg>(tensors.begin(), tensors.size()), o, s, w);
}

std::size_t detail::workspace_bytes(OpId id, const std::vector<int64_t>& primary) {
  return cuda::workspace_bytes(core::op_decl(id), primary);
}

std::size_t workspace_bytes(const core::OpDecl& op,
                            const std::vector<int64_t>& primary) {
  return op.kind == OpKind::rows_reduce ? reduce_workspace_bytes(primary) : 0;
}

void call(const core::OpDecl& op, std::span<const TensorRef> t, const Options& o,
          Stream s, Workspace w) {
  TensorArg args[core::kMaxTensors];
  const size_t n = std::min(t.size(), static_cast<size_t>(core::kMaxTensors));
  for (size_t i = 0; i < n; ++i) args[i] = t[i];
  run_table_op(op, std::span<const TensorArg>(args, n), o, s, w);
}

}  // namespace gelu::cuda
