#include "report_onednn.hpp"

#ifdef GELU_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>
#include <unordered_map>

#include "math/gelu_forms.hpp"
#endif

namespace gelu::report::onednn {

#ifndef GELU_HAVE_DNNL

bool installed() { return false; }
std::string version() { return "not installed"; }
void set_threads(int) {}
std::unique_ptr<Peer> make_peer(Case&, Approx, std::string* why) {
  *why = "not installed";
  return nullptr;
}

#else

namespace {

using dnnl::algorithm;
using dnnl::memory;
using tag = memory::format_tag;

struct Env {
  dnnl::engine eng{dnnl::engine::kind::cpu, 0};
  dnnl::stream strm{eng};
};
Env& env() {
  static Env e;
  return e;
}

memory::data_type dt(DType t) {
  switch (t) {
    case DType::f32: return memory::data_type::f32;
    case DType::bf16: return memory::data_type::bf16;
    case DType::f16: return memory::data_type::f16;
  }
  return memory::data_type::f32;
}

// Whether oneDNN has the form; its eltwise algorithm and alpha.
bool has_form(Approx f) {
  return f == Approx::none || f == Approx::tanh || f == Approx::quick;
}
algorithm alg(Approx f) {
  switch (f) {
    case Approx::tanh: return algorithm::eltwise_gelu_tanh;
    case Approx::quick: return algorithm::eltwise_swish;  // x*sigmoid(a x)
    default: return algorithm::eltwise_gelu_erf;
  }
}
float alpha(Approx f) {
  return f == Approx::quick ? static_cast<float>(gelu::math::kQuickScale) : 0.f;
}

class Prim : public Peer {
 public:
  Prim(dnnl::primitive p, std::unordered_map<int, memory> args)
      : p_(std::move(p)), args_(std::move(args)) {}
  void run() override {
    p_.execute(env().strm, args_);
    env().strm.wait();
  }

 private:
  dnnl::primitive p_;
  std::unordered_map<int, memory> args_;
};

std::unique_ptr<Peer> build(Case& c, Approx f) {
  Env& e = env();
  const memory::dims d{c.shape.rows, c.shape.cols};
  const memory::desc md(d, dt(c.dtype), tag::ab);
  auto mem = [&](void* p) { return memory(md, e.eng, p); };
  switch (c.op) {
    case OpId::gelu: {
      dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg(f), md,
                                     alpha(f), 0.f);
      dnnl::eltwise_forward::primitive_desc pd(fd, e.eng);
      return std::make_unique<Prim>(
          dnnl::eltwise_forward(pd),
          std::unordered_map<int, memory>{{DNNL_ARG_SRC, mem(c.x.data())},
                                          {DNNL_ARG_DST, mem(c.out.data())}});
    }
    case OpId::gelu_backward: {
      dnnl::eltwise_forward::desc fd(dnnl::prop_kind::forward_training, alg(f), md,
                                     alpha(f), 0.f);
      dnnl::eltwise_forward::primitive_desc fpd(fd, e.eng);
      dnnl::eltwise_backward::desc bd(alg(f), md, md, alpha(f), 0.f);
      dnnl::eltwise_backward::primitive_desc pd(bd, e.eng, fpd);
      return std::make_unique<Prim>(
          dnnl::eltwise_backward(pd),
          std::unordered_map<int, memory>{{DNNL_ARG_SRC, mem(c.x.data())},
                                          {DNNL_ARG_DIFF_DST, mem(c.dy.data())},
                                          {DNNL_ARG_DIFF_SRC, mem(c.out.data())}});
    }
    case OpId::bias_gelu:
    case OpId::add_gelu: {
      const memory::desc bmd(
          c.op == OpId::bias_gelu ? memory::dims{1, c.shape.cols} : d, dt(c.dtype),
          tag::ab);
      dnnl::post_ops po;
      po.append_eltwise(1.f, alg(f), alpha(f), 0.f);
      dnnl::primitive_attr attr;
      attr.set_post_ops(po);
      dnnl::binary::desc bd(algorithm::binary_add, md, bmd, md);
      dnnl::binary::primitive_desc pd(bd, attr, e.eng);
      return std::make_unique<Prim>(
          dnnl::binary(pd), std::unordered_map<int, memory>{
                                {DNNL_ARG_SRC_0, mem(c.x.data())},
                                {DNNL_ARG_SRC_1, memory(bmd, e.eng, c.b.data())},
                                {DNNL_ARG_DST, mem(c.out.data())}});
    }
    default: return nullptr;
  }
}

}  // namespace

bool installed() { return true; }

std::string version() {
  const dnnl_version_t* v = dnnl_version();
  std::string s = std::to_string(v->major) + "." + std::to_string(v->minor) + "." +
                  std::to_string(v->patch);
  if (v->cpu_runtime == DNNL_RUNTIME_OMP) s += " (OpenMP)";
  return s;
}

void set_threads(int threads) { omp_set_num_threads(threads); }

std::unique_ptr<Peer> make_peer(Case& c, Approx form, std::string* why) {
  if (!has_form(form)) {
    *why = std::string("no ") + approx_name(form) + " form in oneDNN";
    return nullptr;
  }
  try {
    auto p = build(c, form);
    if (!p) *why = "no such op in oneDNN";
    return p;
  } catch (const dnnl::error&) {
    *why = std::string(dtype_name(c.dtype)) + " unsupported";
    return nullptr;
  }
}

#endif

}  // namespace gelu::report::onednn
