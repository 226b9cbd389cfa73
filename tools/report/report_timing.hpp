// Interleaved timing: every contender runs once per round, in a fixed order
// (ours, peer, copy, ours, ...), so drift of clock, heat and neighbours hits
// all alike; each reports the median over rounds with the min-max spread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "report_common.hpp"

namespace gelu::report {

struct TimingPolicy {
  double min_sample_ns = 100e3;  // a sample repeats the call to last this long
  int min_rounds = 5;
  int max_rounds = 41;
  double budget_ns = 300e6;  // stop adding rounds past this (after min_rounds)
};

// A contender whose single call takes longer than this is timed in one
// round (so are the others of its case): keeps the default run bounded.
inline constexpr double kSlowCallNs = 0.5e9;

// Warms every contender up, calibrates its repetitions, then runs rounds.
// Returns one Stat per contender in nanoseconds per call.
std::vector<Stat> time_interleaved(const std::vector<std::function<void()>>& fns,
                                   const TimingPolicy& policy);

// Nanoseconds per call of one contender alone: the median of `rounds`
// samples of `reps` calls (per-call overhead on a tiny call).
Stat time_alone(const std::function<void()>& fn, int reps, int rounds);

// memcpy of `bytes` split over up to `threads` OpenMP threads (each >= 256 KiB): the
// machine's reachable bandwidth for the same traffic, measured in the same run.
void parallel_copy(void* dst, const void* src, int64_t bytes, int threads);

double now_ns();
Stat summarize(std::vector<double> samples);

// A progress line on stderr, "report: [  12 s] " and the printf-formatted
// message: seconds since the report began (progress_start).
void progress_start();
[[gnu::format(printf, 1, 2)]] void progress(const char* fmt, ...);

}  // namespace gelu::report
