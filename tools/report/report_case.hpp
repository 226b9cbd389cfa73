// One op's tensors at one dtype and shape, and the call of our library on
// them. Shared by the throughput and the accuracy sections, so both run the
// public API exactly as a user would.
#pragma once

#include "report_common.hpp"

namespace gelu::report {

// Tensors by role (unused roles stay empty):
//   x   gelu/bias/geglu input, add's a      [rows, cols] ([rows, 2 cols] geglu)
//   b   bias [cols] or add's b [rows, cols]
//   dy  upstream gradient                  [rows, cols]
//   out y or dx                            [rows, cols] ([rows, 2 cols] geglu bwd)
//   dbias (bias_gelu_backward), f32        [cols]
struct Case {
  Op op;
  DType dtype;
  Shape shape;
  Buffer x, b, dy, out, dbias;
  int64_t x_elems = 0, b_elems = 0, dy_elems = 0, out_elems = 0;
};

// Allocates the tensors; fills inputs with x ~ N(0, 1), b in [-0.5, 0.5),
// dy in [-1, 1) when `fill`.
Case make_case(Op, DType, Shape, bool fill = true);

// Runs gelu-fusion's op on the case.
void run_ours(Case&, Approx form, int threads);

}  // namespace gelu::report
