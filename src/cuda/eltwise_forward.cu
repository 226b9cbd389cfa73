// gelu, add_gelu and bias_gelu on the GPU: y = gelu(x (+ addend)), each
// element computed in double (scalar_math.hpp) and rounded once.
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {
namespace {

template <Approx F, DType D, Addend A>
__global__ void forward_kernel(int64_t n, int64_t cols,
                               const typename storage::Storage<D>::T* x,
                               const typename storage::Storage<D>::T* b,
                               typename storage::Storage<D>::T* y) {
  using S = storage::Storage<D>;
  for (int64_t i = first_index(); i < n; i += grid_stride())
    S::store(y, i, math::value<F>(pre_activation<D, A>(x, b, i, cols)));
}

template <Addend A>
void launch(Approx form, DType t, int64_t n, int64_t cols, const void* x,
            const void* addend, void* y, Stream stream) {
  with_form_dtype(form, t, [&](auto f, auto d) {
    using T = typename storage::Storage<decltype(d)::value>::T;
    forward_kernel<decltype(f)::value, decltype(d)::value, A>
        <<<blocks_for(n), kThreads, 0, stream>>>(n, cols, static_cast<const T*>(x),
                                                 static_cast<const T*>(addend),
                                                 static_cast<T*>(y));
  });
  check_launch("the forward kernel");
}

}  // namespace

void forward(Approx form, DType t, Addend a, int64_t n, int64_t cols, const void* x,
             const void* addend, void* y, Stream stream) {
  if (n == 0) return;
  switch (a) {
    case Addend::none:
      return launch<Addend::none>(form, t, n, cols, x, addend, y, stream);
    case Addend::same:
      return launch<Addend::same>(form, t, n, cols, x, addend, y, stream);
    case Addend::column:
      return launch<Addend::column>(form, t, n, cols, x, addend, y, stream);
  }
}

}  // namespace gelu::cuda::detail
