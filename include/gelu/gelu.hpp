// gelu-fusion public API.
//
// Plain pointers, shapes and enums only: no SIMD types cross this boundary.
// Every function validates all of its arguments before it writes any output
// and throws gelu::Error (naming the op, the argument, what was expected and
// what came) on misuse. Tensors are contiguous and row-major; all sizes are
// int64_t.
//
// Forms (Options::approximate), named as PyTorch names them:
//   Approx::none   gelu(x) = x * Phi(x),  Phi(x) = erfc(-x / sqrt(2)) / 2
//   Approx::tanh   gelu(x) = x/2 * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
//   Approx::quick  gelu(x) = x * sigmoid(1.702 x)
// Each backward is the exact derivative of its own form.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gelu/version.hpp"

namespace gelu {

enum class DType { f32, bf16, f16 };

// The forms, in Approx order: the one list that every choice by form in the
// library expands (names and parsing, validation, the CPU and CUDA dispatch,
// the reference, the PyTorch surface). A form's formula is in
// src/math/gelu_forms.hpp, its f32 method in src/math/gelu_f32.hpp and
// src/cpu/gelu_math-inl.h.
#define GELU_FUSION_FORMS(X) X(none) X(tanh) X(quick)

enum class Approx {
#define GELU_FUSION_FORM_ENUMERATOR(name) name,
  GELU_FUSION_FORMS(GELU_FUSION_FORM_ENUMERATOR)
#undef GELU_FUSION_FORM_ENUMERATOR
};
// Every form, in Approx order.
inline constexpr Approx kAllForms[] = {
#define GELU_FUSION_FORM_VALUE(name) Approx::name,
    GELU_FUSION_FORMS(GELU_FUSION_FORM_VALUE)
#undef GELU_FUSION_FORM_VALUE
};
// Which half of geglu's x [..., 2H] the GELU applies to (the other half
// multiplies it): first, gelu(x[..., :H]) * x[..., H:]; second,
// x[..., :H] * gelu(x[..., H:]) (diffusers' GEGLU: `h, gate = x.chunk(2, -1)`,
// `h * gelu(gate)`).
enum class GeluHalf { first, second };

struct Options {
  Approx approximate = Approx::none;
  // Threads to use; 0 = library default (all cores OpenMP offers). < 0 is an
  // error. Results are bit-identical for every thread count.
  int num_threads = 0;
  // geglu and geglu_backward only; the other ops require the default.
  GeluHalf gelu_half = GeluHalf::first;
};

// A read-only view of a contiguous row-major tensor.
struct ConstTensorRef {
  const void* data;
  DType dtype;
  std::vector<int64_t> shape;
};

// A writable view; converts to ConstTensorRef where an input is expected.
struct TensorRef {
  void* data;
  DType dtype;
  std::vector<int64_t> shape;
  operator ConstTensorRef() const { return {data, dtype, shape}; }
};

// Thrown for every misuse of the API; outputs are left untouched.
class Error : public std::invalid_argument {
 public:
  using std::invalid_argument::invalid_argument;
};

// --- Ops -------------------------------------------------------------------
// Each op is one entry of the library's op table (src/core/op_table.cpp:
// its tensors, their shape and dtype rules, its kind and its kernels) and
// one call here of the generic entry, detail::run_op, with the tensors in
// the table's order. OpId names the entries, in that order.
enum class OpId {
  gelu,
  gelu_backward,
  bias_gelu,
  bias_gelu_backward,
  add_gelu,
  add_gelu_backward,
  geglu,
  geglu_backward,
};

namespace detail {
// A tensor as the generic entry takes it: the caller's view, not a copy.
struct OpArg {
  OpArg() = default;
  OpArg(const void* d, DType t, const std::vector<int64_t>* s)
      : data(d), dtype(t), shape(s) {}
  OpArg(const ConstTensorRef& t)  // NOLINT(google-explicit-constructor)
      : OpArg(t.data, t.dtype, &t.shape) {}
  OpArg(const TensorRef& t)  // NOLINT(google-explicit-constructor)
      : OpArg(t.data, t.dtype, &t.shape) {}
  const void* data = nullptr;
  DType dtype = DType::f32;
  const std::vector<int64_t>* shape = nullptr;
};
// Validates, plans and runs op `id` on `tensors` (the table's order; a
// trailing optional output may be left out or be TensorRef{}).
void run_op(OpId id, std::initializer_list<OpArg> tensors, const Options& options);
}  // namespace detail

// In place: an output may be exactly the same buffer as an input of the same
// size (y = x, dx = dy, dx = x); any other overlap is an error.

// y = gelu(x)
inline void gelu(ConstTensorRef x, TensorRef y, const Options& o = {}) {
  detail::run_op(OpId::gelu, {x, y}, o);
}
// dx = dy * gelu'(x)
inline void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                          const Options& o = {}) {
  detail::run_op(OpId::gelu_backward, {dy, x, dx}, o);
}

// y = gelu(x + bias); bias is 1-D with the size of x's last dimension.
inline void bias_gelu(ConstTensorRef x, ConstTensorRef bias, TensorRef y,
                      const Options& o = {}) {
  detail::run_op(OpId::bias_gelu, {x, bias, y}, o);
}
// dx = dy * gelu'(x + bias); dbias = sum of dx over all leading dimensions,
// accumulated in f32 in a fixed order (deterministic for any thread count).
// dbias may be f32 when the other tensors are bf16/f16.
inline void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                               TensorRef dx, TensorRef dbias, const Options& o = {}) {
  detail::run_op(OpId::bias_gelu_backward, {dy, x, bias, dx, dbias}, o);
}

// y = gelu(a + b); a and b of one shape.
inline void add_gelu(ConstTensorRef a, ConstTensorRef b, TensorRef y,
                     const Options& o = {}) {
  detail::run_op(OpId::add_gelu, {a, b, y}, o);
}
// dx = dy * gelu'(a + b): the gradient of both a and b.
inline void add_gelu_backward(ConstTensorRef dy, ConstTensorRef a, ConstTensorRef b,
                              TensorRef dx, const Options& o = {}) {
  detail::run_op(OpId::add_gelu_backward, {dy, a, b, dx}, o);
}

// x [..., 2H] -> y [..., H] = gelu(x[..., :H]) * x[..., H:]
// (with Options::gelu_half = second: x[..., :H] * gelu(x[..., H:]))
inline void geglu(ConstTensorRef x, TensorRef y, const Options& o = {}) {
  detail::run_op(OpId::geglu, {x, y}, o);
}
// dx [..., 2H]: dx[..., :H] = dy * x[..., H:] * gelu'(x[..., :H]),
//               dx[..., H:] = dy * gelu(x[..., :H])
// (the halves' roles swapped with gelu_half = second)
inline void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                           const Options& o = {}) {
  detail::run_op(OpId::geglu_backward, {dy, x, dx}, o);
}

// --- Backward ops that also return the forward's value -----------------------
// The same backward pass, reading x (and bias) once, also stores the forward
// op's result y: what the next layer's weight gradient needs, recomputed
// instead of kept from the forward (activation memory). y is an output like
// any other (shape and dtype of the forward's y, checked for overlap), as
// accurate as the forward op's (same contract), in place on an input of its
// shape and dtype allowed (y = x for gelu_backward). y = TensorRef{} (null
// data and no shape: not requested) makes these the functions above.

// dx = dy * gelu'(x) and y = gelu(x)
inline void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                          TensorRef y, const Options& o = {}) {
  detail::run_op(OpId::gelu_backward, {dy, x, dx, y}, o);
}
// dx, dbias as above and y = gelu(x + bias) (y has x's shape and dtype)
inline void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                               TensorRef dx, TensorRef dbias, TensorRef y,
                               const Options& o = {}) {
  detail::run_op(OpId::bias_gelu_backward, {dy, x, bias, dx, dbias, y}, o);
}
// dx as above and y [..., H] = gelu(x[..., :H]) * x[..., H:]
inline void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                           TensorRef y, const Options& o = {}) {
  detail::run_op(OpId::geglu_backward, {dy, x, dx, y}, o);
}

// --- Helpers ---------------------------------------------------------------
const char* dtype_name(DType);          // "f32", "bf16", "f16"
const char* approx_name(Approx);        // "none", "tanh", "quick"
Approx parse_approx(std::string_view);  // throws Error on an unknown name
// The forms' names as a message lists them: "'none', 'tanh' or 'quick'".
std::string approx_names_listed();
const char* gelu_half_name(GeluHalf);        // "first", "second"
GeluHalf parse_gelu_half(std::string_view);  // throws Error on an unknown name
DType parse_dtype(std::string_view);         // throws Error on an unknown name
std::size_t dtype_size(DType);               // bytes per element
// Product of the dimensions; throws Error on a negative dimension or overflow.
int64_t numel(const std::vector<int64_t>& shape);
// The SIMD target chosen at run time for this CPU (e.g. "AVX3", "AVX2").
std::string simd_target();
// The SIMD targets this build has that this CPU runs, best first (e.g.
// "AVX3_SPR", "AVX3", "AVX2", "SSE4", "EMU128").
std::vector<std::string> simd_targets();
// Runs every op on one of simd_targets() (case-insensitive; "" or "best":
// the best again), to measure or test a narrower CPU's code on this one.
// Throws Error naming the choices on any other name. Process-wide: call it
// while no op runs. The tools and the Python package apply the environment
// variable GELU_SIMD_TARGET through it.
void set_simd_target(std::string_view name);
// Threads a call with num_threads = 0 uses.
int default_num_threads();

}  // namespace gelu
