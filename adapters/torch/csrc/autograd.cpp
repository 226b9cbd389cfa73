// Autograd for torch.ops.gelu_fusion, generated from the op table: each
// forward op's Autograd kernel runs the op and records a node that saves
// only what its backward consumes (the forward's inputs) and calls the
// backward op the table pairs it with: one fused pass per node. The
// gradient of each input is the backward output of its role (dx for x and
// for a per-element addend, dbias for a per-column one).
//
// Higher derivatives: when the backward itself must be differentiated (a
// graph is being recorded through it, create_graph=True, or its inputs carry
// forward-mode tangents), the node computes the same derivative composed of
// differentiable ATen ops (derivatives.hpp), so double backward, Hessians and
// forward-over-reverse are right; the fused kernels serve every first-order
// pass. Forward-mode AD: the Autograd kernel also sets the output's tangent,
// through the backward op where nothing differentiates it.
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/grad_mode.h>
#include <torch/csrc/autograd/autograd_not_implemented_fallback.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/library.h>

#include <cctype>
#include <string>
#include <vector>

#include "autograd.hpp"
#include "derivatives.hpp"
#include "kernel.hpp"

namespace gelu_torch {
namespace {

using at::Tensor;
using gelu::core::OpDecl;
using gelu::core::OpKind;
using gelu::core::Role;
using gelu::core::ShapeRule;
using torch::autograd::variable_list;

// The backward op of a forward op, as its functional operator.
const c10::OperatorHandle& backward_handle(const OpDecl& fwd) {
  static const auto handles = [] {
    std::vector<c10::OperatorHandle> h;
    for (const OpDecl& op : gelu::core::all_ops())
      h.push_back(c10::Dispatcher::singleton().findSchemaOrThrow(
          (std::string("gelu_fusion::") + (op.backward ? op.backward : op.name))
              .c_str(),
          ""));
    return h;
  }();
  return handles[static_cast<size_t>(fwd.id)];
}

// The derivative must be differentiable itself when autograd records a
// graph through it or a tangent rides on one of its tensors.
bool must_differentiate(const std::vector<Tensor>& ts) {
  const bool grad_mode = at::GradMode::is_enabled();
  for (const Tensor& t : ts) {
    if (!t.defined()) continue;
    if (grad_mode && t.requires_grad()) return true;
    if (t._fw_grad(/*level=*/0).defined()) return true;
  }
  return false;
}

// The form and halves of a call, parsed once from its attributes.
struct Attrs {
  std::vector<c10::IValue> values;  // as the schema takes them
  gelu::Approx form = gelu::Approx::none;
  gelu::GeluHalf half = gelu::GeluHalf::first;
};

// The forward's inputs, by role: x, and the addend where the op has one.
struct Operands {
  Tensor x, addend;
};
Operands operands(const OpDecl& fwd, const std::vector<Tensor>& in) {
  Operands o;
  int k = 0;
  for (int i = 0; i < fwd.num_tensors; ++i) {
    if (fwd.tensors[i].output()) continue;
    (fwd.tensors[i].role == Role::addend ? o.addend : o.x) = in[k++];
  }
  return o;
}

// The backward op's results for (dy, inputs): dx and, for a per-column
// addend, dbias.
std::vector<Tensor> call_backward(const OpDecl& fwd, const Tensor& dy,
                                  const std::vector<Tensor>& in, const Attrs& a) {
  torch::jit::Stack stack;
  stack.reserve(1 + in.size() + a.values.size());
  stack.emplace_back(dy);
  for (const Tensor& t : in) stack.emplace_back(t);
  for (const auto& v : a.values) stack.push_back(v);
  backward_handle(fwd).callBoxed(&stack);
  std::vector<Tensor> out;
  for (auto& v : stack) out.push_back(v.toTensor());
  return out;
}

// The gradient of forward input `k` among the backward op's results.
Tensor grad_of(const OpDecl& fwd, int k, const std::vector<Tensor>& results) {
  const OpDecl& bwd = *gelu::core::find_op(fwd.backward);
  int idx = 0, i_in = 0;
  for (int i = 0; i < fwd.num_tensors; ++i) {
    if (fwd.tensors[i].output()) continue;
    if (i_in++ != k) continue;
    const Role want = fwd.tensors[i].shape == ShapeRule::last_dim ? Role::dbias
                                                                  : Role::dx;
    for (int j = 0; j < bwd.num_tensors; ++j) {
      const auto& t = bwd.tensors[j];
      if (!t.output() || t.optional) continue;
      if (t.role == want) return results[idx];
      ++idx;
    }
  }
  TORCH_CHECK(false, "gelu_fusion: internal: no gradient for input ", k, " of ",
              fwd.name);
}

// x = [a | gate] halves, the GELU on a (gelu_half second swaps them).
std::pair<Tensor, Tensor> halves(const Tensor& x, gelu::GeluHalf half) {
  const auto h = x.chunk(2, -1);
  return half == gelu::GeluHalf::second ? std::pair{h[1], h[0]} : std::pair{h[0], h[1]};
}
Tensor join(const Tensor& da, const Tensor& dgate, gelu::GeluHalf half) {
  return half == gelu::GeluHalf::second ? at::cat({dgate, da}, -1)
                                        : at::cat({da, dgate}, -1);
}

// The gradients of every forward input, composed of differentiable ops.
std::vector<Tensor> composed_grads(const OpDecl& fwd, const Tensor& g,
                                   const std::vector<Tensor>& in, const Attrs& a) {
  if (fwd.kind == OpKind::gated) {
    const auto [x_a, gate] = halves(in[0], a.half);
    return {join(g * gate * composed::gelu_prime(x_a, a.form),
                 g * composed::gelu(x_a, a.form), a.half)};
  }
  const Operands o = operands(fwd, in);
  const Tensor z = o.addend.defined() ? o.x + o.addend : o.x;
  const Tensor dz = g * composed::gelu_prime(z, a.form);
  std::vector<Tensor> r;
  for (const Tensor& t : in) r.push_back(dz.sum_to_size(t.sizes()));
  return r;
}

struct TableBackward : torch::autograd::Node {
  const OpDecl* fwd = nullptr;
  std::vector<torch::autograd::SavedVariable> saved;
  Attrs attrs;

  // "BiasGeluFusionBackward" for bias_gelu, as PyTorch names its nodes.
  std::string name() const override {
    std::string n;
    bool upper = true;
    for (const char* c = fwd->name; *c; ++c) {
      if (*c == '_') {
        upper = true;
        continue;
      }
      n += upper ? static_cast<char>(std::toupper(*c)) : *c;
      upper = false;
    }
    return n + "FusionBackward";
  }
  variable_list apply(variable_list&& g) override {
    const size_t n = saved.size();
    if (!g[0].defined()) return variable_list(n);
    std::vector<Tensor> in;
    for (auto& s : saved) in.push_back(s.unpack(shared_from_this()));
    std::vector<Tensor> all = in;
    all.push_back(g[0]);
    variable_list grads(n);
    if (must_differentiate(all)) {
      grads = composed_grads(*fwd, g[0], in, attrs);
    } else {
      const std::vector<Tensor> r = call_backward(*fwd, g[0], in, attrs);
      for (size_t k = 0; k < n; ++k) grads[k] = grad_of(*fwd, static_cast<int>(k), r);
    }
    for (size_t k = 0; k < n; ++k)
      if (!task_should_compute_output(k)) grads[k] = Tensor();
    return grads;
  }
  void release_variables() override {
    for (auto& s : saved) s.reset_data();
  }
};

Tensor primal(const Tensor& t) { return t._fw_primal(/*level=*/0); }

// y's tangent for the inputs' tangents `t` (undefined where none).
Tensor tangent(const OpDecl& fwd, const std::vector<Tensor>& in,
               const std::vector<Tensor>& t, const Attrs& a) {
  std::vector<Tensor> p;
  for (const Tensor& x : in) p.push_back(primal(x));
  if (fwd.kind == OpKind::gated) {
    const Tensor tx = t[0].defined() ? t[0] : at::zeros_like(p[0]);
    const auto [x_a, gate] = halves(p[0], a.half);
    const auto [t_a, t_gate] = halves(tx, a.half);
    if (must_differentiate({tx, p[0]}))
      return t_a * composed::gelu_prime(x_a, a.form) * gate +
             composed::gelu(x_a, a.form) * t_gate;
    // J t: the backward of ones gives each half's partial derivative.
    at::AutoDispatchBelowADInplaceOrView guard;
    const Tensor d = call_backward(fwd, at::ones_like(gate), p, a)[0];
    const auto [d_a, d_gate] = halves(d, a.half);
    return d_a * t_a + d_gate * t_gate;
  }
  // gelu'(z) times z's tangent, z = x (+ the addend).
  const Tensor& x = p[0];
  Tensor tz;
  for (const Tensor& ti : t)
    if (ti.defined()) tz = tz.defined() ? tz + ti : ti.expand(x.sizes());
  const Operands o = operands(fwd, p);
  if (must_differentiate({tz, o.x, o.addend})) {
    const Tensor z = o.addend.defined() ? o.x + o.addend : o.x;
    return tz * composed::gelu_prime(z, a.form);
  }
  at::AutoDispatchBelowADInplaceOrView guard;
  return grad_of(fwd, 0, call_backward(fwd, tz.contiguous(), p, a));
}

// The Autograd kernel of a forward op (its functional variant).
void autograd_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet,
                     torch::jit::Stack* stack) {
  const Surface& s = surface_of(handle);
  const OpDecl& fwd = *s.op;
  const size_t n_in = s.inputs.size();
  const size_t n_attr = s.num_attrs;
  auto args = torch::jit::last(*stack, n_in + n_attr);
  // Nothing to record (no input requires grad, none carries a tangent): the
  // kernel alone.
  const bool grad_mode = at::GradMode::is_enabled();
  bool record = false;
  for (size_t k = 0; k < n_in && !record; ++k) {
    const Tensor& t = args[k].toTensor();
    record = (grad_mode && t.requires_grad()) || t._fw_grad(/*level=*/0).defined();
  }
  if (!record) {
    at::AutoDispatchBelowADInplaceOrView guard;
    handle.callBoxed(stack);
    return;
  }
  std::vector<Tensor> in;
  for (size_t k = 0; k < n_in; ++k) in.push_back(args[k].toTensor());
  Attrs a;
  for (size_t k = 0; k < n_attr; ++k) a.values.push_back(args[n_in + k]);
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    handle.callBoxed(stack);  // checks every argument before it runs
  }
  Tensor y = stack->back().toTensor();
  // The kernel accepted the attributes, so they parse.
  a.form = gelu::parse_approx(a.values[0].toStringView());
  if (n_attr == 2) a.half = gelu::parse_gelu_half(a.values[1].toStringView());

  std::vector<Tensor> tangents;
  bool any_tangent = false;
  for (const Tensor& t : in) {
    tangents.push_back(t._fw_grad(/*level=*/0));
    any_tangent = any_tangent || tangents.back().defined();
  }
  if (any_tangent)
    y._set_fw_grad(tangent(fwd, in, tangents, a), /*level=*/0, /*is_inplace_op=*/false);

  if (!at::GradMode::is_enabled()) return;
  bool any = false;
  for (const Tensor& t : in) any = any || t.requires_grad();
  if (!any) return;
  auto node = std::shared_ptr<TableBackward>(new TableBackward(),
                                             torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(in));
  node->fwd = &fwd;
  for (const Tensor& t : in) node->saved.emplace_back(t, /*is_output=*/false);
  node->attrs = std::move(a);
  torch::autograd::set_history(y, node);
}

// The Autograd kernel of a variant that writes into arguments: as aten's
// out= variants, it refuses inputs that require grad (a result written so
// would silently drop out of the graph), then runs below autograd.
void writes_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet,
                   torch::jit::Stack* stack) {
  const Surface& s = surface_of(handle);
  const size_t n_args = s.num_args();
  if (at::GradMode::is_enabled()) {
    for (const auto& v : torch::jit::last(*stack, n_args))
      TORCH_CHECK(!v.isTensor() || !v.toTensor().requires_grad(),
                  "gelu_fusion::", s.name, ": ", s.qualified(),
                  "() writes into its arguments and does not support automatic "
                  "differentiation, but one of the arguments requires grad");
  }
  // Below autograd only: ADInplaceOrView still bumps the written tensors'
  // version counters.
  at::AutoDispatchBelowAutograd guard;
  handle.callBoxed(stack);
}

// Bumps the version counter of the written arguments (so autograd notices a
// saved tensor overwritten by an out= call), as aten's ADInplaceOrView does.
void bump_written_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet,
                         torch::jit::Stack* stack) {
  const Surface& s = surface_of(handle);
  const size_t n_args = s.num_args();
  std::vector<Tensor> written;
  const auto args = torch::jit::last(*stack, n_args);
  for (size_t k = n_args - s.given.size(); k < n_args; ++k)
    written.push_back(args[k].toTensor());
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    handle.callBoxed(stack);
  }
  for (Tensor& t : written) t.unsafeGetTensorImpl()->bump_version();
}

}  // namespace

void register_autograd(torch::Library& m) {
  for (const Surface& s : all_surfaces()) {
    if (s.variant == Variant::functional && s.op->backward) {
      m.impl(s.qualified().c_str(),
             torch::CppFunction::makeFromBoxedFunction<&autograd_kernel>());
    } else if (!s.given.empty()) {
      m.impl(s.qualified().c_str(),
             torch::CppFunction::makeFromBoxedFunction<&writes_kernel>());
    } else {
      // Backward ops and value variants have no derivative of their own:
      // differentiating through them raises instead of silently giving zero.
      m.impl(s.qualified().c_str(), torch::autograd::autogradNotImplementedFallback());
    }
  }
}

void register_inplace_or_view(torch::Library& m) {
  for (const Surface& s : all_surfaces())
    if (!s.given.empty())
      m.impl(s.qualified().c_str(),
             torch::CppFunction::makeFromBoxedFunction<&bump_written_kernel>());
}

}  // namespace gelu_torch
