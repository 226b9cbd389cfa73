// Autograd for torch.ops.gelu_fusion: each forward op's Autograd kernel runs
// the op and records a backward node that saves only what its backward
// consumes and calls the backward op (our fused backward kernel). Being a
// dispatcher kernel, it serves eager mode and TorchScript alike.
//
// The device is checked here first: the Autograd key runs before any
// backend's kernel, so a tensor on another device gets our message instead
// of the dispatcher's "could not run ... with arguments from the X backend".
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <array>
#include <string>
#include <tuple>

#include "common.hpp"

namespace gelu_torch {
namespace {

using at::Tensor;
using c10::string_view;
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
using Geglu = Tensor(const Tensor&, string_view, string_view);
using GegluBwd = Tensor(const Tensor&, const Tensor&, string_view, string_view);

GELU_TORCH_OP(gelu_op, "gelu", Unary)
GELU_TORCH_OP(gelu_backward_op, "gelu_backward", Binary)
GELU_TORCH_OP(bias_gelu_op, "bias_gelu", Binary)
GELU_TORCH_OP(bias_gelu_backward_op, "bias_gelu_backward", BiasBwd)
GELU_TORCH_OP(add_gelu_op, "add_gelu", Binary)
GELU_TORCH_OP(add_gelu_backward_op, "add_gelu_backward", Ternary)
GELU_TORCH_OP(geglu_op, "geglu", Geglu)
GELU_TORCH_OP(geglu_backward_op, "geglu_backward", GegluBwd)
#undef GELU_TORCH_OP

// The backward nodes. Each holds only the forward inputs its backward op
// consumes (x, and bias for bias_gelu; a and b for add_gelu) and the form,
// and calls that backward op: one fused pass per node. Written as plain
// autograd Nodes (as PyTorch's generated ones are) rather than through
// torch::autograd::Function, which costs a few microseconds more per call.
template <size_t N>
struct SavedInputs : torch::autograd::Node {
  std::array<torch::autograd::SavedVariable, N> saved;
  gelu::Approx form = gelu::Approx::none;

  void save(std::array<const Tensor*, N> inputs, gelu::Approx f) {
    for (size_t i = 0; i < N; ++i)
      saved[i] = torch::autograd::SavedVariable(*inputs[i], /*is_output=*/false);
    form = f;
  }
  std::array<Tensor, N> unpack() {
    std::array<Tensor, N> t;
    for (size_t i = 0; i < N; ++i) t[i] = saved[i].unpack(shared_from_this());
    return t;
  }
  void release_variables() override {
    for (auto& s : saved) s.reset_data();
  }
  const char* approximate() const { return gelu::approx_name(form); }
};

struct GeluFusionBackward : SavedInputs<1> {
  std::string name() const override { return "GeluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor()};
    const auto [x] = unpack();
    return {gelu_backward_op().call(g[0], x, approximate())};
  }
};

// One fused pass gives dx and dbias.
struct BiasGeluFusionBackward : SavedInputs<2> {
  std::string name() const override { return "BiasGeluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    const auto [x, bias] = unpack();
    auto [dx, dbias] = bias_gelu_backward_op().call(g[0], x, bias, approximate());
    return {task_should_compute_output(0) ? dx : Tensor(),
            task_should_compute_output(1) ? dbias : Tensor()};
  }
};

// d/da = d/db = dy * gelu'(a + b): one tensor serves both.
struct AddGeluFusionBackward : SavedInputs<2> {
  std::string name() const override { return "AddGeluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    const auto [a, b] = unpack();
    Tensor dx = add_gelu_backward_op().call(g[0], a, b, approximate());
    return {task_should_compute_output(0) ? dx : Tensor(),
            task_should_compute_output(1) ? dx : Tensor()};
  }
};

struct GegluFusionBackward : SavedInputs<1> {
  gelu::GeluHalf gelu_half = gelu::GeluHalf::first;
  std::string name() const override { return "GegluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor()};
    const auto [x] = unpack();
    return {geglu_backward_op().call(g[0], x, approximate(),
                                     gelu::gelu_half_name(gelu_half))};
  }
};

// Runs the backend kernel below autograd, then, when a gradient is wanted,
// records a NodeT that saves `inputs` (which are also the next edges).
template <class NodeT, size_t N, class Call>
Tensor forward(std::array<const Tensor*, N> inputs, string_view approximate,
               Call&& call) {
  Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    y = call();
  }
  if (!at::GradMode::is_enabled()) return y;
  bool any = false;
  for (const Tensor* t : inputs) any = any || t->requires_grad();
  if (!any) return y;
  auto node = std::shared_ptr<NodeT>(new NodeT(), torch::autograd::deleteNode);
  if constexpr (N == 1)
    node->set_next_edges(torch::autograd::collect_next_edges(*inputs[0]));
  else
    node->set_next_edges(
        torch::autograd::collect_next_edges(*inputs[0], *inputs[1]));
  // The kernel accepted `approximate`, so it parses.
  node->save(inputs, gelu::parse_approx(std::string_view(
                         approximate.data(), approximate.size())));
  torch::autograd::set_history(y, node);
  return y;
}

// The Autograd kernels: check devices and dtypes first (the Autograd key
// runs before any backend's kernel), then run and record.
Tensor gelu_autograd(const Tensor& x, string_view approximate) {
  dtype_of("gelu", "x", x);
  return forward<GeluFusionBackward, 1>({&x}, approximate, [&] {
    return gelu_op().call(x, approximate);
  });
}

Tensor bias_gelu_autograd(const Tensor& x, const Tensor& bias,
                          string_view approximate) {
  dtype_of("bias_gelu", "x", x);
  dtype_of("bias_gelu", "bias", bias);
  return forward<BiasGeluFusionBackward, 2>({&x, &bias}, approximate, [&] {
    return bias_gelu_op().call(x, bias, approximate);
  });
}

Tensor add_gelu_autograd(const Tensor& a, const Tensor& b,
                         string_view approximate) {
  dtype_of("add_gelu", "a", a);
  dtype_of("add_gelu", "b", b);
  return forward<AddGeluFusionBackward, 2>({&a, &b}, approximate, [&] {
    return add_gelu_op().call(a, b, approximate);
  });
}

Tensor geglu_autograd(const Tensor& x, string_view approximate, string_view gelu_half) {
  dtype_of("geglu", "x", x);
  Tensor y = forward<GegluFusionBackward, 1>({&x}, approximate, [&] {
    return geglu_op().call(x, approximate, gelu_half);
  });
  // The kernel accepted gelu_half, so it parses.
  if (auto* node = dynamic_cast<GegluFusionBackward*>(y.grad_fn().get()))
    node->gelu_half = gelu::parse_gelu_half(std::string_view(gelu_half.data(), gelu_half.size()));
  return y;
}

}  // namespace
}  // namespace gelu_torch

namespace gelu_torch {
constexpr const char* kOutOverloads[] = {
    "gelu.out",     "gelu_backward.out",     "bias_gelu.out", "bias_gelu_backward.out",
    "add_gelu.out", "add_gelu_backward.out", "geglu.out",     "geglu_backward.out"};
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
  // out= overloads are not differentiable (as aten's): a result computed
  // from inputs that require grad raises when backward reaches it.
  for (const char* name : kOutOverloads)
    m.impl(name, torch::autograd::autogradNotImplementedFallback());
}

// Bumps the version counter of the written outputs (so autograd notices a
// saved tensor overwritten by an out= call), as aten's ADInplaceOrView does.
TORCH_LIBRARY_IMPL(gelu_fusion, ADInplaceOrView, m) {
  for (const char* name : gelu_torch::kOutOverloads)
    m.impl(name, torch::autograd::autogradNotImplementedInplaceOrViewFallback());
}
