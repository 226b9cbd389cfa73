#include "report_machine.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/plan.hpp"
#include "gelu/gelu.hpp"

namespace gelu::report {
namespace {

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      return colon == std::string::npos ? line : line.substr(colon + 2);
    }
  return "unknown";
}

std::string kib(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                            : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

std::vector<std::pair<std::string, std::string>> machine_facts() {
  const auto& m = core::this_machine();
  const char* bind = std::getenv("OMP_PROC_BIND");
  // Other processes competing for the cores distort multi-thread rows most
  // (a fork/join waits for a busy core): say how loaded the machine was.
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  char load_text[128];
  std::snprintf(load_text, sizeof load_text, "%.2f at start%s", load,
                load > 0.5 * m.cores ? " (busy: other processes compete, multi-thread rows suffer most)" : "");
  return {
      {"CPU", cpu_model()},
      {"SIMD target (chosen at run time)", gelu::simd_target()},
      {"caches", "L1d " + kib(m.l1d_bytes) + ", L2 " + kib(m.l2_bytes) +
                     ", L3 " + kib(m.l3_bytes)},
      {"cores (OpenMP)", std::to_string(m.cores)},
      {"library default threads", std::to_string(gelu::default_num_threads())},
      {"OMP_PROC_BIND", bind ? bind : "unset (threads not bound to cores)"},
      {"load average (1 min)", load_text},
      {"compiler", __VERSION__},
  };
}

}  // namespace gelu::report
