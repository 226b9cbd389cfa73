// `gelu-fusion report`: is it right, is it faster than what I use now, and
// how close is it to the machine's limit. Accuracy against the double
// reference, throughput against a memory copy, oneDNN and PyTorch, per-call
// overhead and a chart; tables on stdout, progress on stderr, report.md,
// report.json and report.png in the output folder (default: report/ beside
// the binary, i.e. build/report).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

#include "command.hpp"
#include "report_cliffs.hpp"
#include "report_machine.hpp"
#include "report_model_block.hpp"
#include "report_onednn.hpp"
#include "report_scales.hpp"
#include "report_sections.hpp"
#include "report_simd_targets.hpp"
#include "report_timing.hpp"

namespace gelu::report {
namespace {

namespace fs = std::filesystem;

const char* kUsage =
    "usage: gelu-fusion report [--full | --quick] [--ops a,b] [--dtypes f32,bf16,f16]\n"
    "         [--sizes 4K,256K,4M,32M] [--threads 1,all] [--forms none,tanh,quick]\n"
    "         [--points N] [--no-peers] [--json PATH] [--out DIR]\n"
    "  (default)   the short report: every section, sizes 4K, 256K, 4M, f32 and\n"
    "              bf16 throughput, fewer rounds and accuracy points\n"
    "  --full      the complete report: sizes up to 32M, f16 throughput too, more\n"
    "              rounds and accuracy points, the model block at 1 and 2 threads\n"
    "  --quick     a smoke run: sizes 4K, 256K, 1M, fewest points\n"
    "  --forms     forms timed in the throughput section (default none = erf;\n"
    "              accuracy always covers all three)\n"
    "  --points    f32 accuracy points per region (default 65536)\n"
    "  --no-peers  ours and the copy only (no oneDNN, no PyTorch)\n";

std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

int64_t parse_size(std::string s) {
  int64_t mul = 1;
  if (!s.empty() && (s.back() == 'K' || s.back() == 'k')) mul = 1 << 10, s.pop_back();
  else if (!s.empty() && (s.back() == 'M' || s.back() == 'm'))
    mul = 1 << 20, s.pop_back();
  const int64_t v = std::stoll(s) * mul;
  if (v <= 0) throw Error("--sizes: " + s + " is not a positive size");
  return v;
}

fs::path binary_dir() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : exe.parent_path();
}

std::vector<std::string> timing_rules(const Settings& s) {
  const TimingPolicy small = policy_for(4096, s.few_rounds()),
                     mid = policy_for(1 << 22, s.few_rounds()),
                     big = policy_for(1 << 25, s.few_rounds());
  auto span = [](const TimingPolicy& p) {
    return std::to_string(p.min_rounds) + "-" + std::to_string(p.max_rounds);
  };
  return {
      "Inputs of the size sweep and the shapes: x ~ N(0, 1) (the GELU math's "
      "tail path, x < -3.875, -4 on AVX2, -5.89 for erf on AVX-512, is then rare), "
      "bias/b ~ U[-0.5, 0.5], "
      "dy ~ U[-1, 1]; "
      "the same distributions for every contender.",
      "Input scales (gelu, gelu_backward, bias_gelu, bias_gelu_backward, f32): "
      "x ~ N(0, 1), N(0, 2), N(0, 3) with bias ~ N(0, 1), and tail-only: every "
      "pre-activation in [-10, -6] (x ~ U[-10, -6]; bias ops x ~ "
      "U[-9, -7], bias ~ U[-1, 1]); dy ~ U[-1, 1]. Trained models' "
      "pre-activations are often wider than N(0, 1).",
      "Warm-up: every contender runs once before it is timed; a sample repeats "
      "the call until it lasts >= 100 us and counts the mean per call.",
      "Outputs are preallocated for every contender (PyTorch: out= variants and "
      "preallocated temporaries); no timed call allocates.",
      "Contenders are interleaved round by round (ours, oneDNN, copy, ours, ...), "
      "so drift hits all alike. The copy is a memcpy of the op's compulsory "
      "traffic (half read, half written) with the same threads, each thread "
      "taking at least 256 KiB (smaller copies stay on one thread).",
      "Each figure is the median of its rounds, with the min-max spread: " +
          span(small) + " rounds up to 256K elements, " + span(mid) + " at 4M, " +
          span(big) +
          " beyond (rounds stop at a time budget once the minimum is met); "
          "a case where one call of any contender takes over 0.5 s is timed in one "
          "round "
          "(see the JSON's rounds).",
      "Threads: every row states its thread count and every contender uses that "
      "count (ours: Options::num_threads; oneDNN: omp_set_num_threads; PyTorch: "
      "torch.set_num_threads; the copy: as many OpenMP threads). Threads are "
      "bound to cores only if OMP_PROC_BIND says so (see Machine).",
      "PyTorch is measured by tools/report/report_torch.py, run by the system python "
      "after our sections: it interleaves its call, ours (the same op through "
      "the PyTorch adapter's out= overload, torch.ops.gelu_fusion.<op>.out, on "
      "the same inputs) and a copy of the same traffic (dst.copy_(src)), round "
      "by round. vs PyTorch divides those two medians: side by side, and both "
      "through python's per-call dispatch (see the overhead table). Without "
      "the adapter (not built) it divides PyTorch's python median by ours from "
      "this process, taken a minute or so apart.",
      "Per-call overhead is measured separately on a 1-element call.",
      "Shapes: [n/4096, 4096] (one row when 4096 does not divide n); the shapes "
      "table: last dimension 8 and 65536 at 4M elements.",
  };
}

int run_report(const std::vector<std::string>& args) {
  Settings s;
  for (const core::OpDecl& op : core::all_ops()) s.ops.push_back(op.id);
  s.dtypes = {DType::f32, DType::bf16, DType::f16};
  s.accuracy_forms.assign(std::begin(kAllForms), std::end(kAllForms));
  s.throughput_forms = {Approx::none};
  std::string ops, dtypes, sizes, threads, forms, json_path, points;
  fs::path out_dir = binary_dir() / "report";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= args.size()) throw Error(a + " needs a value");
      return args[++i];
    };
    if (a == "--quick") s.quick = true;
    else if (a == "--full") s.full = true;
    else if (a == "--no-peers") s.peers = false;
    else if (a == "--ops") ops = value();
    else if (a == "--dtypes") dtypes = value();
    else if (a == "--sizes") sizes = value();
    else if (a == "--threads") threads = value();
    else if (a == "--forms") forms = value();
    else if (a == "--points") points = value();
    else if (a == "--json") json_path = value();
    else if (a == "--target-rows") return print_target_rows();  // a child's part
    else if (a == "--out") out_dir = value();
    else if (a == "--help" || a == "-h") return std::fputs(kUsage, stdout), 0;
    else throw Error("unknown option '" + a + "'\n" + kUsage);
  }
  if (!ops.empty()) {
    s.ops.clear();
    for (const auto& o : split(ops)) {
      const core::OpDecl* op = core::find_op(o);
      if (!op) throw Error("--ops: unknown op '" + o + "'");
      s.ops.push_back(op->id);
    }
  }
  if (s.quick && s.full)
    throw Error("--quick and --full: one or the other\n" + std::string(kUsage));
  if (!dtypes.empty()) {
    s.dtypes.clear();
    for (const auto& d : split(dtypes)) s.dtypes.push_back(parse_dtype(d));
  }
  // The short report times f32 and bf16 (f16 runs the same kernels with
  // another conversion: the cliffs table still has its ratio to f32).
  s.throughput_dtypes = s.dtypes;
  if (dtypes.empty() && !s.full && !s.quick)
    s.throughput_dtypes = {DType::f32, DType::bf16};
  if (!forms.empty()) {
    s.throughput_forms.clear();
    for (const auto& f : split(forms)) s.throughput_forms.push_back(parse_approx(f));
  }
  s.sizes = s.quick  ? std::vector<int64_t>{4096, 1 << 18, 1 << 20}
            : s.full ? std::vector<int64_t>{4096, 1 << 18, 1 << 22, 1 << 25}
                     : std::vector<int64_t>{4096, 1 << 18, 1 << 22};
  if (!sizes.empty()) {
    s.sizes.clear();
    for (const auto& z : split(sizes)) s.sizes.push_back(parse_size(z));
  }
  const int all = default_num_threads();
  s.threads = {1, all};
  if (!threads.empty()) {
    s.threads.clear();
    for (const auto& t : split(threads))
      s.threads.push_back(t == "all" ? all : std::stoi(t));
  }
  std::sort(s.threads.begin(), s.threads.end());
  s.threads.erase(std::unique(s.threads.begin(), s.threads.end()), s.threads.end());
  s.f32_points = !points.empty() ? std::stoll(points)
                 : s.quick       ? 1 << 12
                 : s.full        ? 1 << 16
                                 : 1 << 14;

  const double start = now_ns();
  progress_start();
  Report r;
  r.command = "gelu-fusion report";
  for (const auto& a : args) r.command += " " + a;
  r.depth = s.quick ? "quick" : s.full ? "full" : "short";
  r.kind =
      s.full ? "Full report (`gelu-fusion report --full`, or `make run ARGS=--full`). "
               "The default, `gelu-fusion report` (`make run`), is a short one."
      : s.quick ? "Quick report (`--quick`): a smoke run, few points and rounds. The "
                  "default is `gelu-fusion report` (`make run`); the complete one "
                  "`gelu-fusion report --full` (`make run ARGS=--full`)."
                : "Short report (the default): sizes up to 4M, f32 and bf16 "
                  "throughput, fewer rounds and accuracy points. The complete one: "
                  "`gelu-fusion report --full` (or `make run ARGS=--full`).";
  progress("%s\n", r.kind.c_str());
  r.machine = machine_facts();
  r.machine.push_back({"oneDNN", s.peers ? onednn::version() : "skipped (--no-peers)"});
  r.rules = timing_rules(s);
  fs::create_directories(out_dir);
  TorchPeer torch((out_dir / "torch-jobs").string());

  const auto pending = run_accuracy(s, &torch, r);
  run_throughput(s, &torch, r);
  run_input_scales(s, &torch, r);
  run_shapes(s, &torch, r);
  run_cliffs(s, r);
  if (s.peers) r.simd_targets = run_simd_targets();
  run_overhead(s, &torch, r);
  if (s.peers) {
    progress(
        "[4/4] PyTorch: %d throughput cases in python "
        "(estimate %.0f s)\n",
        torch.throughput_jobs(), 5 + 0.4 * torch.throughput_jobs());
    torch.run();
    r.machine.push_back({"PyTorch", torch.note().empty()
                                        ? torch.version() + " (python subprocess)"
                                        : torch.note()});
  } else {
    r.machine.push_back({"PyTorch", "skipped (--no-peers)"});
  }
  fill_torch(s, torch, pending, r);
  fs::remove_all(out_dir / "torch-jobs");
  if (s.peers)
    r.model_block = run_model_block(!s.full, (out_dir / "model_block.md").string());

  // JSON first: the chart is drawn from it.
  const fs::path json_file = json_path.empty() ? out_dir / "report.json"
                                               : fs::path(json_path);
  r.seconds = (now_ns() - start) * 1e-9;
  auto write = [](const fs::path& p, const std::string& text) {
    std::ofstream f(p);
    f << text;
    if (!f) throw Error("cannot write " + p.string());
  };
  write(json_file, json(r));
  progress("chart (report_chart.py)\n");
  const fs::path png = out_dir / "report.png";
  fs::remove(png);
  const char* py = std::getenv("GELU_PYTHON");
  const std::string chart_cmd = "'" +
                                std::string(py && *py ? py : GELU_PYTHON_DEFAULT) +
                                "' '" + report_script("report_chart.py") + "' '" +
                                json_file.string() + "' '" + png.string() + "'";
  std::fflush(stdout);
  if (std::system(chart_cmd.c_str()) == 0 && fs::exists(png)) {
    r.chart = "report.png";
    r.chart_note =
        "GB/s of compulsory traffic against size, f32, one panel per op "
        "(rows: op families; columns: forward, backward); solid lines 1 "
        "thread, dashed all threads; the grey line is the copy (the roofline).";
  } else {
    r.chart_note = "No chart: the chart script failed or matplotlib is missing.";
  }
  r.seconds = (now_ns() - start) * 1e-9;
  write(json_file, json(r));
  write(out_dir / "report.md", markdown(r));

  std::printf("%s\n\n%s\n%s\n%s\n%s\n%s\n%s\n%s\n", r.kind.c_str(),
              machine_section(r).c_str(), accuracy_section(r).c_str(),
              throughput_section(r).c_str(), cliffs_section(r).c_str(),
              simd_targets_section(r).c_str(), overhead_section(r).c_str(),
              model_block_section(r).c_str());
  std::printf("Wrote %s, %s%s (%.0f s)\n", (out_dir / "report.md").c_str(),
              json_file.c_str(), r.chart.empty() ? "" : (", " + png.string()).c_str(),
              r.seconds);
  return 0;
}

}  // namespace
}  // namespace gelu::report

namespace {
int report_command(const std::vector<std::string>& args) {
  return gelu::report::run_report(args);
}
}  // namespace

GELU_COMMAND("report",
             "accuracy, throughput vs copy/oneDNN/PyTorch, chart (build/report)",
             report_command);
