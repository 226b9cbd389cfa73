// Backward ops that also return the forward's value: torch.ops.gelu_fusion.
// <op>_and_value, the library's backward with its optional output y
// requested (include/gelu/gelu.hpp). One pass over x (and bias) writes the
// gradients and y = the forward op's result, so an autograd node can keep
// only the pre-activation and get y back for the next layer's weight
// gradient (gelu_fusion/gelu_linear.py). Called from inside backward
// functions: no autograd of their own.
#include <torch/library.h>

#include <string_view>
#include <tuple>
#include <vector>

#include "common.hpp"

namespace gelu_torch {
namespace {

using at::Tensor;
using c10::string_view;

std::tuple<Tensor, Tensor> gelu_backward_and_value(const Tensor& dy_in,
                                                   const Tensor& x_in,
                                                   string_view approximate) {
  constexpr const char* kOp = "gelu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in);
  const gelu::Options o = options(kOp, approximate);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  Tensor dx = new_output(x.sizes(), x), y = new_output(x.sizes(), x);
  call([&] {
    gelu::gelu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), ref(y, t), o);
  });
  return {dx, y};
}

// dbias takes the bias's dtype, as bias_gelu_backward's.
std::tuple<Tensor, Tensor, Tensor> bias_gelu_backward_and_value(
    const Tensor& dy_in, const Tensor& x_in, const Tensor& bias_in,
    string_view approximate) {
  constexpr const char* kOp = "bias_gelu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in),
                    tb = dtype_of(kOp, "bias", bias_in);
  const gelu::Options o = options(kOp, approximate);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(),
               bias = bias_in.contiguous();
  Tensor dx = new_output(x.sizes(), x), dbias = new_output(bias.sizes(), bias),
         y = new_output(x.sizes(), x);
  call([&] {
    gelu::bias_gelu_backward(cref(dy, tdy), cref(x, t), cref(bias, tb), ref(dx, t),
                             ref(dbias, tb), ref(y, t), o);
  });
  return {dx, dbias, y};
}

// gelu_half as geglu_backward's: the half of x the GELU applies to.
std::tuple<Tensor, Tensor> geglu_backward_and_value(const Tensor& dy_in,
                                                    const Tensor& x_in,
                                                    string_view approximate,
                                                    string_view gelu_half) {
  constexpr const char* kOp = "geglu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in);
  const gelu::Options o = geglu_options(kOp, approximate, gelu_half);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  const std::vector<int64_t> ys = half_last(x);
  Tensor dx = new_output(x.sizes(), x), y = new_output(ys, x);
  call([&] {
    gelu::geglu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), ref(y, t), o);
  });
  return {dx, y};
}

// The .out overloads write y into `y`: contiguous, of the shape and dtype
// the op writes there. y may be grad_output itself (the library computes y
// in place on an input of its shape and dtype): the node passes its
// temporary dY, so the backward allocates no buffer for y.
// The .grad_x_out overloads also write grad_x into a given tensor of x's
// shape and dtype, which may be grad_output itself (dx in place over dY: the
// node's dY is its own matmul's temporary; y then goes to a reused buffer).
// Not for geglu: its grad_x is twice grad_output's size, never in place.
// An out tensor is checked here (before anything is written), its overlap
// with the inputs and the other output by the library.
void check_exact_out(const char* op, const char* name, const Tensor& out,
                     at::IntArrayRef sizes, const Tensor& like) {
  check_out(op, name, out, like);
  TORCH_CHECK(out.sizes() == sizes && out.is_contiguous(), "gelu_fusion::", op, ": ",
              name, " has shape ", out.sizes(),
              (out.is_contiguous() ? "" : " (not contiguous)"),
              ", expected a contiguous tensor of shape ", sizes);
}

// The .out and .grad_x_out overloads: y into the given tensor, grad_x into
// the given one (grad_x_out; it may be grad_output) or a new one (out).
// Every given output is checked before anything is written.
Tensor gelu_backward_and_value_into(const Tensor& dy_in, const Tensor& x_in,
                                    string_view approximate, Tensor* grad_x,
                                    Tensor& y) {
  constexpr const char* kOp = "gelu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in);
  const gelu::Options o = options(kOp, approximate);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  if (grad_x) check_exact_out(kOp, "grad_x", *grad_x, x.sizes(), x);
  check_exact_out(kOp, "y", y, x.sizes(), x);
  Tensor dx = grad_x ? *grad_x : new_output(x.sizes(), x);
  call([&] {
    gelu::gelu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), ref(y, t), o);
  });
  return dx;
}

Tensor gelu_backward_and_value_out(const Tensor& dy, const Tensor& x,
                                   string_view approximate, Tensor& y) {
  return gelu_backward_and_value_into(dy, x, approximate, nullptr, y);
}

Tensor gelu_backward_and_value_grad_x_out(const Tensor& dy, const Tensor& x,
                                          string_view approximate, Tensor& grad_x,
                                          Tensor& y) {
  return gelu_backward_and_value_into(dy, x, approximate, &grad_x, y);
}

std::tuple<Tensor, Tensor> bias_gelu_backward_and_value_into(
    const Tensor& dy_in, const Tensor& x_in, const Tensor& bias_in,
    string_view approximate, Tensor* grad_x, Tensor& y) {
  constexpr const char* kOp = "bias_gelu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in),
                    tb = dtype_of(kOp, "bias", bias_in);
  const gelu::Options o = options(kOp, approximate);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous(),
               bias = bias_in.contiguous();
  if (grad_x) check_exact_out(kOp, "grad_x", *grad_x, x.sizes(), x);
  check_exact_out(kOp, "y", y, x.sizes(), x);
  Tensor dx = grad_x ? *grad_x : new_output(x.sizes(), x),
         dbias = new_output(bias.sizes(), bias);
  call([&] {
    gelu::bias_gelu_backward(cref(dy, tdy), cref(x, t), cref(bias, tb), ref(dx, t),
                             ref(dbias, tb), ref(y, t), o);
  });
  return {dx, dbias};
}

std::tuple<Tensor, Tensor> bias_gelu_backward_and_value_out(const Tensor& dy,
                                                            const Tensor& x,
                                                            const Tensor& bias,
                                                            string_view approximate,
                                                            Tensor& y) {
  return bias_gelu_backward_and_value_into(dy, x, bias, approximate, nullptr, y);
}

std::tuple<Tensor, Tensor> bias_gelu_backward_and_value_grad_x_out(
    const Tensor& dy, const Tensor& x, const Tensor& bias, string_view approximate,
    Tensor& grad_x, Tensor& y) {
  return bias_gelu_backward_and_value_into(dy, x, bias, approximate, &grad_x, y);
}

Tensor geglu_backward_and_value_out(const Tensor& dy_in, const Tensor& x_in,
                                    string_view approximate, string_view gelu_half,
                                    Tensor& y) {
  constexpr const char* kOp = "geglu_backward_and_value";
  const gelu::DType t = dtype_of(kOp, "x", x_in),
                    tdy = dtype_of(kOp, "grad_output", dy_in);
  const gelu::Options o = geglu_options(kOp, approximate, gelu_half);
  const Tensor dy = dy_in.contiguous(), x = x_in.contiguous();
  const std::vector<int64_t> ys = half_last(x);
  check_exact_out(kOp, "y", y, ys, x);
  Tensor dx = new_output(x.sizes(), x);
  call([&] {
    gelu::geglu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), ref(y, t), o);
  });
  return dx;
}

}  // namespace
}  // namespace gelu_torch

// Each returns the backward op's results followed by y, the forward op's
// result recomputed in the same pass.
TORCH_LIBRARY_FRAGMENT(gelu_fusion, m) {
  m.def(
      "gelu_backward_and_value(Tensor grad_output, Tensor x, *, "
      "str approximate='none') -> (Tensor grad_x, Tensor y)");
  m.def(
      "bias_gelu_backward_and_value(Tensor grad_output, Tensor x, Tensor bias, *, "
      "str approximate='none') -> (Tensor grad_x, Tensor grad_bias, Tensor y)");
  m.def(
      "geglu_backward_and_value(Tensor grad_output, Tensor x, *, "
      "str approximate='none', str gelu_half='first') -> (Tensor grad_x, Tensor y)");
}

// .out: y written into the given tensor (it may be grad_output).
TORCH_LIBRARY_FRAGMENT(gelu_fusion, m) {
  m.def(
      "gelu_backward_and_value.out(Tensor grad_output, Tensor x, *, "
      "str approximate='none', Tensor(a!) y) -> Tensor grad_x");
  m.def(
      "bias_gelu_backward_and_value.out(Tensor grad_output, Tensor x, Tensor bias, *, "
      "str approximate='none', Tensor(a!) y) -> (Tensor grad_x, Tensor grad_bias)");
  m.def(
      "geglu_backward_and_value.out(Tensor grad_output, Tensor x, *, "
      "str approximate='none', str gelu_half='first', Tensor(a!) y) -> Tensor grad_x");
}

// .grad_x_out: grad_x and y written into the given tensors (grad_x may be
// grad_output).
TORCH_LIBRARY_FRAGMENT(gelu_fusion, m) {
  m.def(
      "gelu_backward_and_value.grad_x_out(Tensor grad_output, Tensor x, *, "
      "str approximate='none', Tensor(a!) grad_x, Tensor(b!) y) -> Tensor(a!) grad_x");
  m.def(
      "bias_gelu_backward_and_value.grad_x_out(Tensor grad_output, Tensor x, "
      "Tensor bias, *, str approximate='none', Tensor(a!) grad_x, Tensor(b!) y) -> "
      "(Tensor(a!) grad_x, Tensor grad_bias)");
}

TORCH_LIBRARY_IMPL(gelu_fusion, CPU, m) {
  m.impl("gelu_backward_and_value.out", &gelu_torch::gelu_backward_and_value_out);
  m.impl("bias_gelu_backward_and_value.out",
         &gelu_torch::bias_gelu_backward_and_value_out);
  m.impl("geglu_backward_and_value.out", &gelu_torch::geglu_backward_and_value_out);
  m.impl("gelu_backward_and_value.grad_x_out",
         &gelu_torch::gelu_backward_and_value_grad_x_out);
  m.impl("bias_gelu_backward_and_value.grad_x_out",
         &gelu_torch::bias_gelu_backward_and_value_grad_x_out);
  m.impl("gelu_backward_and_value", &gelu_torch::gelu_backward_and_value);
  m.impl("bias_gelu_backward_and_value", &gelu_torch::bias_gelu_backward_and_value);
  m.impl("geglu_backward_and_value", &gelu_torch::geglu_backward_and_value);
}
