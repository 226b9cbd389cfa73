// Subcommands of the gelu-fusion program. Each tools/cmd_*.cpp registers one
// with a static GELU_COMMAND(...) so that adding a command touches no other
// file.
#pragma once

#include <string>
#include <vector>

namespace gelu::tools {

using CommandFn = int (*)(const std::vector<std::string>& args);

struct Command {
  const char* name;
  const char* summary;
  CommandFn run;
};

std::vector<Command>& commands();

struct CommandRegistration {
  explicit CommandRegistration(Command c) { commands().push_back(c); }
};

}  // namespace gelu::tools

#define GELU_COMMAND(name, summary, fn)                               \
  static const ::gelu::tools::CommandRegistration gelu_command_##fn { \
    ::gelu::tools::Command { name, summary, fn }                      \
  }
