// gelu_backward and add_gelu_backward on the GPU: dx = dy * gelu'(x (+ b))
// and, where y is not null, y = gelu(...), the element-wise body
// (body/eltwise.hpp) in f32 with the scalar method, the shared terms once.
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {
namespace {

template <bool kAdd>
void run(Approx form, DType t, int64_t n, const body::Arrays& arr, bool value,
         Stream s) {
  if (value)
    launch_eltwise<body::Kind::backward, kAdd, true, false>(form, t, 1, n, arr, nullptr,
                                                            s, "the backward kernel");
  else
    launch_eltwise<body::Kind::backward, kAdd, false, false>(
        form, t, 1, n, arr, nullptr, s, "the backward kernel");
}

}  // namespace

void backward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* dy,
              const void* x, const void* addend, void* dx, void* y, Stream stream) {
  (void)cols;
  if (n == 0 || a == Addend::column) return;  // column: bias_backward (with dbias)
  body::Arrays arr;
  arr.x = x;
  arr.dy = dy;
  arr.out = dx;
  arr.val = y;
  arr.sx = arr.sdy = arr.sout = arr.sval = n;
  if (a == Addend::same) {
    arr.x2 = addend;
    arr.sx2 = n;
    run<true>(form, t, n, arr, y != nullptr, stream);
  } else {
    run<false>(form, t, n, arr, y != nullptr, stream);
  }
}

}  // namespace gelu::cuda::detail
