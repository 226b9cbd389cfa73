// gelu-fusion: the command-line program (report, ops, plan, sweep, ...).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "command.hpp"
#include "gelu/gelu.hpp"
#include "simd_override.hpp"

namespace gelu::tools {
std::vector<Command>& commands() {
  static std::vector<Command> all;
  return all;
}
}  // namespace gelu::tools

namespace {

void usage() {
  std::printf("usage: gelu-fusion <command> [options]\n\ncommands:\n");
  auto cmds = gelu::tools::commands();
  std::sort(cmds.begin(), cmds.end(),
            [](auto& a, auto& b) { return std::strcmp(a.name, b.name) < 0; });
  for (const auto& c : cmds) std::printf("  %-10s %s\n", c.name, c.summary);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    usage();
    return argc < 2 ? 2 : 0;
  }
  for (const auto& c : gelu::tools::commands()) {
    if (std::strcmp(c.name, argv[1]) != 0) continue;
    try {
      gelu::tools::apply_simd_target_env();
      return c.run(std::vector<std::string>(argv + 2, argv + argc));
    } catch (const std::exception& e) {
      std::fprintf(stderr, "gelu-fusion %s: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "gelu-fusion: unknown command '%s'\n\n", argv[1]);
  usage();
  return 2;
}
