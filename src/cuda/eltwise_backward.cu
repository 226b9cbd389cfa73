// gelu_backward and add_gelu_backward on the GPU: dx = dy * gelu'(x (+ b))
// and optionally y = gelu(...), each element computed in double
// (scalar_math.hpp) and rounded once. Every input of an element is read
// before its outputs are written, so dx or y may be an input (in place).
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {
namespace {

template <Approx F, DType D, Addend A, bool kValue>
__global__ void backward_kernel(int64_t n, int64_t cols,
                                const typename storage::Storage<D>::T* dy,
                                const typename storage::Storage<D>::T* x,
                                const typename storage::Storage<D>::T* b,
                                typename storage::Storage<D>::T* dx,
                                typename storage::Storage<D>::T* y) {
  using S = storage::Storage<D>;
  for (int64_t i = first_index(); i < n; i += grid_stride()) {
    const double s = pre_activation<D, A>(x, b, i, cols);
    const double g = static_cast<double>(S::load(dy, i));
    S::store(dx, i, g * math::grad<F>(s));
    if constexpr (kValue) S::store(y, i, math::value<F>(s));
  }
}

template <Addend A, bool kValue>
void launch(Approx form, DType t, int64_t n, int64_t cols, const void* dy,
            const void* x, const void* addend, void* dx, void* y, Stream stream) {
  with_form_dtype(form, t, [&](auto f, auto d) {
    using T = typename storage::Storage<decltype(d)::value>::T;
    backward_kernel<decltype(f)::value, decltype(d)::value, A, kValue>
        <<<blocks_for(n), kThreads, 0, stream>>>(
            n, cols, static_cast<const T*>(dy), static_cast<const T*>(x),
            static_cast<const T*>(addend), static_cast<T*>(dx), static_cast<T*>(y));
  });
  check_launch("the backward kernel");
}

template <Addend A>
void launch(Approx form, DType t, int64_t n, int64_t cols, const void* dy,
            const void* x, const void* addend, void* dx, void* y, Stream stream) {
  if (y) launch<A, true>(form, t, n, cols, dy, x, addend, dx, y, stream);
  else launch<A, false>(form, t, n, cols, dy, x, addend, dx, y, stream);
}

}  // namespace

void backward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* dy,
              const void* x, const void* addend, void* dx, void* y, Stream stream) {
  if (n == 0) return;
  switch (a) {
    case Addend::none:
      return launch<Addend::none>(form, t, n, cols, dy, x, addend, dx, y, stream);
    case Addend::same:
      return launch<Addend::same>(form, t, n, cols, dy, x, addend, dx, y, stream);
    case Addend::column: break;  // bias_backward (with dbias)
  }
}

}  // namespace gelu::cuda::detail
