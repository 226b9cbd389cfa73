// Shared by the kernel units (.cu): the launch shape of the element-wise
// kernels, the launch check, and the dispatch from the run-time form and
// dtype to a kernel template's instance.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "cuda/launch.hpp"
#include "cuda/scalar_math.hpp"
#include "cuda/storage.hpp"

namespace gelu::cuda::detail {

// Threads per block of the element-wise kernels, and the most blocks one
// launch asks for (the kernels stride over the rest; results do not depend
// on the grid).
inline constexpr int kThreads = 256;
inline constexpr int64_t kMaxBlocks = int64_t{1} << 20;

inline unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < kMaxBlocks ? (b > 0 ? b : 1) : kMaxBlocks);
}

// The first index of this thread and the stride of the grid, 64-bit.
__device__ __forceinline__ int64_t first_index() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ int64_t grid_stride() {
  return static_cast<int64_t>(gridDim.x) * blockDim.x;
}

// Throws gelu::Error when the launch just made failed.
inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("gelu::cuda: launching ") + what +
                " failed: " + cudaGetErrorString(e));
}

template <Approx F>
using FormTag = std::integral_constant<Approx, F>;
template <DType D>
using DTypeTag = std::integral_constant<DType, D>;

// fn(FormTag, DTypeTag) for the run-time form and dtype.
template <class Fn>
void with_form_dtype(Approx form, DType t, Fn&& fn) {
  auto on_dtype = [&](auto f) {
    switch (t) {
      case DType::f32: return fn(f, DTypeTag<DType::f32>{});
      case DType::bf16: return fn(f, DTypeTag<DType::bf16>{});
      case DType::f16: return fn(f, DTypeTag<DType::f16>{});
    }
  };
  switch (form) {
    case Approx::none: return on_dtype(FormTag<Approx::none>{});
    case Approx::tanh: return on_dtype(FormTag<Approx::tanh>{});
    case Approx::quick: return on_dtype(FormTag<Approx::quick>{});
  }
}

// The pre-activation of element i: x, or x + the addend rounded to f32 once
// (as an unfused f32 computation: the README's fused pre-activations).
template <DType D, Addend A>
__device__ __forceinline__ double pre_activation(
    const typename storage::Storage<D>::T* x, const typename storage::Storage<D>::T* b,
    int64_t i, int64_t cols) {
  using S = storage::Storage<D>;
  const float v = S::load(x, i);
  if constexpr (A == Addend::none) {
    return v;
  } else if constexpr (A == Addend::same) {
    return static_cast<double>(__fadd_rn(v, S::load(b, i)));
  } else {
    return static_cast<double>(__fadd_rn(v, S::load(b, i % cols)));
  }
}

}  // namespace gelu::cuda::detail
