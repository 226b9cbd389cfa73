// One declaration per op: the single source of truth for each op's tensors
// (their roles, shape and dtype rules), its kind (how it is planned), its
// attributes, its forward/backward pairing and its CPU kernel. The public
// functions are one call each of the generic entry (run_op.hpp), which
// validates (validate.hpp), plans (plan.hpp: plan_op) and runs the kernel
// through it; `gelu-fusion ops` and `gelu-fusion plan`, the report, the
// benchmarks and the tests take the op list from all_ops(). Adding an op of
// an existing kind means one entry here, its OpId and one-line public
// function in gelu.hpp (and gelu_cuda.hpp), and its tests.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gelu/gelu.hpp"

namespace gelu::core {

// The ops, in table order (gelu.hpp: the public functions name them).
using OpId = gelu::OpId;

// How a tensor's expected shape follows from the op's primary tensor (the
// first tensor whose rule is `primary`).
enum class ShapeRule {
  primary,    // any shape (subject to the op's PrimaryRule)
  same,       // the primary's shape
  last_dim,   // 1-D: [primary's last dimension]
  half_last,  // the primary's shape with the last dimension halved
};

// What the op requires of its primary tensor.
enum class PrimaryRule { any, rank_ge_1, rank_ge_1_even_last };

// Which dtypes a tensor may take, relative to the primary's dtype.
enum class DTypeRule { same, same_or_f32 };

// What a tensor is to the op; tools fill inputs by role.
enum class Role {
  x,       // the pre-activation input (add_gelu's a; geglu's [value | gate])
  addend,  // added to x before the GELU (bias per column, add_gelu's b)
  dy,      // the upstream gradient
  y,       // the forward's output
  dx,      // the gradient of x (and of the addend where it is per element)
  dbias,   // the gradient of a per-column bias: dx summed over rows
};
constexpr bool is_output(Role r) {
  return r == Role::y || r == Role::dx || r == Role::dbias;
}

struct TensorDecl {
  const char* name;
  Role role;
  ShapeRule shape;
  DTypeRule dtype = DTypeRule::same;
  // An optional output may be absent: null data and no shape (TensorRef{}).
  // Present, it follows every rule of an output and is one more stream.
  bool optional = false;
  bool output() const { return is_output(role); }
};

// How the op is split into tasks (plan.hpp, plan_op).
enum class OpKind {
  eltwise,      // every tensor has the primary's shape: 1 row of numel
  rows,         // per-column tensors (bias): rows x the last dimension
  rows_reduce,  // rows, plus a per-column sum over rows (dbias): its row
                // blocks are rows of partial sums, so they are capped
  gated,        // the last dimension is [value | gate]: rows x half of it
};

struct CpuChunk;
using CpuKernel = void (*)(const CpuChunk&);

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
  OpKind kind;
  const char* formula;
  // Forward ops name their backward; backward ops name their forward and
  // the forward tensors they consume (saved for the backward, nothing else).
  const char* backward;
  const char* forward;
  const char* saved;
  // The op's CPU kernel on one task (cpu_chunk.hpp), which the generic
  // entry (run_op.hpp) plans by `kind` and runs over the tasks.
  CpuKernel cpu;

  bool is_backward() const { return forward != nullptr; }
  // The forward op's name: the op family (the report's chart row).
  const char* family() const { return forward ? forward : name; }
  // Index of the primary tensor (the first whose shape rule is primary).
  constexpr int primary() const {
    int i = 0;
    while (tensors[i].shape != ShapeRule::primary) ++i;
    return i;
  }
  // Index of the tensor with role `r`, or -1 when the op has none.
  constexpr int tensor_of(Role r) const {
    for (int i = 0; i < num_tensors; ++i)
      if (tensors[i].role == r) return i;
    return -1;
  }
  // Elements of `tensor` per planned element: a planned element is one of
  // numel (eltwise), one of rows x cols (rows), one of rows x cols/2 (gated).
  // Per-column tensors are 1/rows of the traffic and count 0.
  constexpr int elements_per_planned(int tensor) const {
    switch (tensors[tensor].shape) {
      case ShapeRule::primary:
      case ShapeRule::same: return kind == OpKind::gated ? 2 : 1;
      case ShapeRule::half_last: return 1;
      case ShapeRule::last_dim: return 0;
    }
    return 0;
  }
  // The streams the op moves per planned element: the sum over its
  // tensors, each read or written once (what the plan sizes tiles by);
  // optional outputs count only when `with_optional` (requested).
  constexpr int streams(bool with_optional = false) const {
    int s = 0;
    for (int i = 0; i < num_tensors; ++i)
      if (with_optional || !tensors[i].optional) s += elements_per_planned(i);
    return s;
  }
  // The tensors every call passes: all but the trailing optional outputs.
  constexpr int required_tensors() const {
    int n = num_tensors;
    while (n > 0 && tensors[n - 1].optional) --n;
    return n;
  }
};

// Attributes every op takes (gelu::Options).
std::span<const AttrDecl> op_attrs();

std::span<const OpDecl> all_ops();
const OpDecl& op_decl(OpId id);
// The op named `name`, or nullptr.
const OpDecl* find_op(std::string_view name);

// The shape of tensor `i` of `op` when its primary tensor has `primary`.
std::vector<int64_t> tensor_shape(const OpDecl& op, int i,
                                  const std::vector<int64_t>& primary);

// The table as text, for `gelu-fusion ops`.
std::string describe_ops();

}  // namespace gelu::core
