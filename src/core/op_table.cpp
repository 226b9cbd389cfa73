#include "core/op_table.hpp"

#include <sstream>

#include "core/cpu_chunk.hpp"
#include "cpu/kernels.hpp"

namespace gelu::core {
namespace {

using S = ShapeRule;
using T = DTypeRule;
using R = Role;
using K = OpKind;
// The backward ops' optional output: the forward's value, recomputed in the
// same pass (TensorDecl::optional).
constexpr bool kOptional = true;

constexpr AttrDecl kAttrs[] = {
    {"approximate", "str", "'none'",
     "'none' (erf), 'tanh' or 'quick' (x*sigmoid(1.702x))"},
    {"num_threads", "int", "0", "threads; 0 = library default, < 0 an error"},
    {"gelu_half", "str", "'first'",
     "geglu ops only: the half of x [..., 2H] the GELU applies to; 'second' "
     "is x[..., :H] * gelu(x[..., H:])"},
};

// OpDecl::cpu for each op: its kernel on one task (CpuChunk: the tensors
// in table order, offset to the task).
using C = const CpuChunk&;
void cpu_gelu(C c) {
  cpu::gelu_fwd(c.approx, c.dtype, c.cols, c.in(0), c.out(1), c.stream);
}
void cpu_gelu_backward(C c) {
  cpu::gelu_bwd(c.approx, c.dtype, c.cols, c.in(0), c.in(1), c.out(2), c.out(3),
                c.stream);
}
void cpu_bias_gelu(C c) {
  cpu::bias_fwd(c.approx, c.dtype, c.rows, c.cols, c.row_len, c.in(0), c.in(1),
                c.out(2), c.stream);
}
void cpu_bias_gelu_backward(C c) {
  cpu::bias_bwd(c.approx, c.dtype, c.rows, c.cols, c.row_len, c.in(0), c.in(1), c.in(2),
                c.out(3), c.partial, c.out(5), c.stream);
}
void cpu_add_gelu(C c) {
  cpu::add_fwd(c.approx, c.dtype, c.cols, c.in(0), c.in(1), c.out(2), c.stream);
}
void cpu_add_gelu_backward(C c) {
  cpu::add_bwd(c.approx, c.dtype, c.cols, c.in(0), c.in(1), c.in(2), c.out(3),
               c.stream);
}
void cpu_geglu(C c) {
  cpu::geglu_fwd(c.approx, c.dtype, c.rows, c.cols, c.row_len, c.in(0), c.out(1),
                 c.gelu_second, c.stream);
}
void cpu_geglu_backward(C c) {
  cpu::geglu_bwd(c.approx, c.dtype, c.rows, c.cols, c.row_len, c.in(0), c.in(1),
                 c.out(2), c.gelu_second, c.out(3), c.stream);
}

constexpr OpDecl kOps[] = {
    {OpId::gelu,
     "gelu",
     {{"x", R::x, S::primary}, {"y", R::y, S::same}},
     2,
     PrimaryRule::any,
     K::eltwise,
     "y = gelu(x)",
     "gelu_backward",
     nullptr,
     nullptr,
     cpu_gelu},
    {OpId::gelu_backward,
     "gelu_backward",
     {{"dy", R::dy, S::same},
      {"x", R::x, S::primary},
      {"dx", R::dx, S::same},
      {"y", R::y, S::same, T::same, kOptional}},
     4,
     PrimaryRule::any,
     K::eltwise,
     "dx = dy * gelu'(x); optionally y = gelu(x)",
     nullptr,
     "gelu",
     "x",
     cpu_gelu_backward},
    {OpId::bias_gelu,
     "bias_gelu",
     {{"x", R::x, S::primary}, {"bias", R::addend, S::last_dim}, {"y", R::y, S::same}},
     3,
     PrimaryRule::rank_ge_1,
     K::rows,
     "y = gelu(x + bias)",
     "bias_gelu_backward",
     nullptr,
     nullptr,
     cpu_bias_gelu},
    {OpId::bias_gelu_backward,
     "bias_gelu_backward",
     {{"dy", R::dy, S::same},
      {"x", R::x, S::primary},
      {"bias", R::addend, S::last_dim},
      {"dx", R::dx, S::same},
      {"dbias", R::dbias, S::last_dim, T::same_or_f32},
      {"y", R::y, S::same, T::same, kOptional}},
     6,
     PrimaryRule::rank_ge_1,
     K::rows_reduce,
     "dx = dy * gelu'(x + bias); dbias = sum of dx over leading dims; "
     "optionally y = gelu(x + bias)",
     nullptr,
     "bias_gelu",
     "x, bias",
     cpu_bias_gelu_backward},
    {OpId::add_gelu,
     "add_gelu",
     {{"a", R::x, S::primary}, {"b", R::addend, S::same}, {"y", R::y, S::same}},
     3,
     PrimaryRule::any,
     K::eltwise,
     "y = gelu(a + b)",
     "add_gelu_backward",
     nullptr,
     nullptr,
     cpu_add_gelu},
    {OpId::add_gelu_backward,
     "add_gelu_backward",
     {{"dy", R::dy, S::same},
      {"a", R::x, S::primary},
      {"b", R::addend, S::same},
      {"dx", R::dx, S::same}},
     4,
     PrimaryRule::any,
     K::eltwise,
     "dx = dy * gelu'(a + b) (gradient of a and of b)",
     nullptr,
     "add_gelu",
     "a, b",
     cpu_add_gelu_backward},
    {OpId::geglu,
     "geglu",
     {{"x", R::x, S::primary}, {"y", R::y, S::half_last}},
     2,
     PrimaryRule::rank_ge_1_even_last,
     K::gated,
     "y[..., H] = gelu(x[..., :H]) * x[..., H:]",
     "geglu_backward",
     nullptr,
     nullptr,
     cpu_geglu},
    {OpId::geglu_backward,
     "geglu_backward",
     {{"dy", R::dy, S::half_last},
      {"x", R::x, S::primary},
      {"dx", R::dx, S::same},
      {"y", R::y, S::half_last, T::same, kOptional}},
     4,
     PrimaryRule::rank_ge_1_even_last,
     K::gated,
     "dx[..., :H] = dy * x[..., H:] * gelu'(x[..., :H]); "
     "dx[..., H:] = dy * gelu(x[..., :H]); "
     "optionally y = gelu(x[..., :H]) * x[..., H:]",
     nullptr,
     "geglu",
     "x",
     cpu_geglu_backward},
};

constexpr bool entries_in_id_order() {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (static_cast<size_t>(kOps[i].id) != i) return false;
  return true;
}
static_assert(entries_in_id_order() &&
                  std::size(kOps) == static_cast<size_t>(OpId::geglu_backward) + 1,
              "one entry per OpId (gelu.hpp), in OpId order");

const char* shape_rule_text(ShapeRule r) {
  switch (r) {
    case S::primary: return "any";
    case S::same: return "same as primary";
    case S::last_dim: return "[last dim of primary]";
    case S::half_last: return "primary with last dim / 2";
  }
  return "?";
}

const char* kind_text(OpKind k) {
  switch (k) {
    case K::eltwise: return "element-wise (planned as 1 x numel)";
    case K::rows: return "rows (planned as rows x last dim)";
    case K::rows_reduce:
      return "rows with a per-column sum (rows x last dim, row blocks capped)";
    case K::gated: return "gated (planned as rows x last dim / 2)";
  }
  return "?";
}

}  // namespace

std::span<const AttrDecl> op_attrs() { return kAttrs; }
std::span<const OpDecl> all_ops() { return kOps; }
const OpDecl& op_decl(OpId id) { return kOps[static_cast<int>(id)]; }

const OpDecl* find_op(std::string_view name) {
  for (const OpDecl& op : kOps)
    if (name == op.name) return &op;
  return nullptr;
}

std::vector<int64_t> tensor_shape(const OpDecl& op, int i,
                                  const std::vector<int64_t>& primary) {
  switch (op.tensors[i].shape) {
    case S::primary:
    case S::same: return primary;
    case S::last_dim: return {primary.empty() ? 1 : primary.back()};
    case S::half_last: {
      std::vector<int64_t> s = primary;
      if (!s.empty()) s.back() /= 2;
      return s;
    }
  }
  return primary;
}

std::string describe_ops() {
  std::ostringstream out;
  out << "attributes (every op): ";
  for (const AttrDecl& a : kAttrs)
    out << a.name << ": " << a.type << " = " << a.default_value << " (" << a.meaning
        << ");  ";
  out << "\n\n";
  for (const OpDecl& op : kOps) {
    out << op.name << "   " << op.formula << "\n    kind: " << kind_text(op.kind)
        << ", " << op.streams() << " streams per planned element\n";
    for (int i = 0; i < op.num_tensors; ++i) {
      const TensorDecl& t = op.tensors[i];
      out << "    " << (t.output() ? "out " : "in  ") << t.name << ": "
          << shape_rule_text(t.shape)
          << (t.dtype == T::same_or_f32 ? ", dtype same or f32" : "")
          << (t.optional ? ", optional (TensorRef{}: not requested)" : "") << "\n";
    }
    if (op.primary_rule == PrimaryRule::rank_ge_1) out << "    requires rank >= 1\n";
    if (op.primary_rule == PrimaryRule::rank_ge_1_even_last)
      out << "    requires rank >= 1 and an even last dimension\n";
    if (op.backward) out << "    backward: " << op.backward << "\n";
    if (op.forward)
      out << "    backward of: " << op.forward << ", consumes: " << op.saved << "\n";
  }
  return out.str();
}

}  // namespace gelu::core
