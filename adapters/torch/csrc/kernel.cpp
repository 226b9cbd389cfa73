#include "kernel.hpp"

#include <array>
#include <unordered_map>

#include "common.hpp"

namespace gelu_torch {

bool& poison_outputs() {
  static bool on = false;
  return on;
}

using at::Tensor;
using gelu::core::kMaxTensors;
using gelu::core::OpDecl;
using gelu::core::OpKind;
using gelu::core::Role;
using gelu::core::ShapeRule;

const Surface& surface_of(const c10::OperatorHandle& op) {
  // Keyed by the schema's address, which the dispatcher keeps for the
  // operator's lifetime; built on first use, when every operator exists.
  static const auto by_schema = [] {
    std::unordered_map<const c10::FunctionSchema*, const Surface*> m;
    for (const Surface& s : all_surfaces()) {
      const auto h = c10::Dispatcher::singleton().findSchemaOrThrow(
          ("gelu_fusion::" + s.name).c_str(), s.overload.c_str());
      m.emplace(&h.schema(), &s);
    }
    return m;
  }();
  const auto it = by_schema.find(&op.schema());
  TORCH_CHECK(it != by_schema.end(), "gelu_fusion: internal: no surface for ",
              op.schema().name());
  return *it->second;
}

namespace {

// Tensors of this shape rule have the primary's shape (and layout).
bool primary_shaped(ShapeRule r) {
  return r == ShapeRule::primary || r == ShapeRule::same;
}

gelu::DType gelu_dtype(at::ScalarType t) {
  return t == at::kBFloat16 ? gelu::DType::bf16
         : t == at::kHalf   ? gelu::DType::f16
                            : gelu::DType::f32;
}

// A result in its input's layout: when the input is dense but its layout
// could not be computed through (the last dimension is not innermost, as in
// channels_last for a per-column bias), the contiguous result is copied
// into that layout, as empty_like gives it.
Tensor like_input(const Tensor& y, const Tensor& x_in) {
  if (y.strides() == x_in.strides() || y.sizes() != x_in.sizes() ||
      !x_in.is_non_overlapping_and_dense())
    return y;
  Tensor r = at::empty_like(x_in);
  r.copy_(y);
  return r;
}

}  // namespace

void run_kernel(const Backend& b, const Surface& s, torch::jit::Stack* stack) {
  const OpDecl& d = *s.op;
  const char* op = s.name.c_str();
  const size_t n_in = s.inputs.size();
  const size_t n_attr = s.num_attrs;
  const size_t n_args = s.num_args();
  auto args = torch::jit::last(*stack, n_args);

  // The inputs, checked: device, layout, dtype, storage.
  std::array<Tensor, kMaxTensors> in;
  std::array<gelu::DType, kMaxTensors> in_dtype{};
  int pk = 0;  // the primary's position among the inputs
  for (size_t k = 0; k < n_in; ++k) {
    in[k] = args[k].toTensor();
    in_dtype[k] = dtype_of(b, op, torch_name(d.tensors[s.inputs[k]]), in[k]);
    if (s.inputs[k] == d.primary()) pk = static_cast<int>(k);
  }
  // Every tensor on the primary's device (a backend runs on one device).
  const auto same_device = [&](const char* name, const Tensor& t) {
    TORCH_CHECK(t.device() == in[pk].device(), "gelu_fusion::", op, ": ", name,
                " is on ", t.device(), ", expected ", in[pk].device(),
                " (the device of ", torch_name(d.tensors[d.primary()]), ")");
  };
  for (size_t k = 0; k < n_in; ++k)
    same_device(torch_name(d.tensors[s.inputs[k]]), in[k]);
  const std::string_view approximate = args[n_in].toStringView();
  std::string_view half;
  if (n_attr == 2) half = args[n_in + 1].toStringView();
  const gelu::Options o = options(op, approximate, n_attr == 2 ? &half : nullptr);

  // Output layout as F.gelu's (Layout, common.hpp); gated ops compute their
  // halves contiguous.
  const Tensor& x_in = in[pk];
  bool one_shape = d.kind != OpKind::gated;
  for (size_t k = 0; k < n_in; ++k)
    if (primary_shaped(d.tensors[s.inputs[k]].shape) && in[k].sizes() != x_in.sizes())
      one_shape = false;
  const bool keep_last = d.kind == OpKind::rows || d.kind == OpKind::rows_reduce;
  const Layout lay = one_shape ? Layout::of(x_in, keep_last) : Layout{};

  // Every tensor of the call, in table order.
  std::array<Tensor, kMaxTensors> t;
  for (size_t k = 0; k < n_in; ++k) {
    const Tensor& x = in[k];
    t[s.inputs[k]] = primary_shaped(d.tensors[s.inputs[k]].shape) ? lay.in(x)
                                                                  : x.contiguous();
  }
  const std::vector<int64_t> pshape(t[d.primary()].sizes().begin(),
                                    t[d.primary()].sizes().end());
  const bool one_out = s.variant == Variant::out && s.outputs.size() == 1;
  const bool exact_out = s.variant == Variant::value_out ||
                         s.variant == Variant::value_grad_x_out;
  std::array<Tensor, kMaxTensors> given;
  for (int i : s.outputs) {
    // dbias takes the bias's dtype (the library sums in f32 and rounds
    // once); every other output the primary's.
    const int addend = d.tensor_of(Role::addend);
    const at::ScalarType dtype = d.tensors[i].role == Role::dbias
                                     ? t[addend].scalar_type()
                                     : x_in.scalar_type();
    const std::vector<int64_t> shape = gelu::core::tensor_shape(d, i, pshape);
    const at::TensorOptions like = x_in.options().dtype(dtype);
    int g = -1;
    for (size_t k = 0; k < s.given.size(); ++k)
      if (s.given[k] == i) g = static_cast<int>(k);
    if (g < 0) {
      t[i] = new_output(shape, like);
      continue;
    }
    const char* name = one_out ? "out" : torch_name(d.tensors[i]);
    given[i] = args[n_in + n_attr + g].toTensor();
    check_out(b, op, name, given[i], dtype);
    same_device(name, given[i]);
    if (exact_out) {
      // Written in place, never resized: y (or grad_x) may be grad_output
      // itself, which the library allows for an output of its shape.
      TORCH_CHECK(
          given[i].sizes() == at::IntArrayRef(shape) && given[i].is_contiguous(),
          "gelu_fusion::", op, ": ", name, " has shape ", given[i].sizes(),
          (given[i].is_contiguous() ? "" : " (not contiguous)"),
          ", expected a contiguous tensor of shape ", at::IntArrayRef(shape));
      t[i] = given[i];
    } else {
      // out keeps its own layout (as aten's out= variants): a result
      // computed in a permuted order goes through a temporary.
      const bool permuted = !lay.perm.empty() && primary_shaped(d.tensors[i].shape);
      t[i] = permuted ? new_output(shape, like) : direct_or_temp(given[i], shape);
    }
  }

  const int n = s.value >= 0 ? d.num_tensors : d.required_tensors();
  std::array<gelu::TensorRef, kMaxTensors> refs;
  for (int i = 0; i < n; ++i)
    refs[i] = {t[i].data_ptr(), gelu_dtype(t[i].scalar_type()),
               std::vector<int64_t>(t[i].sizes().begin(), t[i].sizes().end())};
  call([&] {
    b.run(d, std::span<const gelu::TensorRef>(refs.data(), n), o, x_in.device());
  });

  // Results in the input's layout.
  const auto restore = [&](int i) {
    if (!primary_shaped(d.tensors[i].shape) || d.kind == OpKind::gated) return t[i];
    return like_input(lay.out(t[i]), x_in);
  };
  torch::jit::drop(*stack, n_args);
  for (int i : s.outputs) {
    if (given[i].defined() && !exact_out) commit_out(given[i], lay.out(t[i]));
    if (s.returns(i)) torch::jit::push(*stack, restore(i));
  }
}

void no_backend_kernel(const c10::OperatorHandle& handle, c10::DispatchKeySet,
                       torch::jit::Stack* stack) {
  const Surface& s = surface_of(handle);
  const OpDecl& d = *s.op;
  const size_t n_attr = s.num_attrs;
  const size_t n_args = s.num_args();
  auto args = torch::jit::last(*stack, n_args);
  const auto name = [&](size_t k) {
    if (k < s.inputs.size()) return torch_name(d.tensors[s.inputs[k]]);
    const bool one_out = s.variant == Variant::out && s.outputs.size() == 1;
    return one_out ? "out"
                   : torch_name(d.tensors[s.given[k - s.inputs.size() - n_attr]]);
  };
  // "a CPU tensor or a CUDA tensor": the devices this build has kernels for.
  std::string expected;
  for (const Backend* b : all_backends())
    expected += (expected.empty() ? "" : " or ") + std::string(b->expected);
  const auto has_kernels = [](c10::DeviceType t) {
    for (const Backend* b : all_backends())
      if (b->device == t) return true;
    return false;
  };
  for (size_t k = 0; k < n_args; ++k) {
    if (!args[k].isTensor()) continue;
    const Tensor& x = args[k].toTensor();
    if (!x.defined()) continue;
    TORCH_CHECK(has_kernels(x.device().type()), "gelu_fusion::", s.name, ": ", name(k),
                " is on ", x.device(), ", expected ", expected);
    TORCH_CHECK(x.layout() == at::kStrided, "gelu_fusion::", s.name, ": ", name(k),
                " has layout ", x.layout(), ", expected a strided (dense) tensor");
  }
  TORCH_CHECK(false, "gelu_fusion::", s.name, ": no kernel for these tensors (",
              handle.schema().name(), "), expected ", expected);
}

}  // namespace gelu_torch
