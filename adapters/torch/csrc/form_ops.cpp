// The Python functions' eager entry points, generated from the op table: one
// private op per forward op and form (and half, for the gated ops), named
// `_<op>_<form>[_second]`, taking only the op's tensors. A call then passes
// no str for the dispatcher's Python binding to parse, and the choice
// between the kernel and PyTorch's own composition is made here, in C++,
// where reading a tensor's dtype, device and layout is cheap
// (bench/call_overhead.py measures a call against F.gelu's).
//
// Each is a CompositeImplicitAutograd kernel that calls the op (or the
// composition) through the dispatcher, so autograd, forward AD, double
// backward, the messages and torch.compile's view of it are those ops' own.
#include <ATen/ATen.h>
#include <ATen/FunctionalTensorWrapper.h>
#include <torch/library.h>

#include <array>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "common.hpp"
#include "derivatives.hpp"
#include "form_ops.hpp"
#include "kernel.hpp"

namespace gelu_torch {
namespace {

using at::Tensor;
using gelu::core::OpDecl;
using gelu::core::OpKind;

struct FormOp {
  const OpDecl* op;
  std::string name;  // "_bias_gelu_tanh"
  std::string form;
  std::string half;  // "" for ops without halves
};

const std::vector<FormOp>& all_form_ops() {
  static const std::vector<FormOp> all = [] {
    std::vector<FormOp> v;
    for (const OpDecl& op : gelu::core::all_ops()) {
      if (!op.backward) continue;  // forward ops only
      for (gelu::Approx a : gelu::kAllForms) {
        const char* form = gelu::approx_name(a);
        if (!has_gelu_half(op)) {
          v.push_back({&op, std::string("_") + op.name + "_" + form, form, ""});
          continue;
        }
        v.push_back({&op, std::string("_") + op.name + "_" + form, form, "first"});
        v.push_back(
            {&op, std::string("_") + op.name + "_" + form + "_second", form, "second"});
      }
    }
    return v;
  }();
  return all;
}

std::string schema_of(const FormOp& f) {
  std::string s = f.name + "(";
  bool first = true;
  for (int i = 0; i < f.op->num_tensors; ++i) {
    if (f.op->tensors[i].output()) continue;
    s += (first ? "Tensor " : ", Tensor ") + std::string(torch_name(f.op->tensors[i]));
    first = false;
  }
  return s + ") -> Tensor";
}

// What the kernels compute: strided tensors of the library's dtypes on a
// device with a backend.
bool on_kernel(const Tensor& t) {
  if (t.layout() != at::kStrided) return false;
  bool backend = false;
  for (const Backend* b : all_backends())
    backend = backend || t.device().type() == b->device;
  if (!backend) return false;
  const auto d = t.scalar_type();
  return d == at::kFloat || d == at::kBFloat16 || d == at::kHalf;
}

// check_storage (common.hpp) for a tensor PyTorch's composition would read:
// PyTorch's kernels crash on a tensor whose storage was resized under it.
// Wrappers (functionalization, FakeTensor) have no data of their own.
void check_composed_input(const char* op, const char* name, const Tensor& t) {
  if (t.layout() != at::kStrided || !(t.is_cpu() || t.is_cuda()) ||
      at::functionalization::impl::isFunctionalTensor(t) ||
      t.unsafeGetTensorImpl()->is_python_dispatch())
    return;
  check_storage(op, name, t);
}

// The forms PyTorch has (at::gelu's approximate).
bool torch_has_form(const std::string& form) {
  return form == "none" || form == "tanh";
}

// PyTorch's own GELU of the form, or the form's formula (derivatives.hpp)
// where PyTorch has none, with the library's limit gelu(-inf) = 0 and
// gradient 0 there (x * Phi(x) is -inf * 0 = NaN, and so is its
// derivative): -inf is computed as 0.
Tensor composed_gelu(const Tensor& z_in, const std::string& form) {
  TORCH_CHECK(torch_has_form(form) || z_in.is_floating_point() || z_in.is_complex(),
              "gelu_fusion::gelu: x has dtype ", z_in.scalar_type(),
              ", expected a floating-point dtype");
  Tensor z = z_in, ninf;
  if (z.is_floating_point() && z.layout() == at::kStrided) {
    ninf = z == -std::numeric_limits<double>::infinity();
    z = at::where(ninf, at::zeros({}, z.options()), z);
  }
  const Tensor y = torch_has_form(form) ? at::gelu(z, form)
                                        : composed::gelu(z, gelu::parse_approx(form));
  return ninf.defined() ? at::where(ninf, at::zeros({}, y.options()), y) : y;
}

// The op's result composed of PyTorch ops, by the op's kind: the GELU of
// x (+ the addend), or of one half times the other.
Tensor composed(const FormOp& f, const std::vector<Tensor>& in) {
  if (f.op->kind == OpKind::gated) {
    const auto h = in[0].chunk(2, -1);
    return f.half == "second" ? h[0] * composed_gelu(h[1], f.form)
                              : composed_gelu(h[0], f.form) * h[1];
  }
  Tensor z = in[0];
  for (size_t k = 1; k < in.size(); ++k) z = z + in[k];
  return composed_gelu(z, f.form);
}

// A form op and the op it calls, by the form op's schema (whose address the
// dispatcher keeps); built on first use, when every operator exists.
struct Entry {
  const FormOp* f;
  c10::OperatorHandle target;
  // The attributes as the op takes them, made once: pushing a copy is a
  // reference count, not a string. `half` is None for ops without halves.
  c10::IValue form, half;
};
const Entry& entry_of(const c10::OperatorHandle& handle) {
  static const auto by_schema = [] {
    std::unordered_map<const c10::FunctionSchema*, Entry> m;
    auto& d = c10::Dispatcher::singleton();
    for (const FormOp& f : all_form_ops()) {
      const auto h = d.findSchemaOrThrow(("gelu_fusion::" + f.name).c_str(), "");
      m.emplace(&h.schema(),
                Entry{&f,
                      d.findSchemaOrThrow(
                          (std::string("gelu_fusion::") + f.op->name).c_str(), ""),
                      c10::IValue(f.form),
                      f.half.empty() ? c10::IValue() : c10::IValue(f.half)});
    }
    return m;
  }();
  const auto it = by_schema.find(&handle.schema());
  TORCH_CHECK(it != by_schema.end(), "gelu_fusion: internal: no form op ",
              handle.schema().name());
  return it->second;
}

void form_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet,
                 torch::jit::Stack* stack) {
  const Entry& e = entry_of(handle);
  const FormOp* f = e.f;
  const size_t n_in = handle.schema().arguments().size();
  bool kernel = true;
  for (const auto& v : torch::jit::last(*stack, n_in))
    kernel = kernel && on_kernel(v.toTensor());
  if (!kernel) {
    std::vector<Tensor> in;
    for (const auto& v : torch::jit::last(*stack, n_in)) in.push_back(v.toTensor());
    for (size_t k = 0; k < n_in; ++k)
      check_composed_input(f->op->name, handle.schema().arguments()[k].name().c_str(),
                           in[k]);
    torch::jit::drop(*stack, n_in);
    torch::jit::push(*stack, composed(*f, in));
    return;
  }
  stack->push_back(e.form);
  if (!e.half.isNone()) stack->push_back(e.half);
  e.target.callBoxed(stack);
}

}  // namespace

void define_form_ops(torch::Library& m) {
  for (const FormOp& f : all_form_ops()) m.def(schema_of(f).c_str());
  m.def("_composed_gelu(Tensor x, str approximate) -> Tensor");
}

void register_form_ops(torch::Library& m) {
  for (const FormOp& f : all_form_ops())
    m.impl(f.name.c_str(), torch::CppFunction::makeFromBoxedFunction<&form_kernel>());
  m.impl("_composed_gelu", [](const Tensor& x, c10::string_view approximate) {
    check_composed_input("gelu", "x", x);
    return composed_gelu(x, std::string(approximate));
  });
}

}  // namespace gelu_torch
