#include "core/op_table.hpp"

#include <sstream>

namespace gelu::core {
namespace {

using S = ShapeRule;
using T = DTypeRule;
// The backward ops' optional output: the forward's value, recomputed in the
// same pass (TensorDecl::optional).
constexpr bool kOptional = true;

constexpr AttrDecl kAttrs[] = {
    {"approximate", "str", "'none'",
     "'none' (erf), 'tanh' or 'quick' (x*sigmoid(1.702x))"},
    {"num_threads", "int", "0", "threads; 0 = library default, < 0 an error"},
};

constexpr OpDecl kOps[] = {
    {OpId::gelu, "gelu",
     {{"x", false, S::primary}, {"y", true, S::same}}, 2, PrimaryRule::any,
     "y = gelu(x)", "gelu_backward", nullptr, nullptr},
    {OpId::gelu_backward, "gelu_backward",
     {{"dy", false, S::same},
      {"x", false, S::primary},
      {"dx", true, S::same},
      {"y", true, S::same, T::same, kOptional}},
     4, PrimaryRule::any, "dx = dy * gelu'(x); optionally y = gelu(x)",
     nullptr, "gelu", "x"},
    {OpId::bias_gelu, "bias_gelu",
     {{"x", false, S::primary},
      {"bias", false, S::last_dim},
      {"y", true, S::same}},
     3, PrimaryRule::rank_ge_1, "y = gelu(x + bias)", "bias_gelu_backward",
     nullptr, nullptr},
    {OpId::bias_gelu_backward, "bias_gelu_backward",
     {{"dy", false, S::same},
      {"x", false, S::primary},
      {"bias", false, S::last_dim},
      {"dx", true, S::same},
      {"dbias", true, S::last_dim, T::same_or_f32},
      {"y", true, S::same, T::same, kOptional}},
     6, PrimaryRule::rank_ge_1,
     "dx = dy * gelu'(x + bias); dbias = sum of dx over leading dims; "
     "optionally y = gelu(x + bias)",
     nullptr, "bias_gelu", "x, bias"},
    {OpId::add_gelu, "add_gelu",
     {{"a", false, S::primary}, {"b", false, S::same}, {"y", true, S::same}},
     3, PrimaryRule::any, "y = gelu(a + b)", "add_gelu_backward", nullptr,
     nullptr},
    {OpId::add_gelu_backward, "add_gelu_backward",
     {{"dy", false, S::same},
      {"a", false, S::primary},
      {"b", false, S::same},
      {"dx", true, S::same}},
     4, PrimaryRule::any, "dx = dy * gelu'(a + b) (gradient of a and of b)",
     nullptr, "add_gelu", "a, b"},
    {OpId::geglu, "geglu",
     {{"x", false, S::primary}, {"y", true, S::half_last}}, 2,
     PrimaryRule::rank_ge_1_even_last,
     "y[..., H] = gelu(x[..., :H]) * x[..., H:]", "geglu_backward", nullptr,
     nullptr},
    {OpId::geglu_backward, "geglu_backward",
     {{"dy", false, S::half_last},
      {"x", false, S::primary},
      {"dx", true, S::same},
      {"y", true, S::half_last, T::same, kOptional}},
     4, PrimaryRule::rank_ge_1_even_last,
     "dx[..., :H] = dy * x[..., H:] * gelu'(x[..., :H]); "
     "dx[..., H:] = dy * gelu(x[..., :H]); "
     "optionally y = gelu(x[..., :H]) * x[..., H:]",
     nullptr, "geglu", "x"},
};

static_assert(std::size(kOps) == static_cast<size_t>(OpId::geglu_backward) + 1,
              "one entry per OpId, in OpId order");

const char* shape_rule_text(ShapeRule r) {
  switch (r) {
    case S::primary: return "any";
    case S::same: return "same as primary";
    case S::last_dim: return "[last dim of primary]";
    case S::half_last: return "primary with last dim / 2";
  }
  return "?";
}

}  // namespace

std::span<const AttrDecl> op_attrs() { return kAttrs; }
std::span<const OpDecl> all_ops() { return kOps; }
const OpDecl& op_decl(OpId id) { return kOps[static_cast<int>(id)]; }

std::string describe_ops() {
  std::ostringstream out;
  out << "attributes (every op): ";
  for (const AttrDecl& a : kAttrs)
    out << a.name << ": " << a.type << " = " << a.default_value << " ("
        << a.meaning << ");  ";
  out << "\n\n";
  for (const OpDecl& op : kOps) {
    out << op.name << "   " << op.formula << "\n";
    for (int i = 0; i < op.num_tensors; ++i) {
      const TensorDecl& t = op.tensors[i];
      out << "    " << (t.output ? "out " : "in  ") << t.name << ": "
          << shape_rule_text(t.shape)
          << (t.dtype == T::same_or_f32 ? ", dtype same or f32" : "")
          << (t.optional ? ", optional (TensorRef{}: not requested)" : "")
          << "\n";
    }
    if (op.primary_rule == PrimaryRule::rank_ge_1)
      out << "    requires rank >= 1\n";
    if (op.primary_rule == PrimaryRule::rank_ge_1_even_last)
      out << "    requires rank >= 1 and an even last dimension\n";
    if (op.backward) out << "    backward: " << op.backward << "\n";
    if (op.forward)
      out << "    backward of: " << op.forward << ", consumes: " << op.saved
          << "\n";
  }
  return out.str();
}

}  // namespace gelu::core
