#include "surface.hpp"

#include <c10/util/Exception.h>

#include <cstring>
#include <sstream>

namespace gelu_torch {

using gelu::core::OpDecl;
using gelu::core::Role;
using gelu::core::TensorDecl;

const char* torch_name(const TensorDecl& t) {
  switch (t.role) {
    case Role::dy: return "grad_output";
    case Role::dx: return "grad_x";
    case Role::dbias: return "grad_bias";
    default: return t.name;
  }
}

namespace {

// The attributes an op's schema takes: the table's (gelu::Options), less
// num_threads (torch.set_num_threads governs the kernels) and gelu_half
// where the op has no halves.
std::vector<const gelu::core::AttrDecl*> attrs_of(const OpDecl& op) {
  std::vector<const gelu::core::AttrDecl*> a;
  for (const auto& attr : gelu::core::op_attrs()) {
    if (std::strcmp(attr.name, "num_threads") == 0) continue;
    if (std::strcmp(attr.name, "gelu_half") == 0 && !has_gelu_half(op)) continue;
    a.push_back(&attr);
  }
  return a;
}

Surface make(const OpDecl& op, Variant v) {
  Surface s{&op, v, {}, {}, {}, -1, {}, {}, attrs_of(op).size()};
  const bool value_variant = v == Variant::value || v == Variant::value_out ||
                             v == Variant::value_grad_x_out;
  s.name = std::string(op.name) + (value_variant ? "_and_value" : "");
  s.overload = v == Variant::out || v == Variant::value_out ? "out"
               : v == Variant::value_grad_x_out             ? "grad_x_out"
                                                            : "";
  for (int i = 0; i < op.num_tensors; ++i) {
    const TensorDecl& t = op.tensors[i];
    if (!t.output()) {
      s.inputs.push_back(i);
    } else if (t.optional) {
      if (v == Variant::value || v == Variant::value_out ||
          v == Variant::value_grad_x_out)
        s.value = i;
    } else {
      s.outputs.push_back(i);
    }
  }
  if (s.value >= 0) s.outputs.push_back(s.value);
  switch (v) {
    case Variant::functional:
    case Variant::value: break;
    case Variant::out: s.given = s.outputs; break;
    case Variant::value_out: s.given = {s.value}; break;
    case Variant::value_grad_x_out: s.given = {op.tensor_of(Role::dx), s.value}; break;
  }
  return s;
}

// "(a!)", "(b!)", ... for the n-th written argument.
std::string alias(size_t n) { return std::string("(") + char('a' + n) + "!)"; }

}  // namespace

std::string Surface::qualified() const {
  return overload.empty() ? name : name + "." + overload;
}

bool Surface::returns(int i) const {
  for (int g : given)
    if (g == i) return false;
  return true;
}

std::string Surface::schema() const {
  std::ostringstream s;
  s << qualified() << "(";
  for (size_t k = 0; k < inputs.size(); ++k)
    s << (k ? ", " : "") << "Tensor " << torch_name(op->tensors[inputs[k]]);
  // The attributes may also come positionally, which the Python binding
  // parses faster than a keyword (bench/call_overhead.py): the functions'
  // eager calls pass them so. Written arguments are keyword-only, as aten's.
  for (const auto* a : attrs_of(*op))
    s << ", " << a->type << " " << a->name << "=" << a->default_value;
  // A one-output out= variant names its argument `out`, as aten's do.
  const bool plain_out = variant == Variant::out && outputs.size() == 1;
  if (!given.empty()) s << ", *";
  for (size_t k = 0; k < given.size(); ++k)
    s << ", Tensor" << alias(k) << " "
      << (plain_out ? "out" : torch_name(op->tensors[given[k]]));
  // Written arguments are not returned: torch.compile functionalizes a
  // custom op only when no result aliases an argument.
  std::vector<std::string> rets;
  for (int i : outputs) {
    if (!returns(i)) continue;
    // Several results are named; so is the one a value variant returns.
    const bool named = outputs.size() > 1 || variant != Variant::functional;
    rets.push_back(named ? std::string("Tensor ") + torch_name(op->tensors[i])
                         : "Tensor");
  }
  s << ") -> ";
  if (rets.size() == 1) {
    s << rets[0];
  } else {
    s << "(";
    for (size_t k = 0; k < rets.size(); ++k) s << (k ? ", " : "") << rets[k];
    s << ")";
  }
  return s.str();
}

const std::vector<Surface>& all_surfaces() {
  static const std::vector<Surface> all = [] {
    std::vector<Surface> v;
    for (const OpDecl& op : gelu::core::all_ops()) {
      v.push_back(make(op, Variant::functional));
      v.push_back(make(op, Variant::out));
      if (op.required_tensors() < op.num_tensors) {
        v.push_back(make(op, Variant::value));
        v.push_back(make(op, Variant::value_out));
        if (op.tensor_of(Role::dx) >= 0)
          v.push_back(make(op, Variant::value_grad_x_out));
      }
    }
    return v;
  }();
  return all;
}

const Surface& find_surface(const std::string& name, const std::string& overload) {
  for (const Surface& s : all_surfaces())
    if (s.name == name && s.overload == overload) return s;
  TORCH_CHECK(false, "gelu_fusion: internal: no operator ", name, ".", overload);
}

namespace {

const char* role_text(Role r) {
  switch (r) {
    case Role::x: return "x";
    case Role::addend: return "addend";
    case Role::dy: return "dy";
    case Role::y: return "y";
    case Role::dx: return "dx";
    case Role::dbias: return "dbias";
  }
  return "?";
}

const char* shape_text(gelu::core::ShapeRule r) {
  using gelu::core::ShapeRule;
  switch (r) {
    case ShapeRule::primary: return "primary";
    case ShapeRule::same: return "same";
    case ShapeRule::last_dim: return "last_dim";
    case ShapeRule::half_last: return "half_last";
  }
  return "?";
}

const char* kind_text(gelu::core::OpKind k) {
  using gelu::core::OpKind;
  switch (k) {
    case OpKind::eltwise: return "eltwise";
    case OpKind::rows: return "rows";
    case OpKind::rows_reduce: return "rows_reduce";
    case OpKind::gated: return "gated";
  }
  return "?";
}

const char* primary_text(gelu::core::PrimaryRule r) {
  using gelu::core::PrimaryRule;
  switch (r) {
    case PrimaryRule::any: return "any";
    case PrimaryRule::rank_ge_1: return "rank_ge_1";
    case PrimaryRule::rank_ge_1_even_last: return "rank_ge_1_even_last";
  }
  return "?";
}

// A JSON string (the table's texts are plain ASCII without control
// characters; quotes and backslashes are escaped).
std::string q(const char* s) {
  std::string r = "\"";
  for (const char* p = s ? s : ""; *p; ++p) {
    if (*p == '"' || *p == '\\') r += '\\';
    r += *p;
  }
  return r + "\"";
}

}  // namespace

std::string op_table_json() {
  std::ostringstream s;
  s << "[";
  bool first_op = true;
  for (const OpDecl& op : gelu::core::all_ops()) {
    s << (first_op ? "" : ",") << "{\"name\":" << q(op.name)
      << ",\"kind\":" << q(kind_text(op.kind))
      << ",\"primary_rule\":" << q(primary_text(op.primary_rule))
      << ",\"formula\":" << q(op.formula)
      << ",\"backward\":" << (op.backward ? q(op.backward) : "null")
      << ",\"forward\":" << (op.forward ? q(op.forward) : "null") << ",\"tensors\":[";
    first_op = false;
    for (int i = 0; i < op.num_tensors; ++i) {
      const TensorDecl& t = op.tensors[i];
      s << (i ? "," : "") << "{\"name\":" << q(t.name)
        << ",\"torch_name\":" << q(torch_name(t))
        << ",\"role\":" << q(role_text(t.role))
        << ",\"shape\":" << q(shape_text(t.shape)) << ",\"dtype\":"
        << q(t.dtype == gelu::core::DTypeRule::same ? "same" : "same_or_f32")
        << ",\"optional\":" << (t.optional ? "true" : "false")
        << ",\"output\":" << (t.output() ? "true" : "false") << "}";
    }
    s << "],\"attrs\":[";
    bool first_attr = true;
    for (const auto* a : attrs_of(op)) {
      s << (first_attr ? "" : ",") << "{\"name\":" << q(a->name)
        << ",\"type\":" << q(a->type) << ",\"default\":" << q(a->default_value) << "}";
      first_attr = false;
    }
    s << "]}";
  }
  s << "]";
  return s.str();
}

}  // namespace gelu_torch
