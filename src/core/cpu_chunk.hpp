// One task's share of an op call on the CPU, as the op's kernel binding
// (OpDecl::cpu) receives it from the generic entry (run_op.hpp).
#pragma once

#include <cstdint>

#include "core/op_table.hpp"
#include "gelu/gelu.hpp"

namespace gelu::core {

struct CpuChunk {
  Approx approx;
  DType dtype;  // the primary tensor's
  // The task: `rows` rows of `cols` planned columns; `row_len` planned
  // columns per whole row (the last dimension; half of it for gated ops;
  // numel for element-wise ops, planned as one row).
  int64_t rows, cols, row_len;
  // The op's tensors in table order, each offset to the task's first
  // element by its shape rule; null for an absent optional output. A
  // per-column sum (Role::dbias) is not offset: the kernel writes
  // `partial` instead, the task's row of partial sums (row_len doubles).
  void* tensors[kMaxTensors];
  double* partial;
  bool gelu_second;  // Options::gelu_half == GeluHalf::second
  bool stream;       // non-temporal stores (Plan::stream_outputs)

  const void* in(int i) const { return tensors[i]; }
  void* out(int i) const { return tensors[i]; }
};

}  // namespace gelu::core
