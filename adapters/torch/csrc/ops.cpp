// The op schemas of torch.ops.gelu_fusion and their CPU kernels.
//
// Each kernel checks device and dtype (PyTorch-style messages), makes its
// inputs contiguous, allocates outputs with at::empty and calls the public
// C++ API, whose gelu::Error texts pass through as RuntimeError. Shapes are
// validated by the library (src/core/validate.cpp), against the op table.
#include <torch/library.h>

#include <limits>
#include <tuple>
#include <type_traits>

#include "common.hpp"

namespace gelu_torch {

bool& poison_outputs() {
  static bool on = false;
  return on;
}

namespace {

using at::Tensor;
using c10::string_view;

bool same_shape(const Tensor& a, const Tensor& b) { return a.sizes() == b.sizes(); }

// bias_gelu's result in its input's layout: when the input is dense but its
// layout cannot be computed through (the last dimension is not innermost,
// as in channels_last), the contiguous result is copied into that layout.
Tensor like_input(const Tensor& y, const Tensor& x_in) {
  if (y.strides() == x_in.strides() || y.sizes() != x_in.sizes() ||
      !x_in.is_non_overlapping_and_dense())
    return y;
  Tensor r = at::empty_like(x_in);
  r.copy_(y);
  return r;
}

// Each op in two parts: its `...Args` struct checks and prepares the inputs
// (dtype and device first, then contiguous copies where needed), and its
// `run` calls the library into given contiguous outputs. The functional
// kernel allocates them; the out= kernel (`<op>.out`, PyTorch's convention)
// takes the user's.

struct GeluArgs {
  static constexpr const char* kOp = "gelu";
  gelu::DType t;
  gelu::Options o;
  Layout lay;
  Tensor x;
  GeluArgs(const Tensor& x_in, string_view approximate)
      : t(dtype_of(kOp, "x", x_in)),
        o(options(kOp, approximate)),
        lay(Layout::of(x_in)),
        x(lay.in(x_in)) {}
  at::IntArrayRef out_sizes() const { return x.sizes(); }
  const Tensor& like() const { return x; }
  Tensor restore(const Tensor& y) const { return lay.out(y); }
  void run(Tensor& y) const {
    call([&] { gelu::gelu(cref(x, t), ref(y, t), o); });
  }
};

struct GeluBackwardArgs {
  static constexpr const char* kOp = "gelu_backward";
  gelu::DType t, tdy;
  gelu::Options o;
  Layout lay;
  Tensor dy, x;
  GeluBackwardArgs(const Tensor& dy_in, const Tensor& x_in, string_view approximate)
      : t(dtype_of(kOp, "x", x_in)),
        tdy(dtype_of(kOp, "grad_output", dy_in)),
        o(options(kOp, approximate)),
        lay(same_shape(dy_in, x_in) ? Layout::of(x_in) : Layout{}),
        dy(lay.in(dy_in)),
        x(lay.in(x_in)) {}
  at::IntArrayRef out_sizes() const { return x.sizes(); }
  const Tensor& like() const { return x; }
  Tensor restore(const Tensor& y) const { return lay.out(y); }
  void run(Tensor& dx) const {
    call([&] { gelu::gelu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), o); });
  }
};

struct BiasGeluArgs {
  static constexpr const char* kOp = "bias_gelu";
  gelu::DType t, tb;
  gelu::Options o;
  Layout lay;
  Tensor x_in, x, bias;
  BiasGeluArgs(const Tensor& x_in_, const Tensor& bias_in, string_view approximate)
      : t(dtype_of(kOp, "x", x_in_)),
        tb(dtype_of(kOp, "bias", bias_in)),
        o(options(kOp, approximate)),
        lay(Layout::of(x_in_, /*keep_last=*/true)),
        x_in(x_in_),
        x(lay.in(x_in_)),
        bias(bias_in.contiguous()) {}
  at::IntArrayRef out_sizes() const { return x.sizes(); }
  const Tensor& like() const { return x; }
  Tensor restore(const Tensor& y) const { return like_input(lay.out(y), x_in); }
  void run(Tensor& y) const {
    call([&] { gelu::bias_gelu(cref(x, t), cref(bias, tb), ref(y, t), o); });
  }
};

// dbias takes the bias's dtype: the library sums in f32 and rounds once.
struct BiasGeluBackwardArgs {
  static constexpr const char* kOp = "bias_gelu_backward";
  gelu::DType t, tdy, tb;
  gelu::Options o;
  Layout lay;
  Tensor x_in, dy, x, bias;
  BiasGeluBackwardArgs(const Tensor& dy_in, const Tensor& x_in_, const Tensor& bias_in,
                       string_view approximate)
      : t(dtype_of(kOp, "x", x_in_)),
        tdy(dtype_of(kOp, "grad_output", dy_in)),
        tb(dtype_of(kOp, "bias", bias_in)),
        o(options(kOp, approximate)),
        lay(same_shape(dy_in, x_in_) ? Layout::of(x_in_, /*keep_last=*/true)
                                     : Layout{}),
        x_in(x_in_),
        dy(lay.in(dy_in)),
        x(lay.in(x_in_)),
        bias(bias_in.contiguous()) {}
  Tensor restore(const Tensor& dx) const { return like_input(lay.out(dx), x_in); }
  void run(Tensor& dx, Tensor& dbias) const {
    call([&] {
      gelu::bias_gelu_backward(cref(dy, tdy), cref(x, t), cref(bias, tb), ref(dx, t),
                               ref(dbias, tb), o);
    });
  }
};

struct AddGeluArgs {
  static constexpr const char* kOp = "add_gelu";
  gelu::DType ta, tb;
  gelu::Options o;
  Layout lay;
  Tensor a, b;
  AddGeluArgs(const Tensor& a_in, const Tensor& b_in, string_view approximate)
      : ta(dtype_of(kOp, "a", a_in)),
        tb(dtype_of(kOp, "b", b_in)),
        o(options(kOp, approximate)),
        lay(same_shape(a_in, b_in) ? Layout::of(a_in) : Layout{}),
        a(lay.in(a_in)),
        b(lay.in(b_in)) {}
  at::IntArrayRef out_sizes() const { return a.sizes(); }
  const Tensor& like() const { return a; }
  Tensor restore(const Tensor& y) const { return lay.out(y); }
  void run(Tensor& y) const {
    call([&] { gelu::add_gelu(cref(a, ta), cref(b, tb), ref(y, ta), o); });
  }
};

struct AddGeluBackwardArgs {
  static constexpr const char* kOp = "add_gelu_backward";
  gelu::DType tdy, ta, tb;
  gelu::Options o;
  Layout lay;
  Tensor dy, a, b;
  AddGeluBackwardArgs(const Tensor& dy_in, const Tensor& a_in, const Tensor& b_in,
                      string_view approximate)
      : tdy(dtype_of(kOp, "grad_output", dy_in)),
        ta(dtype_of(kOp, "a", a_in)),
        tb(dtype_of(kOp, "b", b_in)),
        o(options(kOp, approximate)),
        lay(same_shape(a_in, b_in) && same_shape(dy_in, a_in) ? Layout::of(a_in)
                                                              : Layout{}),
        dy(lay.in(dy_in)),
        a(lay.in(a_in)),
        b(lay.in(b_in)) {}
  at::IntArrayRef out_sizes() const { return a.sizes(); }
  const Tensor& like() const { return a; }
  Tensor restore(const Tensor& y) const { return lay.out(y); }
  void run(Tensor& dx) const {
    call([&] {
      gelu::add_gelu_backward(cref(dy, tdy), cref(a, ta), cref(b, tb), ref(dx, ta), o);
    });
  }
};

struct GegluArgs {
  static constexpr const char* kOp = "geglu";
  gelu::DType t;
  gelu::Options o;
  Layout lay;  // GeGLU's halves: always computed contiguous
  Tensor x;
  std::vector<int64_t> y_sizes;
  GegluArgs(const Tensor& x_in, string_view approximate, string_view gelu_half)
      : t(dtype_of(kOp, "x", x_in)),
        o(geglu_options(kOp, approximate, gelu_half)),
        x(x_in.contiguous()),
        y_sizes(half_last(x)) {}
  at::IntArrayRef out_sizes() const { return y_sizes; }
  const Tensor& like() const { return x; }
  Tensor restore(const Tensor& y) const { return y; }
  void run(Tensor& y) const {
    call([&] { gelu::geglu(cref(x, t), ref(y, t), o); });
  }
};

struct GegluBackwardArgs {
  static constexpr const char* kOp = "geglu_backward";
  gelu::DType t, tdy;
  gelu::Options o;
  Layout lay;
  Tensor dy, x;
  GegluBackwardArgs(const Tensor& dy_in, const Tensor& x_in, string_view approximate,
                    string_view gelu_half)
      : t(dtype_of(kOp, "x", x_in)),
        tdy(dtype_of(kOp, "grad_output", dy_in)),
        o(geglu_options(kOp, approximate, gelu_half)),
        dy(dy_in.contiguous()),
        x(x_in.contiguous()) {}
  at::IntArrayRef out_sizes() const { return x.sizes(); }
  const Tensor& like() const { return x; }
  Tensor restore(const Tensor& y) const { return y; }
  void run(Tensor& dx) const {
    call([&] { gelu::geglu_backward(cref(dy, tdy), cref(x, t), ref(dx, t), o); });
  }
};

// A kernel's parameter type, as the dispatcher matches it against the
// Autograd kernels' signatures: tensors by const reference, str by value.
template <class T>
using Param = std::conditional_t<std::is_same_v<T, Tensor>, const Tensor&, T>;

// The functional kernel of a one-output op: a new output, x's (a's) dtype.
// In is given explicitly, so the packs need not be deducible.
template <class Args, class... In>
Tensor functional(Param<In>... in) {
  const Args args(in...);
  Tensor y = new_output(args.out_sizes(), args.like());
  args.run(y);
  return args.restore(y);
}

// Its out= kernel (out last, after the keyword arguments, as in the schema).
template <class Args, class... In>
Tensor& out_variant(Param<In>... in, Tensor& out) {
  const Args args(in...);
  check_out(Args::kOp, "out", out, args.like());
  // out keeps its own layout (as aten's out= variants): a result computed
  // in a permuted order goes through a temporary.
  Tensor y = args.lay.perm.empty() ? direct_or_temp(out, args.out_sizes())
                                   : new_output(args.out_sizes(), args.like());
  args.run(y);
  commit_out(out, args.lay.out(y));
  return out;
}

std::tuple<Tensor, Tensor> bias_gelu_backward_cpu(const Tensor& dy, const Tensor& x,
                                                  const Tensor& bias,
                                                  string_view approximate) {
  const BiasGeluBackwardArgs args(dy, x, bias, approximate);
  Tensor dx = new_output(args.x.sizes(), args.x);
  Tensor dbias = new_output(args.bias.sizes(), args.bias);
  args.run(dx, dbias);
  return {args.restore(dx), dbias};
}

std::tuple<Tensor&, Tensor&> bias_gelu_backward_out_cpu(
    const Tensor& dy, const Tensor& x, const Tensor& bias, string_view approximate,
    Tensor& grad_x, Tensor& grad_bias) {
  const BiasGeluBackwardArgs args(dy, x, bias, approximate);
  check_out(args.kOp, "grad_x", grad_x, args.x);
  check_out(args.kOp, "grad_bias", grad_bias, args.bias);
  Tensor dx = args.lay.perm.empty() ? direct_or_temp(grad_x, args.x.sizes())
                                    : new_output(args.x.sizes(), args.x);
  Tensor dbias = direct_or_temp(grad_bias, args.bias.sizes());
  args.run(dx, dbias);
  commit_out(grad_x, args.lay.out(dx));
  commit_out(grad_bias, dbias);
  return {grad_x, grad_bias};
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
  m.def(
      "gelu_backward(Tensor grad_output, Tensor x, *, "
      "str approximate='none') -> Tensor");
  m.def("bias_gelu(Tensor x, Tensor bias, *, str approximate='none') -> Tensor");
  m.def(
      "bias_gelu_backward(Tensor grad_output, Tensor x, Tensor bias, *, "
      "str approximate='none') -> (Tensor grad_x, Tensor grad_bias)");
  m.def("add_gelu(Tensor a, Tensor b, *, str approximate='none') -> Tensor");
  m.def(
      "add_gelu_backward(Tensor grad_output, Tensor a, Tensor b, *, "
      "str approximate='none') -> Tensor");
  // geglu's gelu_half: 'first' is gelu(x[..., :H]) * x[..., H:], 'second'
  // x[..., :H] * gelu(x[..., H:]) (diffusers' GEGLU).
  m.def("geglu(Tensor x, *, str approximate='none', str gelu_half='first') -> Tensor");
  m.def(
      "geglu_backward(Tensor grad_output, Tensor x, *, "
      "str approximate='none', str gelu_half='first') -> Tensor");
  // out= overloads, as aten's: the result goes into preallocated tensors
  // (resized when their shape differs, dtype checked), with no autograd.
  m.def("gelu.out(Tensor x, *, str approximate='none', Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "gelu_backward.out(Tensor grad_output, Tensor x, *, "
      "str approximate='none', Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "bias_gelu.out(Tensor x, Tensor bias, *, str approximate='none', "
      "Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "bias_gelu_backward.out(Tensor grad_output, Tensor x, Tensor bias, *, "
      "str approximate='none', Tensor(a!) grad_x, Tensor(b!) grad_bias) -> "
      "(Tensor(a!) grad_x, Tensor(b!) grad_bias)");
  m.def(
      "add_gelu.out(Tensor a, Tensor b, *, str approximate='none', "
      "Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "add_gelu_backward.out(Tensor grad_output, Tensor a, Tensor b, *, "
      "str approximate='none', Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "geglu.out(Tensor x, *, str approximate='none', str gelu_half='first', "
      "Tensor(a!) out) -> Tensor(a!)");
  m.def(
      "geglu_backward.out(Tensor grad_output, Tensor x, *, "
      "str approximate='none', str gelu_half='first', Tensor(a!) out) -> Tensor(a!)");
  // Not ops on tensors: test and diagnostic helpers.
  m.def("_set_poison_outputs(bool on) -> bool", &gelu_torch::set_poison_outputs);
  m.def("simd_target() -> str", &gelu_torch::simd_target);
}

TORCH_LIBRARY_IMPL(gelu_fusion, CPU, m) {
  using namespace gelu_torch;
  using S = c10::string_view;
  m.impl("gelu", &functional<GeluArgs, Tensor, S>);
  m.impl("gelu_backward", &functional<GeluBackwardArgs, Tensor, Tensor, S>);
  m.impl("bias_gelu", &functional<BiasGeluArgs, Tensor, Tensor, S>);
  m.impl("bias_gelu_backward", &bias_gelu_backward_cpu);
  m.impl("add_gelu", &functional<AddGeluArgs, Tensor, Tensor, S>);
  m.impl("add_gelu_backward",
         &functional<AddGeluBackwardArgs, Tensor, Tensor, Tensor, S>);
  m.impl("geglu", &functional<GegluArgs, Tensor, S, S>);
  m.impl("geglu_backward", &functional<GegluBackwardArgs, Tensor, Tensor, S, S>);
}

// For every backend, not just CPU: the out tensor decides the dispatch, and
// an out on another device must get our message, not "could not run".
TORCH_LIBRARY_IMPL(gelu_fusion, CompositeExplicitAutograd, m) {
  using namespace gelu_torch;
  using S = c10::string_view;
  m.impl("gelu.out", &out_variant<GeluArgs, Tensor, S>);
  m.impl("gelu_backward.out", &out_variant<GeluBackwardArgs, Tensor, Tensor, S>);
  m.impl("bias_gelu.out", &out_variant<BiasGeluArgs, Tensor, Tensor, S>);
  m.impl("bias_gelu_backward.out", &bias_gelu_backward_out_cpu);
  m.impl("add_gelu.out", &out_variant<AddGeluArgs, Tensor, Tensor, S>);
  m.impl("add_gelu_backward.out",
         &out_variant<AddGeluBackwardArgs, Tensor, Tensor, Tensor, S>);
  m.impl("geglu.out", &out_variant<GegluArgs, Tensor, S, S>);
  m.impl("geglu_backward.out", &out_variant<GegluBackwardArgs, Tensor, Tensor, S, S>);
}
