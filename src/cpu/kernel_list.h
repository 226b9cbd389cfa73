// Every exported per-target entry point of the CPU kernels, once:
//   X(Name, name, return type, (parameters), (arguments))
// Name: the per-target function in each target's namespace (declared by
// kernel_entries-inl.h, defined by a kernel unit kernels_*.cpp); name: the
// dispatching function of src/cpu/kernels.hpp (defined by
// kernels_dispatch.cpp, which HWY_EXPORTs Name). A new entry point is one
// line here, its definition in a kernel unit and its documented declaration
// in kernels.hpp (the compiler checks the three agree).
#pragma once

#define GELU_CPU_KERNEL_ENTRIES(X)                                                     \
  X(GeluFwd, gelu_fwd, void,                                                           \
    (Approx a, DType t, int64_t n, const void* x, void* y, bool stream),               \
    (a, t, n, x, y, stream))                                                           \
  X(GeluBwd, gelu_bwd, void,                                                           \
    (Approx a, DType t, int64_t n, const void* dy, const void* x, void* dx, void* y,   \
     bool stream),                                                                     \
    (a, t, n, dy, x, dx, y, stream))                                                   \
  X(AddFwd, add_fwd, void,                                                             \
    (Approx a, DType t, int64_t n, const void* pa, const void* pb, void* y,            \
     bool stream),                                                                     \
    (a, t, n, pa, pb, y, stream))                                                      \
  X(AddBwd, add_bwd, void,                                                             \
    (Approx a, DType t, int64_t n, const void* dy, const void* pa, const void* pb,     \
     void* dx, bool stream),                                                           \
    (a, t, n, dy, pa, pb, dx, stream))                                                 \
  X(BiasFwd, bias_fwd, void,                                                           \
    (Approx a, DType t, int64_t rows, int64_t cols, int64_t stride, const void* x,     \
     const void* bias, void* y, bool stream),                                          \
    (a, t, rows, cols, stride, x, bias, y, stream))                                    \
  X(BiasBwd, bias_bwd, void,                                                           \
    (Approx a, DType t, int64_t rows, int64_t cols, int64_t stride, const void* dy,    \
     const void* x, const void* bias, void* dx, double* dbias, void* y, bool stream),  \
    (a, t, rows, cols, stride, dy, x, bias, dx, dbias, y, stream))                     \
  X(GegluFwd, geglu_fwd, void,                                                         \
    (Approx a, DType t, int64_t rows, int64_t cols, int64_t h, const void* x, void* y, \
     bool gelu_second, bool stream),                                                   \
    (a, t, rows, cols, h, x, y, gelu_second, stream))                                  \
  X(GegluBwd, geglu_bwd, void,                                                         \
    (Approx a, DType t, int64_t rows, int64_t cols, int64_t h, const void* dy,         \
     const void* x, void* dx, bool gelu_second, void* y, bool stream),                 \
    (a, t, rows, cols, h, dy, x, dx, gelu_second, y, stream))                          \
  X(ToF32, to_f32, void, (DType t, int64_t n, const void* in, float* out),             \
    (t, n, in, out))                                                                   \
  X(FromF32, from_f32, void, (DType t, int64_t n, const float* in, void* out),         \
    (t, n, in, out))                                                                   \
  X(SumsTo, sums_to, void,                                                             \
    (DType t, int64_t n, int64_t blocks, const double* in, void* out),                 \
    (t, n, blocks, in, out))                                                           \
  X(RoundResultsToBf16, round_results_to_bf16, void,                                   \
    (int64_t n, const float* in, uint16_t* out), (n, in, out))                         \
  X(GeluFwdF32WithMathOf, gelu_fwd_f32_with_math_of, void,                             \
    (DType t, Approx a, int64_t n, const float* x, float* y), (t, a, n, x, y))         \
  X(GeluBwdF32WithMathOf, gelu_bwd_f32_with_math_of, void,                             \
    (DType t, Approx a, int64_t n, const float* dy, const float* x, float* dx),        \
    (t, a, n, dy, x, dx))                                                              \
  X(Target, dispatch_target, int64_t, (), ())
