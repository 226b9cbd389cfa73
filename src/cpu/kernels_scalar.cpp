// Portable scalar kernels: every op computed through the double-precision
// reference and rounded once to the storage dtype. Correct everywhere and
// slow; the Highway kernels replace them (issue 4).
#include <cstdint>

#include "core/convert.hpp"
#include "cpu/kernels.hpp"
#include "ref/gelu_ref.hpp"

namespace gelu::cpu {
namespace {

float load(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
  return 0.0f;
}

void store(DType t, void* p, int64_t i, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = f; break;
    case DType::bf16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(f); break;
    case DType::f16: static_cast<uint16_t*>(p)[i] = f32_to_f16(f); break;
  }
}

}  // namespace

void gelu_fwd(Approx a, DType t, int64_t n, const void* x, void* y) {
  for (int64_t i = 0; i < n; ++i) store(t, y, i, ref::gelu_fwd(a, load(t, x, i)));
}

void gelu_bwd(Approx a, DType t, int64_t n, const void* dy, const void* x,
              void* dx) {
  for (int64_t i = 0; i < n; ++i)
    store(t, dx, i, double(load(t, dy, i)) * ref::gelu_bwd(a, load(t, x, i)));
}

void add_fwd(Approx a, DType t, int64_t n, const void* pa, const void* pb,
             void* y) {
  for (int64_t i = 0; i < n; ++i)
    store(t, y, i, ref::gelu_fwd(a, load(t, pa, i) + load(t, pb, i)));
}

void add_bwd(Approx a, DType t, int64_t n, const void* dy, const void* pa,
             const void* pb, void* dx) {
  for (int64_t i = 0; i < n; ++i) {
    const float s = load(t, pa, i) + load(t, pb, i);
    store(t, dx, i, double(load(t, dy, i)) * ref::gelu_bwd(a, s));
  }
}

void bias_fwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t stride,
              const void* x, const void* bias, void* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t i = r * stride + j;
      store(t, y, i, ref::gelu_fwd(a, load(t, x, i) + load(t, bias, j)));
    }
}

void bias_bwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t stride,
              const void* dy, const void* x, const void* bias, void* dx,
              double* dbias) {
  for (int64_t j = 0; j < cols; ++j) dbias[j] = 0.0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t i = r * stride + j;
      const float s = load(t, x, i) + load(t, bias, j);
      const float g = static_cast<float>(double(load(t, dy, i)) * ref::gelu_bwd(a, s));
      store(t, dx, i, g);
      dbias[j] += g;
    }
}

void geglu_fwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t h,
               const void* x, void* y) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t i = r * 2 * h + j;
      store(t, y, r * h + j, ref::gelu_fwd(a, load(t, x, i)) * load(t, x, i + h));
    }
}

void geglu_bwd(Approx a, DType t, int64_t rows, int64_t cols, int64_t h,
               const void* dy, const void* x, void* dx) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; ++j) {
      const int64_t i = r * 2 * h + j;
      const double v = load(t, x, i), g = load(t, x, i + h);
      const double d = load(t, dy, r * h + j);
      store(t, dx, i, d * g * ref::gelu_bwd(a, v));
      store(t, dx, i + h, d * ref::gelu_fwd(a, v));
    }
}

const char* target_name() { return "scalar (double reference)"; }

}  // namespace gelu::cpu
