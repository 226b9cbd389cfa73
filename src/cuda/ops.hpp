// Any op of the table on the GPU, for callers that hold an OpDecl (the
// PyTorch adapter): the tensors in table order, trailing optional outputs
// not requested left out, as core::call_op on the CPU (run_op.hpp).
#pragma once

#include <span>

#include "core/op_table.hpp"
#include "gelu/gelu_cuda.hpp"

namespace gelu::cuda {

void call(const core::OpDecl& op, std::span<const TensorRef> tensors,
          const Options& options, Stream stream, Workspace workspace = {});

// Bytes of workspace `op` takes when its primary tensor has `primary`'s
// shape (0 for every op but bias_gelu_backward).
std::size_t workspace_bytes(const core::OpDecl& op,
                            const std::vector<int64_t>& primary);

}  // namespace gelu::cuda
