// One declaration per op: the single source of truth for each op's tensors,
// attributes, shape rules and its forward/backward pairing. The public
// functions validate through it (validate.hpp) and `gelu-fusion ops` prints
// it. Adding an op means one entry here and one kernel in src/cpu.
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace gelu::core {

enum class OpId {
  gelu,
  gelu_backward,
  bias_gelu,
  bias_gelu_backward,
  add_gelu,
  add_gelu_backward,
  geglu,
  geglu_backward,
};

// How a tensor's expected shape follows from the op's primary tensor (the
// first tensor whose rule is `primary`).
enum class ShapeRule {
  primary,         // any shape (subject to the op's PrimaryRule)
  same,            // the primary's shape
  last_dim,        // 1-D: [primary's last dimension]
  half_last,       // the primary's shape with the last dimension halved
};

// What the op requires of its primary tensor.
enum class PrimaryRule { any, rank_ge_1, rank_ge_1_even_last };

// Which dtypes a tensor may take, relative to the primary's dtype.
enum class DTypeRule { same, same_or_f32 };

struct TensorDecl {
  const char* name;
  bool output;
  ShapeRule shape;
  DTypeRule dtype = DTypeRule::same;
  // An optional output may be absent: null data and no shape (TensorRef{}).
  // Present, it follows every rule of an output.
  bool optional = false;
};

struct AttrDecl {
  const char* name;
  const char* type;
  const char* default_value;
  const char* meaning;
};

inline constexpr int kMaxTensors = 6;

struct OpDecl {
  OpId id;
  const char* name;
  // Inputs then outputs, in the order of the public function's parameters.
  TensorDecl tensors[kMaxTensors];
  int num_tensors;
  PrimaryRule primary_rule;
  const char* formula;
  // Forward ops name their backward; backward ops name their forward and
  // the forward tensors they consume (saved for the backward, nothing else).
  const char* backward;
  const char* forward;
  const char* saved;
};

// Attributes every op takes (gelu::Options).
std::span<const AttrDecl> op_attrs();

std::span<const OpDecl> all_ops();
const OpDecl& op_decl(OpId id);

// The table as text, for `gelu-fusion ops`.
std::string describe_ops();

}  // namespace gelu::core
