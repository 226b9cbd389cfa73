// `gelu-fusion ops`: prints the op declaration table.
#include <cstdio>

#include "command.hpp"
#include "core/op_table.hpp"

namespace {
int run_ops(const std::vector<std::string>&) {
  std::fputs(gelu::core::describe_ops().c_str(), stdout);
  return 0;
}
}  // namespace

GELU_COMMAND("ops", "print every op's declaration (tensors, shapes, backward)",
             run_ops);
