// Shared by the kernel units (.cu): the one kernel that runs a body
// (src/cuda/body: phase 0, a barrier, phase 1), the launch of an
// element-wise body over its plan, the launch check, and the dispatch from
// the run-time form and dtype to a template's instance.
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <type_traits>

#include "cuda/body/dbias.hpp"
#include "cuda/body/eltwise.hpp"
#include "cuda/launch.hpp"
#include "math/gelu_forms.hpp"

namespace gelu::cuda::detail {

template <class Body, class Args>
__global__ void __launch_bounds__(body::kBlockThreads) body_kernel(Args args) {
  __shared__ double shared[Body::kSharedDoubles > 0 ? Body::kSharedDoubles : 1];
  const body::Where w = body::here();
  Body::phase0(w, args, shared);
  if constexpr (Body::kPhase1) {
    __syncthreads();
    Body::phase1(w, args, shared);
  }
}

// Throws gelu::Error when the launch just made failed.
inline void check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess)
    throw Error(std::string("gelu::cuda: launching ") + what +
                " failed: " + cudaGetErrorString(e));
}

template <class Body, class Args>
void launch_body(const body::Launch& l, const Args& args, Stream stream) {
  body_kernel<Body, Args>
      <<<dim3(l.grid.x, l.grid.y), dim3(l.block.x, l.block.y), 0, stream>>>(args);
}

using ::gelu::math::FormTag;
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
  ::gelu::math::visit_form(form, on_dtype);
}

// An element-wise body over rows x cols of `arrays` (eltwise.hpp), with
// 16-byte accesses where the plan allows them.
template <body::Kind K, bool kAdd, bool kValue, bool kDbias>
void launch_eltwise(Approx form, DType t, int64_t rows, int64_t cols,
                    const body::Arrays& arrays, double* partial, Stream stream,
                    const char* what) {
  with_form_dtype(form, t, [&](auto f, auto d) {
    constexpr Approx F = decltype(f)::value;
    constexpr DType D = decltype(d)::value;
    using T = typename body::Elem<D>::T;
    const body::EltwisePlan p = body::plan_eltwise(rows, cols, int(sizeof(T)), arrays,
                                                   kDbias);
    body::EltwiseArgs g;
    g.a = arrays;
    g.rows = rows;
    g.cols = cols;
    g.head = p.head;
    g.vectors = p.vectors;
    g.tail = p.tail;
    g.partial = partial;
    if (p.vec)
      launch_body<body::Eltwise<F, D, K, kAdd, kValue, kDbias, body::kVecOf<D>>>(
          p.launch, g, stream);
    else
      launch_body<body::Eltwise<F, D, K, kAdd, kValue, kDbias, 1>>(p.launch, g, stream);
  });
  check_launch(what);
}

}  // namespace gelu::cuda::detail
