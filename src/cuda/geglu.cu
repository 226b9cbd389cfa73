// geglu and geglu_backward on the GPU, for either gelu_half: x [rows, 2h]
// holds a (the GELU's input) and b (its multiplier) as halves of each row;
// y = gelu(a) * b, dx_a = dy * b * gelu'(a), dx_b = dy * gelu(a), each
// computed in double (the products exact or nearly so) and rounded once.
// Both halves of an element are read before dx is written (dx may be x).
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {
namespace {

// Offsets of a and b of element (row r, column j) in x.
struct Halves {
  int64_t a, b;
};
__device__ __forceinline__ Halves halves(int64_t i, int64_t h, bool second) {
  const int64_t r = i / h, j = i - r * h;
  const int64_t first = r * 2 * h + j;
  return second ? Halves{first + h, first} : Halves{first, first + h};
}

template <Approx F, DType D>
__global__ void geglu_kernel(int64_t n, int64_t h, bool second,
                             const typename storage::Storage<D>::T* x,
                             typename storage::Storage<D>::T* y) {
  using S = storage::Storage<D>;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const Halves o = halves(i, h, second);
    const double a = S::load(x, o.a), b = S::load(x, o.b);
    S::store(y, i, math::value<F>(a) * b);
  }
}

template <Approx F, DType D>
__global__ void geglu_backward_kernel(int64_t n, int64_t h, bool second,
                                      const typename storage::Storage<D>::T* dy,
                                      const typename storage::Storage<D>::T* x,
                                      typename storage::Storage<D>::T* dx,
                                      typename storage::Storage<D>::T* y) {
  using S = storage::Storage<D>;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const Halves o = halves(i, h, second);
    const double a = S::load(x, o.a), b = S::load(x, o.b);
    const double g = S::load(dy, i);
    const double v = math::value<F>(a);
    S::store(dx, o.a, (g * b) * math::grad<F>(a));
    S::store(dx, o.b, g * v);
    if (y) S::store(y, i, v * b);
  }
}

}  // namespace

void geglu_forward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                   const void* x, void* y, Stream stream) {
  const int64_t n = rows * h;
  if (n == 0) return;
  with_form_dtype(form, t, [&](auto f, auto d) {
    using T = typename storage::Storage<decltype(d)::value>::T;
    geglu_kernel<decltype(f)::value, decltype(d)::value>
        <<<blocks_for(n), kThreads, 0, stream>>>(n, h, second, static_cast<const T*>(x),
                                                 static_cast<T*>(y));
  });
  check_launch("the geglu kernel");
}

void geglu_backward(Approx form, DType t, int64_t rows, int64_t h, bool second,
                    const void* dy, const void* x, void* dx, void* y, Stream stream) {
  const int64_t n = rows * h;
  if (n == 0) return;
  with_form_dtype(form, t, [&](auto f, auto d) {
    using T = typename storage::Storage<decltype(d)::value>::T;
    geglu_backward_kernel<decltype(f)::value, decltype(d)::value>
        <<<blocks_for(n), kThreads, 0, stream>>>(
            n, h, second, static_cast<const T*>(dy), static_cast<const T*>(x),
            static_cast<T*>(dx), static_cast<T*>(y));
  });
  check_launch("the geglu backward kernel");
}

}  // namespace gelu::cuda::detail
