// Renders the report: tables for the terminal and report.md (one pipe-table
// renderer for both), and report.json for the chart and for tooling.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "report_common.hpp"

namespace gelu::report {

struct Report {
  std::string command;
  std::string depth;  // "short" (the default), "full" or "quick"
  std::string kind;   // a sentence: which report this is, how to get the other
  std::vector<std::pair<std::string, std::string>> machine;
  std::vector<std::string> rules;  // timing rules, one sentence each
  std::vector<AccuracyRow> accuracy;
  std::vector<ThroughputRow> throughput;
  std::vector<CliffRow> cliffs;
  std::vector<OverheadRow> overhead;
  std::string chart;  // file name of the PNG beside report.md, or ""
  std::string chart_note;
  // The model-block section as markdown (report_model_block.py), or "".
  std::string model_block;
  // The SIMD-targets section as markdown (report_simd_targets.cpp), or "".
  std::string simd_targets;
  double seconds = 0;
};

// Sections as markdown (header line + pipe table).
std::string machine_section(const Report&);
std::string accuracy_section(const Report&);
std::string throughput_section(const Report&);
std::string cliffs_section(const Report&);
std::string overhead_section(const Report&);
std::string model_block_section(const Report&);
std::string simd_targets_section(const Report&);
std::string markdown(const Report&);
std::string json(const Report&);

}  // namespace gelu::report
