// The measuring sections of the report, in the order they run: accuracy,
// throughput and per-call overhead (ours and oneDNN in this process; PyTorch
// jobs queued on the TorchPeer), then the PyTorch figures filled in after the
// script has run.
#pragma once

#include <cstdint>
#include <vector>

#include "report_output.hpp"
#include "report_torch.hpp"

namespace gelu::report {

struct Case;  // report_case.hpp

struct Settings {
  std::vector<OpId> ops;
  std::vector<DType> dtypes;             // accuracy
  std::vector<DType> throughput_dtypes;  // the size sweep
  std::vector<Approx> accuracy_forms;    // all three by default
  std::vector<Approx> throughput_forms;  // none (erf) by default
  std::vector<int64_t> sizes;
  std::vector<int> threads;
  bool peers = true;
  // Three depths: --quick (a smoke run), the short default, --full.
  bool quick = false;
  bool full = false;
  int64_t f32_points = 1 << 16;  // per region
  // Fewer timing rounds and a smaller time budget per case (policy_for):
  // all but the full report.
  bool few_rounds() const { return quick || !full; }
};

// Rounds and time budget for a size (fewer rounds where a call is long).
TimingPolicy policy_for(int64_t n, bool quick);

struct PendingTorchAccuracy {
  size_t row;
  int id;
};

// Each section appends to the report and prints one progress line (with an
// estimate) on stderr.
std::vector<PendingTorchAccuracy> run_accuracy(const Settings&, TorchPeer*, Report&);
void run_throughput(const Settings&, TorchPeer*, Report&);
// One throughput row of case c (op, dtype t, its shape, `bytes` of traffic)
// timed in interleaved rounds of ours, oneDNN and a copy of bytes / 2
// (src, dst: buffers of that size); PyTorch's job queued on torch. The
// caller sets the row's table and pushes it.
ThroughputRow time_throughput_row(const Settings&, TorchPeer*, Case& c, OpId op,
                                  DType t, int64_t bytes, Buffer& src, Buffer& dst,
                                  Approx form, int threads);
void run_overhead(const Settings&, TorchPeer*, Report&);
// Once the script has run: PyTorch's rows and columns.
void fill_torch(const Settings&, const TorchPeer&,
                const std::vector<PendingTorchAccuracy>&, Report&);

}  // namespace gelu::report
