#include "report_machine.hpp"

#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "core/plan.hpp"
#include "gelu/gelu.hpp"

namespace gelu::report {
namespace {

// The model name from /proc/cpuinfo, then "(<vendor> family F model M)" with
// AMD's core name where the family and model give it (AMD's processor
// programming references: family 19h models 00h-0Fh, 20h-5Fh are Zen 3;
// 10h-1Fh, 60h-7Fh, A0h-AFh Zen 4; family 1Ah Zen 5). The model name alone
// ("AMD EPYC") hides what matters here: Zen 4 runs a 512-bit op as two
// 256-bit halves, Zen 5 in one, and this library's in-cache ns/element
// differ by about 1.8x between the two (gelu f32 256K, 1 thread: 0.15 on
// Zen 5, 0.26 on Zen 4, `gelu-fusion report --ops gelu --sizes 256K`), so
// only ratios compare across. One pass over the first processor's lines.
std::string cpu_description() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name, vendor;
  int family = -1, model = -1;
  auto value = [&line] {
    const auto start = line.find_first_not_of(" \t", line.find(':') + 1);
    return line.find(':') == std::string::npos || start == std::string::npos
               ? std::string()
               : line.substr(start);
  };
  while (std::getline(f, line) &&
         (name.empty() || vendor.empty() || family < 0 || model < 0)) {
    if (line.rfind("model name", 0) == 0) name = value();
    else if (line.rfind("model", 0) == 0) model = std::atoi(value().c_str());
    else if (line.rfind("vendor_id", 0) == 0) vendor = value();
    else if (line.rfind("cpu family", 0) == 0) family = std::atoi(value().c_str());
  }
  if (name.empty()) name = "unknown";
  if (family < 0 || model < 0) return name;
  const bool amd = vendor.find("AuthenticAMD") != std::string::npos;
  const bool intel = vendor.find("GenuineIntel") != std::string::npos;
  std::string core;
  if (amd && family == 0x1A) core = ": Zen 5";
  if (amd && family == 0x19) {
    const bool zen4 = (model >= 0x10 && model <= 0x1F) ||
                      (model >= 0x60 && model <= 0x7F) ||
                      (model >= 0xA0 && model <= 0xAF);
    core = zen4 ? ": Zen 4" : ": Zen 3";
  }
  return name + " (" +
         (amd     ? "AMD"
          : intel ? "Intel"
                  : "x86") +
         " family " + std::to_string(family) + " model " + std::to_string(model) +
         core + ")";
}

std::string kib(int64_t bytes) {
  return bytes >= (1 << 20) ? std::to_string(bytes >> 20) + " MiB"
                            : std::to_string(bytes >> 10) + " KiB";
}

}  // namespace

// The target, and where GELU_SIMD_TARGET chose it, what oneDNN and PyTorch
// were limited to (tools/simd_override.hpp).
std::string simd_target_text() {
  const char* pinned = std::getenv("GELU_SIMD_TARGET");
  if (pinned == nullptr || *pinned == '\0') return gelu::simd_target();
  const char* isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  const char* aten = std::getenv("ATEN_CPU_CAPABILITY");
  return gelu::simd_target() +
         " (GELU_SIMD_TARGET; best here: " + gelu::simd_targets().front() +
         "; oneDNN limited to " + (isa ? isa : "its best") + "; PyTorch to " +
         (aten ? std::string(aten) + " (ATEN_CPU_CAPABILITY)" : "its best") + ")";
}

std::vector<std::pair<std::string, std::string>> machine_facts() {
  const auto& m = core::this_machine();
  const char* bind = std::getenv("OMP_PROC_BIND");
  // Other processes competing for the cores distort multi-thread rows most
  // (a fork/join waits for a busy core): say how loaded the machine was.
  double load = 0;
  std::ifstream("/proc/loadavg") >> load;
  char load_text[128];
  std::snprintf(load_text, sizeof load_text, "%.2f at start%s", load,
                load > 0.5 * m.cores
                    ? " (busy: other processes compete, multi-thread rows suffer most)"
                    : "");
  return {
      {"CPU", cpu_description()},
      {"SIMD target (chosen at run time)", simd_target_text()},
      {"caches", "L1d " + kib(m.l1d_bytes) + ", L2 " + kib(m.l2_bytes) + ", L3 " +
                     kib(m.l3_bytes)},
      {"cores (OpenMP)", std::to_string(m.cores)},
      {"library default threads", std::to_string(gelu::default_num_threads())},
      {"OMP_PROC_BIND", bind ? bind : "unset (threads not bound to cores)"},
      {"load average (1 min)", load_text},
      {"compiler", __VERSION__},
  };
}

}  // namespace gelu::report
