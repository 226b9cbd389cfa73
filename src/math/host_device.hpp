// GELU_HD marks a function that runs on the host and, under nvcc, on the
// GPU: the scalar math and the CUDA kernels' bodies, which the CPU tests
// compile with the host compiler and run there.
#pragma once

#if defined(__CUDACC__)
#define GELU_HD __host__ __device__ __forceinline__
#else
#define GELU_HD inline
#endif
// Unroll the next loop (each compiler's own pragma; none in nvcc's host
// pass, whose front end knows neither).
#if defined(__CUDA_ARCH__)
#define GELU_UNROLL _Pragma("unroll")
#define GELU_NO_UNROLL _Pragma("unroll 1")
#elif defined(__CUDACC__)
#define GELU_UNROLL
#define GELU_NO_UNROLL
#else
#define GELU_UNROLL _Pragma("GCC unroll 8")
#define GELU_NO_UNROLL
#endif

#include <stdint.h>
#include <string.h>

namespace gelu::math {

// The bits of an f32, and back, on either side.
GELU_HD uint32_t bits_of(float f) {
#if defined(__CUDA_ARCH__)
  return __float_as_uint(f);
#else
  uint32_t u;
  memcpy(&u, &f, 4);
  return u;
#endif
}
GELU_HD float float_from_bits(uint32_t u) {
#if defined(__CUDA_ARCH__)
  return __uint_as_float(u);
#else
  float f;
  memcpy(&f, &u, 4);
  return f;
#endif
}

}  // namespace gelu::math
