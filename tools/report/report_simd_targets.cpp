#include "report_simd_targets.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/op_table.hpp"
#include "report_case.hpp"
#include "report_common.hpp"
#include "report_onednn.hpp"
#include "report_sections.hpp"
#include "report_timing.hpp"
#include "simd_override.hpp"

namespace gelu::report {
namespace {

constexpr int64_t kElements = 1 << 18;  // 256K: in cache, the kernels' own speed
const OpId kOps[] = {OpId::gelu, OpId::gelu_backward, OpId::bias_gelu, OpId::add_gelu};

std::string num(const char* f, double v) {
  char b[32];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

struct Times {
  double ours = NAN, onednn = NAN;
};

std::string self_exe() {
  std::error_code ec;
  const auto p = std::filesystem::read_symlink("/proc/self/exe", ec);
  return ec ? "gelu-fusion" : p.string();
}

// One child run: op name -> times, or empty with *why on failure.
std::map<std::string, Times> run_child(const std::string& target, std::string* why) {
  const std::string cmd = "GELU_SIMD_TARGET='" + target + "' ONEDNN_MAX_CPU_ISA='" +
                          tools::onednn_isa_for(target) + "' '" + self_exe() +
                          "' report --target-rows 2>&1";
  std::map<std::string, Times> out;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    *why = "could not start the child process";
    return out;
  }
  std::string text;
  char buf[512];
  while (std::fgets(buf, sizeof buf, p)) text += buf;
  const int rc = pclose(p);
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    std::istringstream w(line);
    std::string tag, op, ours, onednn;
    if (w >> tag >> op >> ours >> onednn && tag == "row")
      out[op] = {std::stod(ours), std::stod(onednn)};
  }
  if (rc != 0 || out.empty()) {
    *why = "child failed: " + text.substr(0, 200);
    out.clear();
  }
  return out;
}

}  // namespace

int print_target_rows() {
  onednn::set_threads(1);
  for (OpId op : kOps) {
    Case c = make_case(op, DType::f32, shape_for(kElements));
    std::string why;
    auto peer = onednn::make_peer(c, Approx::none, &why);
    std::vector<std::function<void()>> fns{[&] { run_ours(c, Approx::none, 1); }};
    if (peer) fns.push_back([&] { peer->run(); });
    const std::vector<Stat> st = time_interleaved(fns, policy_for(kElements, true));
    const double n = static_cast<double>(c.shape.n());
    std::printf("row %s %.6f %.6f\n", core::op_decl(op).name, st[0].median / n,
                peer ? st[1].median / n : NAN);
  }
  return 0;
}

std::string run_simd_targets() {
  const std::vector<std::string> targets = simd_targets();
  progress("[targets] %zu SIMD targets, one child process each (estimate %.0f s)\n",
           targets.size(), 2.0 * static_cast<double>(targets.size()));
  std::string s =
      "## SIMD targets\n\n"
      "f32, erf form, 256K elements, 1 thread, x ~ N(0, 1): ns per element "
      "(median of interleaved rounds) on each SIMD target this CPU runs and this "
      "build has (`GELU_SIMD_TARGET`), and the speed against oneDNN limited to the "
      "same instruction set (`ONEDNN_MAX_CPU_ISA`), both in one child process per "
      "target. PyTorch has no such limit and is not in this table. A build for "
      "this CPU alone (`make run`) has its best target and the portable fallback; "
      "`make build` has every target.\n\n"
      "| target | oneDNN limited to |";
  for (OpId op : kOps) s += std::string(" ") + core::op_decl(op).name + " |";
  s += "\n|---|---|";
  for (size_t i = 0; i < std::size(kOps); ++i) s += "---|";
  s += "\n";
  for (const std::string& t : targets) {
    std::string why;
    const auto rows = run_child(t, &why);
    // Appended piece by piece: GCC 12 warns (-Wrestrict, a false positive)
    // on a literal + std::string&& chain it inlines.
    s.append("| ")
        .append(t)
        .append(" | ")
        .append(tools::onednn_isa_for(t))
        .append(" |");
    for (OpId op : kOps) {
      const auto it = rows.find(core::op_decl(op).name);
      s.append(" ");
      if (it == rows.end()) {
        s.append(why.empty() ? "not run" : why).append(" |");
        continue;
      }
      const Times& m = it->second;
      s.append(num("%.3f", m.ours));
      if (std::isnan(m.onednn)) s.append(", no oneDNN");
      else s.append(", x").append(num("%.2f", m.onednn / m.ours));
      s.append(" |");
    }
    s += "\n";
  }
  return s;
}

}  // namespace gelu::report
