#include "report_output.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "report_accuracy.hpp"

namespace gelu::report {
namespace {

using Row = std::vector<std::string>;

// A pipe table with padded columns: valid markdown, readable in a terminal.
std::string table(const Row& head, const std::vector<Row>& rows) {
  std::vector<size_t> w(head.size());
  for (size_t i = 0; i < head.size(); ++i) w[i] = head[i].size();
  for (const Row& r : rows)
    for (size_t i = 0; i < r.size() && i < w.size(); ++i)
      w[i] = std::max(w[i], r[i].size());
  auto line = [&](const Row& r) {
    std::string s = "|";
    for (size_t i = 0; i < w.size(); ++i) {
      const std::string c = i < r.size() ? r[i] : "";
      s += " " + c + std::string(w[i] - c.size(), ' ') + " |";
    }
    return s + "\n";
  };
  std::string s = line(head) + "|";
  for (size_t i = 0; i < w.size(); ++i) s += std::string(w[i] + 2, '-') + "|";
  s += "\n";
  for (const Row& r : rows) s += line(r);
  return s;
}

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string size_name(int64_t n) {
  if (n >= (1 << 20) && n % (1 << 20) == 0) return std::to_string(n >> 20) + "M";
  if (n >= (1 << 10) && n % (1 << 10) == 0) return std::to_string(n >> 10) + "K";
  return std::to_string(n);
}

std::string ulp_cell(const RegionError& e) {
  if (e.points == 0) return "-";
  const std::string u = std::isinf(e.max_ulp)
                            ? "inf"
                            : fmt(e.max_ulp < 100 ? "%.2f" : "%.3g", e.max_ulp);
  return u + " / " + fmt("%.1e", e.max_rel);
}

// "x1.85": the peer's median time over ours (above 1: we are faster).
// Against ours timed in the peer's own rounds when there is such a figure.
std::string ratio(const PeerTime& p, const Stat& ours) {
  if (!p.t) return p.note.empty() ? "-" : p.note;
  return fmt("x%.2f", p.t->median / (p.ours ? *p.ours : ours).median);
}

std::string jstr(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) r += c;
  }
  return r + "\"";
}
std::string jnum(double v) {
  return std::isfinite(v) ? fmt("%.6g", v) : std::string("null");
}
std::string jstat(const Stat& s) {
  return "{\"median_ns\": " + jnum(s.median) + ", \"min_ns\": " + jnum(s.min) +
         ", \"max_ns\": " + jnum(s.max) + ", \"rounds\": " + std::to_string(s.rounds) +
         "}";
}
std::string jpeer(const PeerTime& p) {
  std::string s = "{\"note\": " + jstr(p.note);
  if (p.t) s += ", \"time\": " + jstat(*p.t);
  if (p.copy) s += ", \"copy\": " + jstat(*p.copy);
  if (p.ours) s += ", \"ours_same_rounds\": " + jstat(*p.ours);
  return s + "}";
}

}  // namespace

std::string machine_section(const Report& r) {
  std::vector<Row> rows;
  for (const auto& [k, v] : r.machine) rows.push_back({k, v});
  return "## Machine\n\n" + table({"", ""}, rows);
}

std::string accuracy_section(const Report& r) {
  Row head{"op", "form", "dtype", "impl"};
  for (const Region& g : kRegions) head.push_back(g.name);
  std::vector<Row> rows;
  for (const AccuracyRow& a : r.accuracy) {
    Row row{op_decl(a.op).name, approx_name(a.form), dtype_name(a.dtype), a.impl};
    for (int g = 0; g < kNumRegions; ++g)
      row.push_back(a.note.empty() ? ulp_cell(a.regions[g]) : (g ? "" : a.note));
    rows.push_back(row);
  }
  return "## Accuracy: max ULP / max relative error against the double reference\n\n"
         "Forward ops: ULP of the output format at the exact value. Backward ops: "
         "ULP of |dy|(|t1| + |t2|), the two terms of gelu' (the accuracy "
         "contract's measure; a relative error is meaningless at the "
         "derivative's root x = -0.7518, and the relative column shows why). "
         "Fused ops are evaluated at the f32 sum x + b, the point every f32 "
         "kernel computes at (PyTorch's composition rounds the sum to the "
         "dtype first). f32: evenly spaced bit patterns per region; bf16/f16: "
         "every value. Relative error counts only exact values in the format's normal "
         "range. "
         "bias_gelu_backward: dx only (dbias is checked by the unit tests); "
         "geglu_backward: both halves of dx.\n\n" +
         table(head, rows);
}

std::string throughput_section(const Report& r) {
  // One table per ThroughputRow::table; scales and shapes add the column
  // that tells their rows apart.
  auto rows_of = [&](const std::string& which, const char* extra) {
    Row head{"op", "form", "dtype", "size", "thr"};
    if (extra) head.push_back(extra);
    for (const char* h :
         {"ns/elem median [min-max]", "GB/s", "% of copy", "vs oneDNN", "vs PyTorch"})
      head.push_back(h);
    std::vector<Row> rows;
    for (const ThroughputRow& t : r.throughput) {
      if (t.table != which) continue;
      const double n = static_cast<double>(t.n);
      Row row{op_decl(t.op).name, approx_name(t.form), dtype_name(t.dtype),
              size_name(t.n), std::to_string(t.threads)};
      if (which == "scales") row.push_back(t.inputs);
      if (which == "shapes")
        // Appended, not "[" + std::to_string(...): GCC 12's -Wrestrict false
        // positive on a literal + std::string&&.
        row.push_back(std::string("[")
                          .append(std::to_string(t.n / t.cols))
                          .append(", ")
                          .append(std::to_string(t.cols))
                          .append("]"));
      for (std::string c :
           {fmt("%.3f", t.ours.median / n) + " [" + fmt("%.3f", t.ours.min / n) + "-" +
                fmt("%.3f", t.ours.max / n) + "]",
            fmt("%.1f", t.bytes / t.ours.median),
            fmt("%.0f%%", 100 * t.copy.median / t.ours.median), ratio(t.onednn, t.ours),
            ratio(t.torch, t.ours)})
        row.push_back(c);
      rows.push_back(row);
    }
    return rows.empty() ? std::string() : table(head, rows);
  };
  std::string s =
      "## Throughput\n\nns/elem: per GELU evaluation. GB/s: compulsory "
      "traffic (each input read once, each output written once) over the "
      "median time. % of copy: a memcpy of the same traffic, same threads, "
      "measured in the same rounds. vs X: X's median time over ours (x2.00 = "
      "we take half the time). oneDNN: eltwise GELU (bias/add: binary add with "
      "a GELU post-op); PyTorch: the unfused composition a user writes, timed "
      "in python in the same rounds as ours called through the PyTorch "
      "adapter (see rules).\n\n" +
      rows_of("sweep", nullptr);
  const std::string scales = rows_of("scales", "x");
  if (!scales.empty())
    s += "\n### Input scales\n\nx ~ N(0, 1), N(0, 2), N(0, 3) with a N(0, 1) "
         "bias, and tail-only (every pre-activation in [-10, -6]: where the "
         "exact tail path runs on every target for erf and tanh; bias ops: x in "
         "[-9, -7], bias in [-1, 1)); "
         "f32. Every scale of an op, size and thread count ran in the same "
         "interleaved rounds (ours and oneDNN on each, then the copy): the "
         "kernel cliffs section gives each scale's elements/s over N(0, 1)'s. "
         "PyTorch draws the same distributions in python.\n\n" +
         scales;
  const std::string shapes = rows_of("shapes", "shape");
  if (!shapes.empty())
    s += "\n### Shapes: narrow and wide rows\n\nThe row ops with a last "
         "dimension of 8 and of 65536 (geglu: of each half), default inputs, "
         "f32; compare ns/elem with gelu's and gelu_backward's at the same size "
         "above.\n\n" +
         shapes;
  return s;
}

std::string cliffs_section(const Report& r) {
  std::vector<Row> rows;
  for (const CliffRow& c : r.cliffs)
    rows.push_back(
        {c.what, op_decl(c.op).name, approx_name(c.form), size_name(c.n),
         std::to_string(c.threads), fmt("%.3f", c.baseline.median / c.n),
         fmt("%.3f", c.variant.median / c.n), fmt("x%.2f", c.ratio()),
         fmt(">= %.1f", c.target) + (c.ratio() >= c.target ? " met" : " MISSED")});
  return "## Kernel cliffs: storage dtypes and input scales\n\n"
         "Elements/s of the variant over the baseline, both timed in the same "
         "interleaved rounds (medians). Storage: bf16/f16 over f32 at the largest "
         "size (they move half the bytes). Input scales: x ~ N(0, 2), N(0, 3) and "
         "tail-only (every pre-activation in [-10, -6], taken by the exact tail "
         "path; quick's AVX-512 core reaches -9.82) over x ~ N(0, 1), bias ~ N(0, 1), "
         "f32, at 256K (in "
         "cache: the "
         "arithmetic alone) and at the largest size; the throughput section's "
         "form from its input-scale rounds (every op and thread count there), the "
         "other forms for gelu and gelu_backward on 1 thread. Targets: 0.7 for "
         "N(0, 2) and N(0, 3) (tanh 0.6), 0.5 for tail-only.\n\n" +
         table({"ratio", "op", "form", "size", "thr", "baseline ns/elem",
                "variant ns/elem", "ratio", "target"},
               rows);
}

std::string overhead_section(const Report& r) {
  std::vector<Row> rows;
  for (const OverheadRow& o : r.overhead)
    rows.push_back({o.impl, o.what, o.ns ? fmt("%.0f", *o.ns) : o.note});
  return "## Per-call overhead (a 1-element call, 1 thread)\n\n" +
         table({"impl", "call", "ns per call"}, rows);
}

std::string model_block_section(const Report& r) {
  return r.model_block.empty()
             ? "## Model block\n\nNot measured (--no-peers, or no python).\n"
             : r.model_block;
}

std::string simd_targets_section(const Report& r) {
  return r.simd_targets.empty() ? "## SIMD targets\n\nNot measured (--no-peers).\n"
                                : r.simd_targets;
}

std::string markdown(const Report& r) {
  std::string s = "# gelu-fusion report\n\n" + r.kind + "\n\n`" + r.command + "` (" +
                  fmt("%.0f", r.seconds) + " s)\n\n## Timing rules\n\n";
  for (const auto& rule : r.rules) s += "- " + rule + "\n";
  // Not "\n" + machine_section(r): GCC 12 warns (-Wrestrict, a false positive)
  // on a literal + std::string&& it inlines.
  s += '\n';
  s += machine_section(r) + "\n" + accuracy_section(r) + "\n" + throughput_section(r) +
       "\n" + cliffs_section(r) + "\n" + simd_targets_section(r) + "\n" +
       overhead_section(r) + "\n" + model_block_section(r) + "\n## Chart\n\n";
  s += r.chart.empty()
           ? r.chart_note + "\n"
           : "![GB/s against size](" + r.chart + ")\n\n" + r.chart_note + "\n";
  return s;
}

std::string json(const Report& r) {
  std::ostringstream o;
  o << "{\n\"command\": " << jstr(r.command) << ",\n\"depth\": " << jstr(r.depth)
    << ",\n\"kind\": " << jstr(r.kind) << ",\n\"seconds\": " << jnum(r.seconds)
    << ",\n\"machine\": {";
  for (size_t i = 0; i < r.machine.size(); ++i)
    o << (i ? ", " : "") << jstr(r.machine[i].first) << ": "
      << jstr(r.machine[i].second);
  o << "},\n\"rules\": [";
  for (size_t i = 0; i < r.rules.size(); ++i) o << (i ? ", " : "") << jstr(r.rules[i]);
  o << "],\n\"regions\": [";
  for (int g = 0; g < kNumRegions; ++g)
    o << (g ? ", " : "") << "{\"name\": " << jstr(kRegions[g].name)
      << ", \"lo\": " << kRegions[g].lo << ", \"hi\": " << kRegions[g].hi << "}";
  o << "],\n\"accuracy\": [";
  for (size_t i = 0; i < r.accuracy.size(); ++i) {
    const AccuracyRow& a = r.accuracy[i];
    o << (i ? ",\n" : "\n") << "{\"op\": " << jstr(op_decl(a.op).name)
      << ", \"form\": " << jstr(approx_name(a.form))
      << ", \"dtype\": " << jstr(dtype_name(a.dtype)) << ", \"impl\": " << jstr(a.impl)
      << ", \"note\": " << jstr(a.note) << ", \"regions\": [";
    for (size_t g = 0; g < a.regions.size(); ++g)
      o << (g ? ", " : "") << "{\"max_ulp\": " << jnum(a.regions[g].max_ulp)
        << ", \"max_rel\": " << jnum(a.regions[g].max_rel)
        << ", \"worst_x\": " << jnum(a.regions[g].worst_x)
        << ", \"points\": " << a.regions[g].points << "}";
    o << "]}";
  }
  o << "],\n\"throughput\": [";
  for (size_t i = 0; i < r.throughput.size(); ++i) {
    const ThroughputRow& t = r.throughput[i];
    o << (i ? ",\n" : "\n") << "{\"op\": " << jstr(op_decl(t.op).name)
      << ", \"family\": " << jstr(op_decl(t.op).family())
      << ", \"backward\": " << (op_decl(t.op).is_backward() ? "true" : "false")
      << ", \"form\": " << jstr(approx_name(t.form))
      << ", \"dtype\": " << jstr(dtype_name(t.dtype)) << ", \"n\": " << t.n
      << ", \"threads\": " << t.threads << ", \"bytes\": " << t.bytes
      << ", \"table\": " << jstr(t.table) << ", \"inputs\": " << jstr(t.inputs)
      << ", \"cols\": " << t.cols << ", \"ours\": " << jstat(t.ours)
      << ", \"copy\": " << jstat(t.copy) << ", \"onednn\": " << jpeer(t.onednn)
      << ", \"torch\": " << jpeer(t.torch) << "}";
  }
  o << "],\n\"cliffs\": [";
  for (size_t i = 0; i < r.cliffs.size(); ++i) {
    const CliffRow& c = r.cliffs[i];
    o << (i ? ", " : "") << "{\"ratio\": " << jstr(c.what)
      << ", \"op\": " << jstr(op_decl(c.op).name)
      << ", \"form\": " << jstr(approx_name(c.form)) << ", \"n\": " << c.n
      << ", \"threads\": " << c.threads
      << ", \"baseline_ns\": " << jnum(c.baseline.median)
      << ", \"variant_ns\": " << jnum(c.variant.median)
      << ", \"value\": " << jnum(c.ratio()) << ", \"target\": " << jnum(c.target)
      << "}";
  }
  o << "],\n\"overhead\": [";
  for (size_t i = 0; i < r.overhead.size(); ++i)
    o << (i ? ", " : "") << "{\"impl\": " << jstr(r.overhead[i].impl)
      << ", \"call\": " << jstr(r.overhead[i].what)
      << ", \"ns\": " << (r.overhead[i].ns ? jnum(*r.overhead[i].ns) : "null")
      << ", \"note\": " << jstr(r.overhead[i].note) << "}";
  o << "]\n}\n";
  return o.str();
}

}  // namespace gelu::report
