// gelu, add_gelu and bias_gelu on the GPU: y = gelu(x (+ addend)), the
// element-wise body (body/eltwise.hpp) in f32 with the scalar method.
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {

void forward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* x,
             const void* addend, void* y, Stream stream) {
  if (n == 0) return;
  body::Arrays arr;
  arr.x = x;
  arr.out = y;
  if (a == Addend::none) {
    arr.sx = arr.sout = n;
    return launch_eltwise<body::Kind::forward, false, false, false>(
        form, t, 1, n, arr, nullptr, stream, "the forward kernel");
  }
  // add_gelu: one row of n with b beside it; bias_gelu: rows of cols, the
  // bias a row of stride 0.
  const bool column = a == Addend::column;
  const int64_t rows = column ? n / cols : 1, c = column ? cols : n;
  arr.x2 = addend;
  arr.sx = arr.sout = c;
  arr.sx2 = column ? 0 : c;
  launch_eltwise<body::Kind::forward, true, false, false>(
      form, t, rows, c, arr, nullptr, stream, "the forward kernel");
}

}  // namespace gelu::cuda::detail
