// Shared vocabulary of the report (cmd_report.cpp and report_*.cpp):
// the op list it measures (the op table), the shapes, typed buffers, and the
// result records that the tables, the JSON and the chart are written from.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/op_table.hpp"
#include "gelu/gelu.hpp"
#include "ref/elements.hpp"

namespace gelu::report {

// The ops the report measures: every op of the table (core::all_ops), with
// their names, families and tensors from there.
using core::op_decl;
using core::OpId;

// The shape a size is run at: n GELU evaluations as rows x cols (cols =
// 4096, a transformer hidden size, when it divides n; else one row).
struct Shape {
  int64_t rows, cols;
  int64_t n() const { return rows * cols; }
};
Shape shape_for(int64_t n);
// Bytes the op must move at this shape (inputs once, outputs once; dbias
// in f32): the sum of its tensors' sizes (report_case.hpp).
int64_t traffic_bytes(OpId, DType, Shape);

// The path of one of the report's python parts (report_chart.py,
// report_torch.py): they sit beside its sources, in GELU_REPORT_DIR (set at
// compile time; the environment variable of that name overrides it).
std::string report_script(const std::string& name);

// A 64-byte aligned, zero-initialised (first-touched) byte buffer.
class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(int64_t bytes);
  void* data() { return p_.get(); }
  const void* data() const { return p_.get(); }
  int64_t bytes() const { return bytes_; }

 private:
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> p_;
  int64_t bytes_ = 0;
};

// Element i of a dtype buffer as float, and back (round to nearest even).
using ref::load;
using ref::store;
// Fills n elements with uniform values in [lo, hi), deterministically.
void fill_uniform(DType, void* p, int64_t n, float lo, float hi, uint64_t seed);
// n values drawn from N(0, sigma^2), rounded to the dtype.
void fill_normal(DType, void* p, int64_t n, float sigma, uint64_t seed);

// The input scales the report times side by side (report_scales.hpp): the
// pre-activation x ~ N(0, sigma^2) with a N(0, 1) bias/addend, or, with
// sigma 0, the tail only: every pre-activation (x, or x + b) in
// [kTailLo, kTailHi], below the GELU math's tail threshold on every target
// for erf and tanh (-3.875; -4 on AVX2; -5.89 and -4.91 with AVX-512's
// f32 core), where the exact (exp) path runs. Quick's AVX-512 core reaches
// -9.82, so there its range is mostly core lanes.
struct InputScale {
  const char* name;  // "N(0,2)", "tail": the rows' label
  float sigma;       // 0: tail-only
};
inline constexpr float kTailLo = -10.f, kTailHi = -6.f;
inline constexpr InputScale kInputScales[] = {
    {"N(0,1)", 1.f}, {"N(0,2)", 2.f}, {"N(0,3)", 3.f}, {"tail", 0.f}};

// --- results -----------------------------------------------------------------
struct RegionError {
  double max_ulp = 0, max_rel = 0;
  double worst_x = 0;  // the input (pre-activation) of the worst ULP
  int64_t points = 0;
};
struct AccuracyRow {
  OpId op;
  Approx form;
  DType dtype;
  std::string impl;                  // "ours", "oneDNN", "PyTorch"
  std::string note;                  // why a peer has no figure ("" when it has one)
  std::vector<RegionError> regions;  // one per kRegions entry
};

struct Stat {  // nanoseconds per call over the rounds
  double median = 0, min = 0, max = 0;
  int rounds = 0;
};
struct PeerTime {
  std::optional<Stat> t;     // absent: see note
  std::optional<Stat> copy;  // the peer's own copy (PyTorch: inside python)
  // Ours, timed in the peer's own rounds (PyTorch: through the adapter's
  // out= overloads); when present the ratio is taken against this.
  std::optional<Stat> ours;
  std::string note;
};
struct ThroughputRow {
  OpId op;
  Approx form;
  DType dtype;
  int64_t n;
  int threads;
  int64_t bytes;
  Stat ours, copy;
  PeerTime onednn, torch;
  // Which table the row belongs to: "sweep" (sizes x dtypes, default
  // inputs), "scales" (input scales) or "shapes" (narrow and wide rows).
  std::string table = "sweep";
  std::string inputs = "default";  // an InputScale's name, or "default"
  int64_t cols = 0;                // the last dimension (per half for geglu)
};
// A ratio of elements/s, variant over baseline, timed in the same rounds.
struct CliffRow {
  std::string what;  // "bf16 vs f32 elements/s", ...
  OpId op;
  Approx form;
  int64_t n;
  int threads;
  Stat baseline, variant;
  double target;  // the ratio the kernels aim for (report_cliffs.cpp)
  double ratio() const { return baseline.median / variant.median; }
};

struct OverheadRow {
  std::string impl, what;
  std::optional<double> ns;
  std::string note;
};

}  // namespace gelu::report
