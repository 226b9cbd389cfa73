// Autograd for torch.ops.gelu_fusion: each forward op's Autograd kernel runs
// the op and records a backward node that saves only what its backward
// consumes and calls the backward op (our fused backward kernel). Being a
// dispatcher kernel, it serves eager mode and TorchScript alike.
//
// Higher derivatives: when the backward itself must be differentiated (a
// graph is being recorded through it, create_graph=True, or its inputs carry
// forward-mode tangents), the node computes the same derivative composed of
// differentiable ATen ops (derivatives.hpp), so double backward, Hessians and
// forward-over-reverse are right; the fused kernels serve every first-order
// pass. Forward-mode AD: each Autograd kernel also sets the output's tangent
// (gelu'(x) times the input's tangent, through the fused backward kernel).
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
#include "derivatives.hpp"

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
using BiasBwd = std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&, const Tensor&,
                                           string_view);
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

// The derivative must be differentiable itself when autograd records a
// graph through it or a tangent rides on one of its tensors; then the
// composed formulas run instead of the fused kernel.
bool must_differentiate(std::initializer_list<const Tensor*> ts) {
  const bool grad_mode = at::GradMode::is_enabled();
  for (const Tensor* t : ts) {
    if (!t->defined()) continue;
    if (grad_mode && t->requires_grad()) return true;
    if (t->_fw_grad(/*level=*/0).defined()) return true;
  }
  return false;
}

struct GeluFusionBackward : SavedInputs<1> {
  std::string name() const override { return "GeluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor()};
    const auto [x] = unpack();
    if (must_differentiate({&g[0], &x})) return {g[0] * composed::gelu_prime(x, form)};
    return {gelu_backward_op().call(g[0], x, approximate())};
  }
};

// One fused pass gives dx and dbias.
struct BiasGeluFusionBackward : SavedInputs<2> {
  std::string name() const override { return "BiasGeluFusionBackward"; }
  variable_list apply(variable_list&& g) override {
    if (!g[0].defined()) return {Tensor(), Tensor()};
    const auto [x, bias] = unpack();
    Tensor dx, dbias;
    if (must_differentiate({&g[0], &x, &bias})) {
      dx = g[0] * composed::gelu_prime(x + bias, form);
      dbias = dx.sum_to_size(bias.sizes());
    } else {
      std::tie(dx, dbias) = bias_gelu_backward_op().call(g[0], x, bias, approximate());
    }
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
    Tensor dx = must_differentiate({&g[0], &a, &b})
                    ? g[0] * composed::gelu_prime(a + b, form)
                    : add_gelu_backward_op().call(g[0], a, b, approximate());
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
    if (must_differentiate({&g[0], &x})) {
      // x = [a, gate] with the GELU on a; gelu_half = second swaps the halves.
      const bool second = gelu_half == gelu::GeluHalf::second;
      const auto halves = x.chunk(2, -1);
      const Tensor& a = halves[second ? 1 : 0];
      const Tensor& gate = halves[second ? 0 : 1];
      Tensor da = g[0] * gate * composed::gelu_prime(a, form);
      Tensor dgate = g[0] * composed::gelu(a, form);
      return {second ? at::cat({dgate, da}, -1) : at::cat({da, dgate}, -1)};
    }
    return {geglu_backward_op().call(g[0], x, approximate(),
                                     gelu::gelu_half_name(gelu_half))};
  }
};

// Runs the backend kernel below autograd; when an input carries a
// forward-mode tangent, sets y's tangent to tangent(the inputs' tangents,
// undefined where none, form); then, when a gradient is wanted, records a
// NodeT that saves `inputs` (which are also the next edges).
template <class NodeT, size_t N, class Call, class Tangent>
Tensor forward(std::array<const Tensor*, N> inputs, string_view approximate,
               Call&& call, Tangent&& tangent) {
  Tensor y;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    y = call();
  }
  std::array<Tensor, N> tangents;
  bool any_tangent = false;
  for (size_t i = 0; i < N; ++i) {
    tangents[i] = inputs[i]->_fw_grad(/*level=*/0);
    any_tangent = any_tangent || tangents[i].defined();
  }
  if (any_tangent) {
    const gelu::Approx form = gelu::parse_approx(
        std::string_view(approximate.data(), approximate.size()));
    y._set_fw_grad(tangent(tangents, form), /*level=*/0, /*is_inplace_op=*/false);
  }
  if (!at::GradMode::is_enabled()) return y;
  bool any = false;
  for (const Tensor* t : inputs) any = any || t->requires_grad();
  if (!any) return y;
  auto node = std::shared_ptr<NodeT>(new NodeT(), torch::autograd::deleteNode);
  if constexpr (N == 1)
    node->set_next_edges(torch::autograd::collect_next_edges(*inputs[0]));
  else
    node->set_next_edges(torch::autograd::collect_next_edges(*inputs[0], *inputs[1]));
  // The kernel accepted `approximate`, so it parses.
  node->save(inputs, gelu::parse_approx(
                         std::string_view(approximate.data(), approximate.size())));
  torch::autograd::set_history(y, node);
  return y;
}

// The tangents. Each is computed from the primals (the inputs without
// their tangents) and the tangents: through the fused kernels when nothing
// needs to differentiate it, else composed (a backward through a jvp,
// fwgrad_bwgrad). Undefined tangents are zero.
Tensor primal(const Tensor& t) { return t._fw_primal(/*level=*/0); }

Tensor add_tangents(const Tensor& a, const Tensor& b, at::IntArrayRef sizes) {
  if (!a.defined()) return b.expand(sizes);
  if (!b.defined()) return a.expand(sizes);
  return a + b;
}

// gelu'(z) * t, z = x (+ bias or b).
Tensor gelu_tangent(const Tensor& t, const Tensor& z, gelu::Approx form) {
  if (must_differentiate({&t, &z})) return t * composed::gelu_prime(z, form);
  at::AutoDispatchBelowADInplaceOrView guard;
  return gelu_backward_op().call(t, z, gelu::approx_name(form));
}

// The Autograd kernels: check devices and dtypes first (the Autograd key
// runs before any backend's kernel), then run and record.
Tensor gelu_autograd(const Tensor& x, string_view approximate) {
  dtype_of("gelu", "x", x);
  return forward<GeluFusionBackward, 1>(
      {&x}, approximate, [&] { return gelu_op().call(x, approximate); },
      [&](const std::array<Tensor, 1>& t, gelu::Approx form) {
        return gelu_tangent(t[0], primal(x), form);
      });
}

Tensor bias_gelu_autograd(const Tensor& x, const Tensor& bias,
                          string_view approximate) {
  dtype_of("bias_gelu", "x", x);
  dtype_of("bias_gelu", "bias", bias);
  return forward<BiasGeluFusionBackward, 2>(
      {&x, &bias}, approximate,
      [&] { return bias_gelu_op().call(x, bias, approximate); },
      [&](const std::array<Tensor, 2>& t, gelu::Approx form) {
        return gelu_tangent(add_tangents(t[0], t[1], x.sizes()),
                            primal(x) + primal(bias), form);
      });
}

Tensor add_gelu_autograd(const Tensor& a, const Tensor& b, string_view approximate) {
  dtype_of("add_gelu", "a", a);
  dtype_of("add_gelu", "b", b);
  return forward<AddGeluFusionBackward, 2>(
      {&a, &b}, approximate, [&] { return add_gelu_op().call(a, b, approximate); },
      [&](const std::array<Tensor, 2>& t, gelu::Approx form) {
        return gelu_tangent(add_tangents(t[0], t[1], a.sizes()), primal(a) + primal(b),
                            form);
      });
}

// geglu: gelu'(a) * da * g + gelu(a) * dg, for x = [a, g], dx = [da, dg]
// (x = [g, a] when gelu_half is 'second').
Tensor geglu_autograd(const Tensor& x, string_view approximate, string_view gelu_half) {
  dtype_of("geglu", "x", x);
  // Parsed before the kernel runs, so the tangent and the node agree with it.
  gelu::GeluHalf half = gelu::GeluHalf::first;
  try {
    half = gelu::parse_gelu_half(std::string_view(gelu_half.data(), gelu_half.size()));
  } catch (const gelu::Error& e) {
    TORCH_CHECK(false, "gelu_fusion::geglu: ", e.what());
  }
  const bool second = half == gelu::GeluHalf::second;
  Tensor y = forward<GegluFusionBackward, 1>(
      {&x}, approximate, [&] { return geglu_op().call(x, approximate, gelu_half); },
      [&](const std::array<Tensor, 1>& t, gelu::Approx form) {
        const auto xh = primal(x).chunk(2, -1);
        const auto th = t[0].chunk(2, -1);
        const Tensor& a = xh[second ? 1 : 0];
        const Tensor& gate = xh[second ? 0 : 1];
        const Tensor& ta = th[second ? 1 : 0];
        const Tensor& tgate = th[second ? 0 : 1];
        if (must_differentiate({&t[0], &a}))
          return ta * composed::gelu_prime(a, form) * gate +
                 composed::gelu(a, form) * tgate;
        at::AutoDispatchBelowADInplaceOrView guard;
        const char* name = gelu::approx_name(form);
        return gelu_backward_op().call(ta, a, name) * gate +
               gelu_op().call(a, name) * tgate;
      });
  if (auto* node = dynamic_cast<GegluFusionBackward*>(y.grad_fn().get()))
    node->gelu_half = half;
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
  for (const char* name :
       {"gelu_backward", "bias_gelu_backward", "add_gelu_backward", "geglu_backward"})
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
