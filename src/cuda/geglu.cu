// geglu and geglu_backward on the GPU, for either gelu_half: x [rows, 2h]
// holds a (the GELU's input) and b (its gate) as halves of each row;
// y = gelu(a) b, dx_a = dy b gelu'(a), dx_b = dy gelu(a): the element-wise
// body (body/eltwise.hpp) over rows x h, the halves as arrays of row
// stride 2h. Both halves of an element are read before dx is written (dx
// may be x).
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {

void geglu_forward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                   const void* x, void* y, Stream stream) {
  if (rows == 0 || h == 0) return;
  const int64_t esize = t == DType::f32 ? 4 : 2;
  const auto* xb = static_cast<const char*>(x);
  body::Arrays arr;
  arr.x = xb + (second ? h : 0) * esize;
  arr.x2 = xb + (second ? 0 : h) * esize;
  arr.sx = arr.sx2 = 2 * h;
  arr.out = y;
  arr.sout = h;
  launch_eltwise<body::Kind::geglu_forward, false, false, false>(
      form, t, rows, h, arr, nullptr, stream, "the geglu kernel");
}

void geglu_backward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                    const void* dy, const void* x, void* dx, void* y, Stream stream) {
  if (rows == 0 || h == 0) return;
  const int64_t esize = t == DType::f32 ? 4 : 2;
  const auto* xb = static_cast<const char*>(x);
  auto* dxb = static_cast<char*>(dx);
  body::Arrays arr;
  arr.x = xb + (second ? h : 0) * esize;
  arr.x2 = xb + (second ? 0 : h) * esize;
  arr.out = dxb + (second ? h : 0) * esize;
  arr.out2 = dxb + (second ? 0 : h) * esize;
  arr.sx = arr.sx2 = arr.sout = arr.sout2 = 2 * h;
  arr.dy = dy;
  arr.val = y;
  arr.sdy = arr.sval = h;
  if (y)
    launch_eltwise<body::Kind::geglu_backward, false, true, false>(
        form, t, rows, h, arr, nullptr, stream, "the geglu backward kernel");
  else
    launch_eltwise<body::Kind::geglu_backward, false, false, false>(
        form, t, rows, h, arr, nullptr, stream, "the geglu backward kernel");
}

}  // namespace gelu::cuda::detail
