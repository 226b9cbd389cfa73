// bias_gelu_backward on the GPU: dx = dy * gelu'(x + bias), y = gelu(x +
// bias) where y is not null, and dbias = the column sums of the f32 dx:
// the element-wise body (body/eltwise.hpp) with its dbias phases writes
// per-block sums to `partial`, then dbias_sum (body/dbias.hpp) adds them in
// order and rounds once. The order depends only on (rows, cols), so dbias
// is bitwise repeatable on any GPU. dbias is written by the second kernel,
// after every read of bias: it may be the bias buffer itself (in place).
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {

int64_t dbias_partial_rows(int64_t rows, int64_t cols) {
  return body::dbias_partial_rows(rows, cols);
}

void bias_backward(Approx form, DType t, DType dbias_t, int64_t rows, int64_t cols,
                   const void* dy, const void* x, const void* bias, void* dx, void* y,
                   double* partial, void* dbias, Stream stream) {
  if (cols == 0) return;
  body::Arrays arr;
  arr.x = x;
  arr.x2 = bias;
  arr.dy = dy;
  arr.out = dx;
  arr.val = y;
  arr.sx = arr.sdy = arr.sout = arr.sval = cols;
  arr.sx2 = 0;
  // With no rows this still writes the empty sums, 0.
  if (y)
    launch_eltwise<body::Kind::backward, true, true, true>(
        form, t, rows, cols, arr, partial, stream, "the bias backward kernel");
  else
    launch_eltwise<body::Kind::backward, true, false, true>(
        form, t, rows, cols, arr, partial, stream, "the bias backward kernel");
  body::DbiasArgs g;
  g.partial = partial;
  g.partial_rows = body::dbias_partial_rows(rows, cols);
  g.cols = cols;
  g.dbias = dbias;
  const body::Launch l = body::plan_dbias_sum(cols);
  switch (dbias_t) {
    case DType::f32: launch_body<body::DbiasSum<DType::f32>>(l, g, stream); break;
    case DType::bf16: launch_body<body::DbiasSum<DType::bf16>>(l, g, stream); break;
    case DType::f16: launch_body<body::DbiasSum<DType::f16>>(l, g, stream); break;
  }
  check_launch("the dbias kernel");
}

}  // namespace gelu::cuda::detail
