// PyTorch as a peer, measured by report_torch.py (beside this file) in a
// subprocess of the project's python (GELU_PYTHON_DEFAULT: CMake's
// GELU_PYTHON, the venv with the pinned torch; the GELU_PYTHON environment
// variable overrides). Jobs are queued, the script runs once after our own
// sections (never at the same time), and results are read back: accuracy
// outputs as raw files measured here against the reference, times as medians
// that the script measured with its own interleaving against a copy inside
// python.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "report_case.hpp"
#include "report_timing.hpp"

namespace gelu::report {

class TorchPeer {
 public:
  explicit TorchPeer(std::string work_dir);

  // Writes the case's inputs for the script; returns the job id.
  int add_accuracy(const Case& c, Approx form);
  // `scale`: the inputs of an input-scale row (report_scales.hpp), or null
  // for the default inputs (x ~ N(0, 1), b in [-0.5, 0.5)).
  void add_throughput(OpId, Approx, DType, Shape, int threads, int64_t copy_bytes,
                      const TimingPolicy&, const InputScale* scale = nullptr);
  void add_overhead();
  int throughput_jobs() const { return tp_jobs_; }

  // Runs the script on the queued jobs. False (with note()) when python or
  // torch is missing or the script failed; every figure is then absent.
  bool run();
  const std::string& note() const { return note_; }
  const std::string& version() const { return version_; }

  // Reads job `id`'s output into c.out; false with *why when PyTorch has no
  // figure for it.
  bool accuracy_output(int id, Case& c, std::string* why) const;
  // The row's figures, by its op, form, dtype, size, threads, last
  // dimension and inputs (ThroughputRow::cols, ::inputs).
  PeerTime throughput(const ThroughputRow&) const;
  std::optional<double> overhead_ns() const { return overhead_; }
  // F.gelu(x) and gelu_fusion.gelu(x) from python on 1 element, timed in the
  // same rounds; absent with py_overhead_note() when the adapter is missing.
  std::optional<double> f_gelu_ns() const { return f_gelu_; }
  std::optional<double> ours_gelu_ns() const { return ours_gelu_; }
  const std::string& py_overhead_note() const {
    return py_overhead_note_.empty() ? note_ : py_overhead_note_;
  }

 private:
  std::string dir_, note_ = "not run", version_;
  std::vector<std::string> request_;
  int next_id_ = 0, tp_jobs_ = 0;
  std::map<int, std::string> acc_;  // id -> "" (ok) or the reason
  std::map<std::tuple<std::string, std::string, std::string, int64_t, int, int64_t,
                      std::string>,
           PeerTime>
      tp_;
  std::optional<double> overhead_, f_gelu_, ours_gelu_;
  std::string py_overhead_note_;
};

}  // namespace gelu::report
