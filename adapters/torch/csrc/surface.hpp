// The torch view of the op table (src/core/op_table.hpp): for each op, the
// variants torch.ops.gelu_fusion offers, their schemas and argument names.
// Everything the extension registers is generated from here, in one loop
// over the table (register.cpp); the Python package reads the same facts as
// JSON (op_table_json) to generate its fake kernels and functions.
//
// Variants of an op `name`:
//   functional  name(inputs..., *, attrs) -> required outputs
//   out         name.out(inputs..., *, attrs, outputs!) -> ()
// and of an op with an optional output y (the backward ops that can also
// return the forward's value):
//   value       name_and_value(inputs..., *, attrs) -> (outputs..., y)
//   value_out   name_and_value.out(inputs..., *, attrs, y!) -> outputs
//   value_grad_x_out
//               name_and_value.grad_x_out(inputs..., *, attrs, grad_x!, y!)
//                 -> the other outputs
// An argument written (!) is never also returned: torch.compile can
// functionalize only custom ops whose results alias no argument.
#pragma once

#include <string>
#include <vector>

#include "core/op_table.hpp"

namespace gelu_torch {

enum class Variant { functional, out, value, value_out, value_grad_x_out };

// Argument and result names as PyTorch spells them: the gradient flowing in
// is grad_output, the gradients out grad_x and grad_bias; the others keep
// the table's names.
const char* torch_name(const gelu::core::TensorDecl& t);

// Whether an op takes gelu_half (its last dimension is [value | gate]).
inline bool has_gelu_half(const gelu::core::OpDecl& op) {
  return op.kind == gelu::core::OpKind::gated;
}

// One registered operator: an op of the table in one variant.
struct Surface {
  const gelu::core::OpDecl* op;
  Variant variant;
  std::vector<int> inputs;   // table indices, in order
  std::vector<int> outputs;  // table indices of the outputs it returns or writes
  // Outputs passed in (out= arguments), in schema order; a subset of outputs
  // (value_out: y only, which is not returned).
  std::vector<int> given;
  // The table index of y where this variant computes it, else -1.
  int value = -1;

  std::string name;      // "bias_gelu_backward_and_value"
  std::string overload;  // "", "out", "grad_x_out"
  // The attributes the schema takes after the inputs (approximate, and
  // gelu_half for the gated ops), then come the written arguments.
  size_t num_attrs = 0;

  // Arguments on the stack of a call: inputs, attributes, written ones.
  size_t num_args() const { return inputs.size() + num_attrs + given.size(); }
  std::string qualified() const;  // name[.overload]
  std::string schema() const;
  // Whether output `i` (a table index) is returned (not written into an
  // argument).
  bool returns(int i) const;
};

// Every registered operator, generated from the table.
const std::vector<Surface>& all_surfaces();
// The surface registered as `name` with `overload` ("" for the default).
const Surface& find_surface(const std::string& name, const std::string& overload);

// The table as JSON for the Python side: per op its name, kind, primary
// rule, tensors (table and torch names, role, shape and dtype rules,
// optional), attributes, and forward/backward pairing.
std::string op_table_json();

}  // namespace gelu_torch
