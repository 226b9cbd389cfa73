// Autograd for torch.ops.gelu_fusion: each forward op's Autograd kernel
// wraps a torch::autograd::Function (so eager mode and TorchScript both get
// gradients) that saves only what its backward consumes and calls the
// backward op, which runs our fused backward kernel.
//
// The device is checked here first: the Autograd key runs before any
// backend's kernel, so a tensor on another device gets our message instead
// of the dispatcher's "could not run ... with arguments from the X backend".
#include <torch/autograd.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/library.h>

#include <ATen/core/dispatch/Dispatcher.h>

#include "common.hpp"

namespace gelu_torch {
namespace {

using at::Tensor;
using c10::string_view;
using torch::autograd::AutogradContext;
using torch::autograd::variable_list;


// The typed handle of each op, looked up once.
#define GELU_TORCH_OP(fn, name, Sig)                                       \
  const c10::TypedOperatorHandle<Sig>& fn() {                              \
    static const auto h = c10::Dispatcher::singleton()                     \
                              .findSchemaOrThrow("gelu_fusion::" name, "") \
                              .typed<Sig>();                               \
    return h;                                                              \
  }

using Unary = Tensor(const Tensor&, string_view);
using Binary = Tensor(const Tensor&, const Tensor&, string_view);
using Ternary = Tensor(const Tensor&, const Tensor&, const Tensor&, string_view);
using BiasBwd = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&,
                                           const Tensor&, string_view);

GELU_TORCH_OP(gelu_op, "gelu", Unary)
GELU_TORCH_OP(gelu_backward_op, "gelu_backward", Binary)
GELU_TORCH_OP(bias_gelu_op, "bias_gelu", Binary)
GELU_TORCH_OP(bias_gelu_backward_op, "bias_gelu_backward", BiasBwd)
GELU_TORCH_OP(add_gelu_op, "add_gelu", Binary)
GELU_TORCH_OP(add_gelu_backward_op, "add_gelu_backward", Ternary)
GELU_TORCH_OP(geglu_op, "geglu", Unary)
GELU_TORCH_OP(geglu_backward_op, "geglu_backward", Binary)
#undef GELU_TORCH_OP

// Whether autograd has to record this call.
bool needs_graph(std::initializer_list<const Tensor*> inputs) {
  if (!at::GradMode::is_enabled()) return false;
  for (const Tensor* t : inputs)
    if (t->requires_grad()) return true;
  return false;
}

std::string approx_of(AutogradContext* ctx) {
  return ctx->saved_data["approximate"].toStringRef();
}

struct GeluFn : torch::autograd::Function<GeluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x,
                        string_view approximate) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = std::string(approximate);
    return gelu_op().call(x, approximate);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto s = ctx->get_saved_variables();
    return {gelu_backward_op().call(g[0], s[0], approx_of(ctx)), Tensor()};
  }
};

struct BiasGeluFn : torch::autograd::Function<BiasGeluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x,
                        const Tensor& bias, string_view approximate) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x, bias});
    ctx->saved_data["approximate"] = std::string(approximate);
    return bias_gelu_op().call(x, bias, approximate);
  }
  // One fused pass gives dx and dbias.
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto s = ctx->get_saved_variables();
    auto [dx, dbias] =
        bias_gelu_backward_op().call(g[0], s[0], s[1], approx_of(ctx));
    return {ctx->needs_input_grad(0) ? dx : Tensor(),
            ctx->needs_input_grad(1) ? dbias : Tensor(), Tensor()};
  }
};

struct AddGeluFn : torch::autograd::Function<AddGeluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& a, const Tensor& b,
                        string_view approximate) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({a, b});
    ctx->saved_data["approximate"] = std::string(approximate);
    return add_gelu_op().call(a, b, approximate);
  }
  // d/da = d/db = dy * gelu'(a + b): one tensor serves both.
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto s = ctx->get_saved_variables();
    Tensor dx = add_gelu_backward_op().call(g[0], s[0], s[1], approx_of(ctx));
    return {ctx->needs_input_grad(0) ? dx : Tensor(),
            ctx->needs_input_grad(1) ? dx : Tensor(), Tensor()};
  }
};

struct GegluFn : torch::autograd::Function<GegluFn> {
  static Tensor forward(AutogradContext* ctx, const Tensor& x,
                        string_view approximate) {
    at::AutoDispatchBelowADInplaceOrView guard;
    ctx->save_for_backward({x});
    ctx->saved_data["approximate"] = std::string(approximate);
    return geglu_op().call(x, approximate);
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    const auto s = ctx->get_saved_variables();
    return {geglu_backward_op().call(g[0], s[0], approx_of(ctx)), Tensor()};
  }
};

// The Autograd kernels: check devices and dtypes, then either record the
// Function or, when no gradient is wanted, go straight to the backend kernel.
Tensor gelu_autograd(const Tensor& x, string_view approximate) {
  dtype_of("gelu", "x", x);
  if (!needs_graph({&x})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return gelu_op().call(x, approximate);
  }
  return GeluFn::apply(x, approximate);
}

Tensor bias_gelu_autograd(const Tensor& x, const Tensor& bias,
                          string_view approximate) {
  dtype_of("bias_gelu", "x", x);
  dtype_of("bias_gelu", "bias", bias);
  if (!needs_graph({&x, &bias})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return bias_gelu_op().call(x, bias, approximate);
  }
  return BiasGeluFn::apply(x, bias, approximate);
}

Tensor add_gelu_autograd(const Tensor& a, const Tensor& b,
                         string_view approximate) {
  dtype_of("add_gelu", "a", a);
  dtype_of("add_gelu", "b", b);
  if (!needs_graph({&a, &b})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return add_gelu_op().call(a, b, approximate);
  }
  return AddGeluFn::apply(a, b, approximate);
}

Tensor geglu_autograd(const Tensor& x, string_view approximate) {
  dtype_of("geglu", "x", x);
  if (!needs_graph({&x})) {
    at::AutoDispatchBelowADInplaceOrView guard;
    return geglu_op().call(x, approximate);
  }
  return GegluFn::apply(x, approximate);
}

}  // namespace
}  // namespace gelu_torch

TORCH_LIBRARY_IMPL(gelu_fusion, Autograd, m) {
  using namespace gelu_torch;
  m.impl("gelu", &gelu_autograd);
  m.impl("bias_gelu", &bias_gelu_autograd);
  m.impl("add_gelu", &add_gelu_autograd);
  m.impl("geglu", &geglu_autograd);
  // The backward ops have no derivative of their own: differentiating
  // through them (double backward) raises instead of silently giving zero.
  for (const char* name : {"gelu_backward", "bias_gelu_backward",
                           "add_gelu_backward", "geglu_backward"})
    m.impl(name, torch::autograd::autogradNotImplementedFallback());
}
