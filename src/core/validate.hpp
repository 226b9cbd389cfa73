// Argument checks for every op, driven by its declaration in op_table.
// Everything is checked before any output is touched; a failure throws
// gelu::Error naming the op, the argument, what was expected and what came.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/op_table.hpp"
#include "gelu/gelu.hpp"

namespace gelu::core {

// One tensor argument, in the order of the op's declaration.
using TensorArg = detail::OpArg;

// Throws gelu::Error on the first rule `args` or `opts` break. Trailing
// optional outputs may be left out of `args`: they are then absent.
void validate(OpId op, std::span<const TensorArg> args, const Options& opts);

// "[4, 7]"
std::string shape_text(const std::vector<int64_t>& shape);

}  // namespace gelu::core
