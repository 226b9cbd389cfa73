// The generic entry of the CPU ops: every public function (ops.cpp) is one
// call of run_op, which validates through the op table, plans by the op's
// kind and runs the op's kernel binding (OpDecl::cpu) over the tasks.
#pragma once

#include <span>

#include "core/op_table.hpp"
#include "core/validate.hpp"
#include "gelu/gelu.hpp"

namespace gelu::core {

// `args` in table order; trailing optional outputs may be left out.
void run_op(OpId id, std::span<const TensorArg> args, const Options& options);

// The same, for tools that run any op of the table (the report, the
// benchmarks, the PyTorch extension): `tensors` in table order, trailing
// optional outputs left out or TensorRef{} (not requested).
void call_op(const OpDecl& op, std::span<const TensorRef> tensors,
             const Options& options);

}  // namespace gelu::core
