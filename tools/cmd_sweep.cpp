// `gelu-fusion sweep`: every one of the 2^32 f32 bit patterns through the
// f32 kernels (forward, and backward with dy = 1) of each form, measured
// against the double reference (src/ref) and reported as the worst ULP per
// input region. Runs on every core (OpenMP) with a progress line on stderr.
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <iterator>
#include <string>
#include <vector>

#include "command.hpp"
#include "cpu/kernels.hpp"
#include "gelu/gelu.hpp"
#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace {

using gelu::Approx;
using gelu::DType;

// Input regions, by value of x (NaN last).
struct Region {
  const char* name;
  double lo, hi;  // [lo, hi)
};
const Region kRegions[] = {
    {"-inf", -INFINITY, -3.4e38},     {"(-inf, -10]", -3.4e38, -10.0},
    {"(-10, -4]", -10.0, -4.0},       {"(-4, -1]", -4.0, -1.0},
    {"(-1, -2^-20]", -1.0, -0x1p-20}, {"|x| < 2^-20", -0x1p-20, 0x1p-20},
    {"[2^-20, 1)", 0x1p-20, 1.0},     {"[1, 4)", 1.0, 4.0},
    {"[4, 10)", 4.0, 10.0},           {"[10, inf)", 10.0, 3.5e38},
    {"+inf", 3.5e38, INFINITY},       {"NaN", NAN, NAN}};
constexpr int kNumRegions = sizeof(kRegions) / sizeof(kRegions[0]);

int region_of(float x) {
  if (std::isnan(x)) return kNumRegions - 1;
  if (x == -INFINITY) return 0;
  if (x == INFINITY) return kNumRegions - 2;
  const double v = x;
  if (v <= -10.0) return 1;
  if (v <= -4.0) return 2;
  if (v <= -1.0) return 3;
  if (v <= -0x1p-20) return 4;
  if (v < 0x1p-20) return 5;
  if (v < 1.0) return 6;
  if (v < 4.0) return 7;
  if (v < 10.0) return 8;
  return 9;
}

struct Worst {
  uint64_t count = 0;
  double fwd = 0, bwd = 0;
  float fwd_x = 0, bwd_x = 0;
  void merge(const Worst& o) {
    count += o.count;
    if (!(o.fwd <= fwd)) {
      fwd = o.fwd;
      fwd_x = o.fwd_x;
    }
    if (!(o.bwd <= bwd)) {
      bwd = o.bwd;
      bwd_x = o.bwd_x;
    }
  }
};

void sweep_form(Approx form, uint64_t step) {
  constexpr uint64_t kChunk = 1 << 16;
  const uint64_t total = uint64_t{1} << 32;
  const uint64_t chunks = total / kChunk;
  std::vector<Worst> worst(kNumRegions);
  std::atomic<uint64_t> done{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto secs = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  const int threads = omp_get_max_threads();
#pragma omp parallel num_threads(threads)
  {
    std::vector<Worst> mine(kNumRegions);
    std::vector<float> x(kChunk), y(kChunk), dx(kChunk), ones(kChunk, 1.0f);
    double last_print = 0;
#pragma omp for schedule(dynamic, 16)
    for (uint64_t c = 0; c < chunks; ++c) {
      int64_t n = 0;
      for (uint64_t k = 0; k < kChunk; k += step)
        x[n++] = gelu::f32_from_bits(static_cast<uint32_t>(c * kChunk + k));
      gelu::cpu::gelu_fwd(form, DType::f32, n, x.data(), y.data());
      gelu::cpu::gelu_bwd(form, DType::f32, n, ones.data(), x.data(), dx.data());
      for (int64_t i = 0; i < n; ++i) {
        Worst& w = mine[region_of(x[i])];
        ++w.count;
        const double ef = gelu::ref::ulp_error(DType::f32, y[i],
                                               gelu::ref::gelu_fwd(form, x[i]));
        if (!(ef <= w.fwd)) {
          w.fwd = ef;
          w.fwd_x = x[i];
        }
        const auto t = gelu::ref::gelu_bwd_terms(form, x[i]);
        const double eb = gelu::ref::scaled_ulp_error(
            DType::f32, dx[i], t.t1 + t.t2, std::fabs(t.t1) + std::fabs(t.t2));
        if (!(eb <= w.bwd)) {
          w.bwd = eb;
          w.bwd_x = x[i];
        }
      }
      const uint64_t d = done.fetch_add(1) + 1;
      if (omp_get_thread_num() == 0 && secs() - last_print > 1.0) {
        last_print = secs();
        const double frac = double(d) / double(chunks);
        std::fprintf(stderr, "\rsweep %s: %5.1f%%  %.0f s elapsed, ~%.0f s left   ",
                     gelu::approx_name(form), 100 * frac, last_print,
                     last_print / frac * (1 - frac));
      }
    }
#pragma omp critical
    for (int r = 0; r < kNumRegions; ++r) worst[r].merge(mine[r]);
  }
  std::fprintf(stderr, "\r%70s\r", "");
  std::printf("\nform %s (%s), %s, %d threads, %.1f s%s\n", gelu::approx_name(form),
              gelu::cpu::target_name(), step == 1 ? "all 2^32 f32 patterns" : "sampled",
              threads, secs(), step == 1 ? "" : " (--step > 1: not exhaustive)");
  std::printf("%-14s %12s  %10s %-15s  %10s %-15s\n", "region", "inputs", "fwd ulp",
              "(at x)", "bwd ulp", "(at x)");
  Worst all;
  for (int r = 0; r < kNumRegions; ++r) {
    const Worst& w = worst[r];
    all.merge(w);
    std::printf("%-14s %12llu  %10.3f %-15.9g  %10.3f %-15.9g\n", kRegions[r].name,
                static_cast<unsigned long long>(w.count), w.fwd, w.fwd_x, w.bwd,
                w.bwd_x);
  }
  std::printf("%-14s %12llu  %10.3f %-15.9g  %10.3f %-15.9g\n", "all",
              static_cast<unsigned long long>(all.count), all.fwd, all.fwd_x, all.bwd,
              all.bwd_x);
  std::fflush(stdout);
}

int run_sweep(const std::vector<std::string>& args) {
  std::vector<Approx> forms;
  uint64_t step = 1;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if ((a == "--form" || a == "--approximate") && i + 1 < args.size()) {
      const std::string f = args[++i];
      if (f == "all")
        forms.assign(std::begin(gelu::kAllForms), std::end(gelu::kAllForms));
      else forms.push_back(gelu::parse_approx(f));
    } else if (a == "--step" && i + 1 < args.size()) {
      step = std::stoull(args[++i]);
      if (step == 0 || (step & (step - 1)) || step > (1 << 16))
        throw gelu::Error("--step must be a power of two <= 65536");
    } else if (a == "-h" || a == "--help") {
      std::printf(
          "usage: gelu-fusion sweep [--form none|tanh|quick|all] [--step 2^k]\n"
          "Every f32 bit pattern through the f32 kernels of a form (forward, and\n"
          "backward with dy = 1) against the double reference; prints the worst\n"
          "ULP per input region (backward: in ULPs of |t1| + |t2|). --step samples\n"
          "every step-th pattern for a quick look. Uses every core.\n");
      return 0;
    } else {
      throw gelu::Error("unknown argument '" + a + "' (see --help)");
    }
  }
  if (forms.empty()) forms = {Approx::none};
  for (Approx f : forms) sweep_form(f, step);
  return 0;
}

}  // namespace

GELU_COMMAND("sweep",
             "every f32 bit pattern of a form vs the reference: worst ULP by region",
             run_sweep);
