// The op schemas of torch.ops.gelu_fusion and their CPU kernels.
//
// Each kernel checks device and dtype (PyTorch-style messages), makes its
// inputs contiguous, allocates outputs with at::empty and calls the public
// C++ API, whose gelu::Error texts pass through as RuntimeError. Shapes are
// validated by the library (src/core/validate.cpp), against the op table.
#include <torch/library.h>

#include <limits>
#include <tuple>

#include "common.hpp"

namespace gelu_torch {

bool& poison_outputs() {
  static bool on = false;
  return on;
}

namespace {

using at::Tensor;
using c10::string_view;

Tensor gelu_cpu(const Tensor& x_in, string_view approximate) {
  const gelu::DType t = dtype_of("gelu", "x", x_in);
  const gelu::Options o = options("gelu", approximate);
  const Tensor x = x_in.contiguous();
  Tensor y = new_output(x.sizes(), x);
  call([&] { gelu::gelu(cref(x, t), ref(y, t), o); });
  return y;
}

Tensor gelu_backward_cpu(const Tensor& dy_in, const Tensor& x_in,
                         string_view approximate) {
  const gelu::DType t = dtype_of("gelu_backward", "x", x_in);
  const gelu::DType tdy = dtype_of("gelu_backward", "grad_output", dy_in);
  const gelu::Options o = options("gelu_backward", approximate);
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = new_output(x.sizes(), x);
  call([&] { gelu::gelu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), o); });
  return dx;
}

Tensor bias_gelu_cpu(const Tensor& x_in, const Tensor& bias_in,
                     string_view approximate) {
  const gelu::DType t = dtype_of("bias_gelu", "x", x_in);
  const gelu::DType tb = dtype_of("bias_gelu", "bias", bias_in);
  const gelu::Options o = options("bias_gelu", approximate);
  const Tensor x = x_in.contiguous(), bias = bias_in.contiguous();
  Tensor y = new_output(x.sizes(), x);
  call([&] { gelu::bias_gelu(cref(x, t), cref(bias, tb), ref(y, t), o); });
  return y;
}

// dbias takes the bias's dtype: the library sums in f32 and rounds once.
std::tuple<Tensor, Tensor> bias_gelu_backward_cpu(const Tensor& dy_in,
                                                  const Tensor& x_in,
                                                  const Tensor& bias_in,
                                                  string_view approximate) {
  const char* op = "bias_gelu_backward";
  const gelu::DType t = dtype_of(op, "x", x_in);
  const gelu::DType tdy = dtype_of(op, "grad_output", dy_in);
  const gelu::DType tb = dtype_of(op, "bias", bias_in);
  const gelu::Options o = options(op, approximate);
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous(),
               bias = bias_in.contiguous();
  Tensor dx = new_output(x.sizes(), x);
  Tensor dbias = new_output(bias.sizes(), bias);
  call([&] {
    gelu::bias_gelu_backward(cref(dy, tdy), cref(x, t), cref(bias, tb),
                             ref(dx, t), ref(dbias, tb), o);
  });
  return {dx, dbias};
}

Tensor add_gelu_cpu(const Tensor& a_in, const Tensor& b_in,
                    string_view approximate) {
  const gelu::DType ta = dtype_of("add_gelu", "a", a_in);
  const gelu::DType tb = dtype_of("add_gelu", "b", b_in);
  const gelu::Options o = options("add_gelu", approximate);
  const Tensor a = a_in.contiguous(), b = b_in.contiguous();
  Tensor y = new_output(a.sizes(), a);
  call([&] { gelu::add_gelu(cref(a, ta), cref(b, tb), ref(y, ta), o); });
  return y;
}

Tensor add_gelu_backward_cpu(const Tensor& dy_in, const Tensor& a_in,
                             const Tensor& b_in, string_view approximate) {
  const char* op = "add_gelu_backward";
  const gelu::DType tdy = dtype_of(op, "grad_output", dy_in);
  const gelu::DType ta = dtype_of(op, "a", a_in);
  const gelu::DType tb = dtype_of(op, "b", b_in);
  const gelu::Options o = options(op, approximate);
  const Tensor dy = dy_in.contiguous(), a = a_in.contiguous(),
               b = b_in.contiguous();
  Tensor dx = new_output(a.sizes(), a);
  call([&] {
    gelu::add_gelu_backward(cref(dy, tdy), cref(a, ta), cref(b, tb),
                            ref(dx, ta), o);
  });
  return dx;
}

// y's shape is x's with the last dimension halved; a 0-d x keeps [] so the
// library reports the rank error.
std::vector<int64_t> half_last(const Tensor& x) {
  std::vector<int64_t> s(x.sizes().begin(), x.sizes().end());
  if (!s.empty()) s.back() /= 2;
  return s;
}

Tensor geglu_cpu(const Tensor& x_in, string_view approximate) {
  const gelu::DType t = dtype_of("geglu", "x", x_in);
  const gelu::Options o = options("geglu", approximate);
  const Tensor x = x_in.contiguous();
  Tensor y = new_output(half_last(x), x);
  call([&] { gelu::geglu(cref(x, t), ref(y, t), o); });
  return y;
}

Tensor geglu_backward_cpu(const Tensor& dy_in, const Tensor& x_in,
                          string_view approximate) {
  const gelu::DType t = dtype_of("geglu_backward", "x", x_in);
  const gelu::DType tdy = dtype_of("geglu_backward", "grad_output", dy_in);
  const gelu::Options o = options("geglu_backward", approximate);
  const Tensor x = x_in.contiguous(), dy = dy_in.contiguous();
  Tensor dx = new_output(x.sizes(), x);
  call([&] { gelu::geglu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), o); });
  return dx;
}

bool set_poison_outputs(bool on) {
  const bool was = poison_outputs();
  poison_outputs() = on;
  return was;
}

std::string simd_target() { return gelu::simd_target(); }

}  // namespace
}  // namespace gelu_torch

// The attribute matches torch.nn.functional.gelu's: keyword-only
// `str approximate='none'`, here also accepting 'quick'. Each backward takes
// the gradient first, then exactly the forward inputs it consumes.
TORCH_LIBRARY(gelu_fusion, m) {
  m.def("gelu(Tensor x, *, str approximate='none') -> Tensor");
  m.def("gelu_backward(Tensor grad_output, Tensor x, *, "
        "str approximate='none') -> Tensor");
  m.def("bias_gelu(Tensor x, Tensor bias, *, str approximate='none') -> Tensor");
  m.def("bias_gelu_backward(Tensor grad_output, Tensor x, Tensor bias, *, "
        "str approximate='none') -> (Tensor grad_x, Tensor grad_bias)");
  m.def("add_gelu(Tensor a, Tensor b, *, str approximate='none') -> Tensor");
  m.def("add_gelu_backward(Tensor grad_output, Tensor a, Tensor b, *, "
        "str approximate='none') -> Tensor");
  m.def("geglu(Tensor x, *, str approximate='none') -> Tensor");
  m.def("geglu_backward(Tensor grad_output, Tensor x, *, "
        "str approximate='none') -> Tensor");
  // Not ops on tensors: test and diagnostic helpers.
  m.def("_set_poison_outputs(bool on) -> bool",
        &gelu_torch::set_poison_outputs);
  m.def("simd_target() -> str", &gelu_torch::simd_target);
}

TORCH_LIBRARY_IMPL(gelu_fusion, CPU, m) {
  using namespace gelu_torch;
  m.impl("gelu", &gelu_cpu);
  m.impl("gelu_backward", &gelu_backward_cpu);
  m.impl("bias_gelu", &bias_gelu_cpu);
  m.impl("bias_gelu_backward", &bias_gelu_backward_cpu);
  m.impl("add_gelu", &add_gelu_cpu);
  m.impl("add_gelu_backward", &add_gelu_backward_cpu);
  m.impl("geglu", &geglu_cpu);
  m.impl("geglu_backward", &geglu_backward_cpu);
}
