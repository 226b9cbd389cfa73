#include "report_timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstring>

namespace gelu::report {

double now_ns() {
  using clock = std::chrono::steady_clock;
  return std::chrono::duration<double, std::nano>(clock::now().time_since_epoch())
      .count();
}

Stat summarize(std::vector<double> s) {
  Stat r;
  if (s.empty()) return r;
  std::sort(s.begin(), s.end());
  const size_t m = s.size();
  r.median = m % 2 ? s[m / 2] : 0.5 * (s[m / 2 - 1] + s[m / 2]);
  r.min = s.front();
  r.max = s.back();
  r.rounds = static_cast<int>(m);
  return r;
}

namespace {
double g_progress_start = 0;
}  // namespace

void progress_start() { g_progress_start = now_ns(); }

void progress(const char* fmt, ...) {
  std::fprintf(stderr, "report: [%4.0f s] ", (now_ns() - g_progress_start) * 1e-9);
  va_list args;
  va_start(args, fmt);
  std::vfprintf(stderr, fmt, args);
  va_end(args);
}

namespace {
double sample(const std::function<void()>& fn, int reps) {
  const double t0 = now_ns();
  for (int i = 0; i < reps; ++i) fn();
  return (now_ns() - t0) / reps;
}
}  // namespace

std::vector<Stat> time_interleaved(const std::vector<std::function<void()>>& fns,
                                   const TimingPolicy& p) {
  const size_t k = fns.size();
  std::vector<int> reps(k, 1);
  double slowest = 0;
  for (size_t i = 0; i < k; ++i) {
    // Warm-up (code, pages, caches); a long call is its own warm-up before
    // the calibrating one.
    const double first = sample(fns[i], 1);
    if (first < 20e6) fns[i]();
    const double once = std::max(1.0, first < 20e6 ? sample(fns[i], 1) : first);
    slowest = std::max(slowest, once);
    reps[i] = static_cast<int>(std::clamp(std::ceil(p.min_sample_ns / once), 1.0, 1e6));
  }
  std::vector<std::vector<double>> samples(k);
  const double start = now_ns();
  const int max_rounds = slowest > kSlowCallNs ? 1 : p.max_rounds;
  for (int round = 0; round < max_rounds; ++round) {
    if (round >= p.min_rounds && now_ns() - start > p.budget_ns) break;
    for (size_t i = 0; i < k; ++i) samples[i].push_back(sample(fns[i], reps[i]));
  }
  std::vector<Stat> out;
  for (auto& s : samples) out.push_back(summarize(std::move(s)));
  return out;
}

Stat time_alone(const std::function<void()>& fn, int reps, int rounds) {
  for (int i = 0; i < reps; ++i) fn();
  std::vector<double> s;
  for (int r = 0; r < rounds; ++r) s.push_back(sample(fn, reps));
  return summarize(std::move(s));
}

void parallel_copy(void* dst, const void* src, int64_t bytes, int threads) {
  // A thread takes >= 256 KiB: below, a fork/join (~3 us, `gelu_bench
  // --benchmark_filter=threads`) costs more than a second core brings, and
  // the copy is meant as the machine's best.
  threads = static_cast<int>(std::min<int64_t>(threads, bytes >> 18));
  if (threads <= 1) {
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    return;
  }
  const int64_t chunk = (bytes / threads + 63) / 64 * 64;
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int t = 0; t < threads; ++t) {
    const int64_t b0 = std::min<int64_t>(bytes, t * chunk);
    const int64_t b1 = std::min<int64_t>(bytes, b0 + chunk);
    std::memcpy(static_cast<char*>(dst) + b0, static_cast<const char*>(src) + b0,
                static_cast<size_t>(b1 - b0));
  }
}

}  // namespace gelu::report
