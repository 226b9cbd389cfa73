// The Python functions' eager entry points: one op per (op, form
// [, gelu_half]), so that a call passes no keyword argument. The
// dispatcher's Python binding matches each keyword against the schema and
// converts the str on every call, about half a microsecond
// (bench/call_overhead.py measures a call against F.gelu's).
//
// `_gelu_<form>(x)` is gelu_fusion.gelu(x, approximate=form) for a plain
// tensor: the fused op where the library has a kernel (a strided CPU
// tensor of float32, bfloat16 or float16), else PyTorch's composition with
// the same semantics ('quick' as x * sigmoid(1.702 x)), so the Python side
// checks nothing but the tensor's type. The other entry points
// (`_bias_gelu_<form>`, `_add_gelu_<form>`, `_geglu_<form>[_second]`) are
// the op with the form filled in; their Python callers pick the kernel.
//
// Each is a CompositeImplicitAutograd kernel that calls the ops it names
// through the dispatcher, so autograd, forward AD, double backward and the
// messages are those ops' own.
#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <cstring>

namespace gelu_torch {
namespace {

using at::Tensor;
using c10::string_view;

using Unary = Tensor(const Tensor&, string_view);
using Binary = Tensor(const Tensor&, const Tensor&, string_view);
using Geglu = Tensor(const Tensor&, string_view, string_view);

template <class Sig>
c10::TypedOperatorHandle<Sig> find(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

// Forms as template arguments (string literals cannot be).
constexpr char kNone[] = "none";
constexpr char kTanh[] = "tanh";
constexpr char kQuick[] = "quick";
constexpr char kFirst[] = "first";
constexpr char kSecond[] = "second";

// What the fused kernels compute (as dtype_of in common.hpp accepts).
bool on_kernel(const Tensor& t) {
  if (!t.device().is_cpu() || t.layout() != at::kStrided) return false;
  const auto d = t.scalar_type();
  return d == at::kFloat || d == at::kBFloat16 || d == at::kHalf;
}

// 'quick' GELU's constant (Hendrycks & Gimpel, "Gaussian Error Linear
// Units", section 2: x * sigmoid(1.702 x)), as functional.py's fallback.
constexpr double kQuickGelu = 1.702;

// Each instantiation looks its op up once.
template <const char* Form>
Tensor gelu_form(const Tensor& x) {
  static const auto op = find<Unary>("gelu_fusion::gelu");
  if (on_kernel(x)) return op.call(x, Form);
  if (std::strcmp(Form, "quick") != 0) return at::gelu(x, Form);
  // As F.gelu: no GELU of an integer tensor (sigmoid would promote).
  TORCH_CHECK(x.is_floating_point() || x.is_complex(),
              "gelu_fusion::gelu: x has dtype ", x.scalar_type(),
              ", expected a floating-point dtype");
  return x * at::sigmoid(x * kQuickGelu);
}

template <const char* Form>
Tensor bias_gelu_form(const Tensor& x, const Tensor& bias) {
  static const auto op = find<Binary>("gelu_fusion::bias_gelu");
  return op.call(x, bias, Form);
}

template <const char* Form>
Tensor add_gelu_form(const Tensor& a, const Tensor& b) {
  static const auto op = find<Binary>("gelu_fusion::add_gelu");
  return op.call(a, b, Form);
}

template <const char* Form, const char* Half>
Tensor geglu_form(const Tensor& x) {
  static const auto op = find<Geglu>("gelu_fusion::geglu");
  return op.call(x, Form, Half);
}

}  // namespace
}  // namespace gelu_torch

// Private (underscored) ops: the Python functions call them; users call
// gelu_fusion.gelu(...) or torch.ops.gelu_fusion.gelu(..., approximate=...).
TORCH_LIBRARY_FRAGMENT(gelu_fusion, m) {
  m.def("_gelu_none(Tensor x) -> Tensor");
  m.def("_gelu_tanh(Tensor x) -> Tensor");
  m.def("_gelu_quick(Tensor x) -> Tensor");
  m.def("_bias_gelu_tanh(Tensor x, Tensor bias) -> Tensor");
  m.def("_bias_gelu_quick(Tensor x, Tensor bias) -> Tensor");
  m.def("_add_gelu_tanh(Tensor a, Tensor b) -> Tensor");
  m.def("_add_gelu_quick(Tensor a, Tensor b) -> Tensor");
  m.def("_geglu_tanh(Tensor x) -> Tensor");
  m.def("_geglu_quick(Tensor x) -> Tensor");
  m.def("_geglu_none_second(Tensor x) -> Tensor");
  m.def("_geglu_tanh_second(Tensor x) -> Tensor");
  m.def("_geglu_quick_second(Tensor x) -> Tensor");
}

TORCH_LIBRARY_IMPL(gelu_fusion, CompositeImplicitAutograd, m) {
  using namespace gelu_torch;
  m.impl("_gelu_none", &gelu_form<kNone>);
  m.impl("_gelu_tanh", &gelu_form<kTanh>);
  m.impl("_gelu_quick", &gelu_form<kQuick>);
  m.impl("_bias_gelu_tanh", &bias_gelu_form<kTanh>);
  m.impl("_bias_gelu_quick", &bias_gelu_form<kQuick>);
  m.impl("_add_gelu_tanh", &add_gelu_form<kTanh>);
  m.impl("_add_gelu_quick", &add_gelu_form<kQuick>);
  m.impl("_geglu_tanh", &geglu_form<kTanh, kFirst>);
  m.impl("_geglu_quick", &geglu_form<kQuick, kFirst>);
  m.impl("_geglu_none_second", &geglu_form<kNone, kSecond>);
  m.impl("_geglu_tanh_second", &geglu_form<kTanh, kSecond>);
  m.impl("_geglu_quick_second", &geglu_form<kQuick, kSecond>);
}
