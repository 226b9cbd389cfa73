// One op's tensors at one dtype and shape, and the call of our library on
// them. Shared by the throughput and the accuracy sections, so both run the
// public API exactly as a user would. The tensors, their shapes and roles
// come from the op table (core::OpDecl): any op of the table has a case.
#pragma once

#include <vector>

#include "report_common.hpp"

namespace gelu::report {

// Tensors by role (core::Role; unused roles stay empty):
//   x   the input x or a                   [rows, cols] ([rows, 2 cols] gated)
//   b   the addend: bias [cols] or add's b [rows, cols]
//   dy  upstream gradient                  [rows, cols]
//   out y or dx                            [rows, cols] ([rows, 2 cols] gated bwd)
//   dbias (bias_gelu_backward), f32        [cols]
struct Case {
  OpId op;
  DType dtype;
  Shape shape;
  // out: the op's y or dx, the output the accuracy section checks; value: a
  // backward op's y when the table makes it a required output.
  Buffer x, b, dy, out, dbias, value;
  int64_t x_elems = 0, b_elems = 0, dy_elems = 0, out_elems = 0;
  // Per tensor of the op, in table order: its shape and its dtype.
  std::vector<std::vector<int64_t>> shapes;
  std::vector<DType> dtypes;
};

// The buffer of the case that holds tensor `i` of its op.
Buffer& tensor_buffer(Case&, int i);

// Allocates the tensors; fills inputs with x ~ N(0, 1), b in [-0.5, 0.5),
// dy in [-1, 1) when `fill`.
Case make_case(OpId, DType, Shape, bool fill = true);

// Refills the case's x and bias/addend with an input scale: x ~ N(0, sigma^2)
// and b ~ N(0, 1); tail-only: x in [kTailLo, kTailHi], or with an addend
// x in [kTailLo + 1, kTailHi - 1] and b in [-1, 1), so that x + b stays in
// the tail. With `unit` (a case of the same op and shape filled with
// N(0, 1)), x is sigma times unit's x: a 32M fill then costs a pass, not
// a Box-Muller draw per element.
void fill_inputs(Case&, const InputScale&, const Case* unit = nullptr);

// Runs gelu-fusion's op on the case.
void run_ours(Case&, Approx form, int threads);

}  // namespace gelu::report
