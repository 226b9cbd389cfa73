// torch.ops.gelu_fusion: every operator defined and registered in one loop
// over the op table's surfaces (surface.hpp). Adding an op to the table
// adds its schema, out= variant, value variants, kernels on every backend,
// autograd and fake kernel (gelu_fusion/_surface.py) with nothing here.
#include <torch/library.h>

#include <cstdio>
#include <string>

#include "autograd.hpp"
#include "form_ops.hpp"
#include "kernel.hpp"
#include "math/gelu_forms.hpp"

namespace gelu_torch {
namespace {

bool set_poison_outputs(bool on) {
  const bool was = poison_outputs();
  poison_outputs() = on;
  return was;
}

std::string simd_target() { return gelu::simd_target(); }
std::vector<std::string> simd_targets() { return gelu::simd_targets(); }
void set_simd_target(const std::string& name) { gelu::set_simd_target(name); }
// The device types with kernels in this build ("cpu", "cuda").
std::vector<std::string> devices() {
  std::vector<std::string> out;
  for (const Backend* b : all_backends())
    out.push_back(c10::DeviceTypeName(b->device, /*lower_case=*/true));
  return out;
}
std::string op_table() { return op_table_json(); }
// The forms' names, in Approx order (GELU_FUSION_FORMS).
std::vector<std::string> form_names() {
  std::vector<std::string> out;
  for (gelu::Approx a : gelu::kAllForms) out.push_back(gelu::approx_name(a));
  return out;
}
// The forms' constants (math/gelu_forms.hpp) as JSON, for the Python
// package's compositions and formula patterns.
std::string forms() {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "{\"tanh_cubic\":%.17g,\"sqrt_2_over_pi\":%.17g,\"quick_scale\":%.17g,"
                "\"inv_sqrt2\":%.17g,\"inv_sqrt2pi\":%.17g}",
                gelu::math::kTanhCubic, gelu::math::kSqrt2OverPi,
                gelu::math::kQuickScale, gelu::math::kInvSqrt2,
                gelu::math::kInvSqrt2Pi);
  return buf;
}

// A backend's kernels, for every operator.
template <const Backend& B>
void register_backend(torch::Library& m) {
  for (const Surface& s : all_surfaces())
    m.impl(s.qualified().c_str(),
           torch::CppFunction::makeFromBoxedFunction<&boxed_kernel<B>>());
}

}  // namespace
}  // namespace gelu_torch

TORCH_LIBRARY(gelu_fusion, m) {
  using namespace gelu_torch;
  // Our kernels accept any strides (they copy what is not contiguous), do
  // not specialise on sizes, and their fake kernels are checked by
  // torch.library.opcheck in the tests.
  for (const Surface& s : all_surfaces())
    m.def(s.schema().c_str(), {at::Tag::pt2_compliant_tag});
  // Not ops on tensors: test and diagnostic helpers, and the table itself
  // for the Python package.
  m.def("_set_poison_outputs(bool on) -> bool", &set_poison_outputs);
  m.def("simd_target() -> str", &simd_target);
  m.def("simd_targets() -> str[]", &simd_targets);
  m.def("set_simd_target(str name) -> ()", &set_simd_target);
  m.def("_devices() -> str[]", &devices);
  m.def("_op_table() -> str", &op_table);
  m.def("_forms() -> str", &forms);
  m.def("_form_names() -> str[]", &form_names);
  // The Python functions' eager entry points, one per op and form.
  define_form_ops(m);
}

TORCH_LIBRARY_IMPL(gelu_fusion, CompositeImplicitAutograd, m) {
  gelu_torch::register_form_ops(m);
}

TORCH_LIBRARY_IMPL(gelu_fusion, CPU, m) {
  gelu_torch::register_backend<gelu_torch::kCpuBackend>(m);
}

#ifdef GELU_TORCH_CUDA
TORCH_LIBRARY_IMPL(gelu_fusion, CUDA, m) {
  gelu_torch::register_backend<gelu_torch::kCudaBackend>(m);
}
#endif

// Every other device: our message naming the argument, not the
// dispatcher's "could not run".
TORCH_LIBRARY_IMPL(gelu_fusion, CompositeExplicitAutograd, m) {
  for (const gelu_torch::Surface& s : gelu_torch::all_surfaces())
    m.impl(s.qualified().c_str(),
           torch::CppFunction::makeFromBoxedFunction<&gelu_torch::no_backend_kernel>());
}

TORCH_LIBRARY_IMPL(gelu_fusion, Autograd, m) { gelu_torch::register_autograd(m); }

TORCH_LIBRARY_IMPL(gelu_fusion, ADInplaceOrView, m) {
  gelu_torch::register_inplace_or_view(m);
}
