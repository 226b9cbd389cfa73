// Microbenchmarks of the kernels alone: each op's src/cpu kernel (every op
// of the op table, named by the op) over one contiguous array on one thread
// (the op layer's validation, planning and threads are not in the loop),
// with the bytes it must move so Google Benchmark prints GB/s, and a memcpy
// row of the same bytes per size as the ceiling; f32 also on wider input
// scales (names ending /sigma2, /sigma3, /tail). For the full picture with
// peers and threads: gelu-fusion report.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_chunk.hpp"
#include "core/op_table.hpp"
#include "cpu/kernels.hpp"
#include "ref/elements.hpp"

namespace {

using gelu::Approx;
using gelu::DType;

// GELU_SIMD_TARGET=avx2 (any of gelu::simd_targets()) times that target's
// kernels on this CPU.
const bool kTargetPinned = [] {
  const char* want = std::getenv("GELU_SIMD_TARGET");
  if (want == nullptr || *want == '\0') return false;
  try {
    gelu::set_simd_target(want);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gelu_bench: GELU_SIMD_TARGET: %s\n", e.what());
    std::exit(2);
  }
  std::fprintf(stderr, "gelu_bench: kernels on %s (GELU_SIMD_TARGET)\n",
               gelu::simd_target().c_str());
  return true;
}();

constexpr int64_t kCols = 4096;  // row length of the row kernels
const int64_t kSizes[] = {4096, 1 << 18, 1 << 22};

struct Buf {
  explicit Buf(int64_t bytes)
      : p(static_cast<char*>(std::aligned_alloc(64, (bytes + 63) / 64 * 64))) {
    std::memset(p, 0, (bytes + 63) / 64 * 64);
  }
  ~Buf() { std::free(p); }
  Buf(const Buf&) = delete;
  Buf& operator=(const Buf&) = delete;
  char* p;
};

// Fills n elements with N(0, sigma^2): activations N(0, 1) as in the report
// (with U[-4, 4) 40% of vectors held a tail lane and timed the tail path),
// bias and the residual b small, so that x + b stays like an activation.
void fill(DType t, void* p, int64_t n, float sigma = 1.0f) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.0f, sigma);
  for (int64_t i = 0; i < n; ++i) {
    gelu::ref::store(t, p, i, normal(rng));
  }
}

using gelu::core::OpDecl;
using gelu::core::Role;

// The activations' scale: GELU_BENCH_SIGMA=2 (or 3) in the environment times
// x ~ N(0, sigma^2), where a share of lanes takes the exact negative tail
// (|x| >= 3.875: 5% of lanes at sigma 2, 20% at 3; |x| >= 4 on AVX2).
float x_sigma() {
  const char* v = std::getenv("GELU_BENCH_SIGMA");
  return v != nullptr ? std::strtof(v, nullptr) : 1.0f;
}

// Sigma of each input role's fill (above); outputs are not filled.
float fill_sigma(Role r) {
  return r == Role::addend ? 0.25f : r == Role::x ? x_sigma() : 1.0f;
}

// Input scales, as the report's (tools/report/report_common.hpp): x ~
// N(0, sigma^2) with a N(0, 1) addend, or (sigma 0) tail-only, every
// pre-activation in [-10, -4] (x in [-9, -5] and the addend in [-1, 1)
// when there is one), where the exact tail path runs on every target. Benchmarks
// without a suffix keep the default fill above.
struct InputScale {
  const char* suffix;  // appended to the benchmark name
  float sigma;         // 0: tail-only
};
constexpr InputScale kScales[] = {{"sigma2", 2.0f}, {"sigma3", 3.0f}, {"tail", 0.0f}};
constexpr float kTailLo = -10.0f, kTailHi = -4.0f;

void fill_scaled(DType t, void* p, int64_t n, Role r, const InputScale& sc,
                 bool has_addend) {
  if (r != Role::x && r != Role::addend) return fill(t, p, n, fill_sigma(r));
  if (sc.sigma > 0) return fill(t, p, n, r == Role::x ? sc.sigma : 1.0f);
  std::mt19937 rng(54321);
  const float margin = has_addend ? 1.0f : 0.0f;
  std::uniform_real_distribution<float> u =
      r == Role::x
          ? std::uniform_real_distribution<float>(kTailLo + margin, kTailHi - margin)
          : std::uniform_real_distribution<float>(-1.0f, 1.0f);
  for (int64_t i = 0; i < n; ++i) gelu::ref::store(t, p, i, u(rng));
}

// The op's kernel alone over [rows, cols] (gated: cols of each half), on
// buffers by tensor index in op table order: the table's CPU binding on one
// chunk, as the generic entry runs it on one task (element-wise ops are
// planned as one row of rows x cols).
void run_kernel(const OpDecl& op, Approx f, DType t, int64_t rows, int64_t cols,
                const std::vector<char*>& p, double* partial) {
  const bool flat = op.kind == gelu::core::OpKind::eltwise;
  gelu::core::CpuChunk c{.approx = f,
                         .dtype = t,
                         .rows = flat ? 1 : rows,
                         .cols = flat ? rows * cols : cols,
                         .row_len = flat ? rows * cols : cols,
                         .tensors = {},
                         .partial = partial,
                         .gelu_second = false,
                         .stream = false};
  for (size_t i = 0; i < p.size(); ++i) c.tensors[i] = p[i];
  op.cpu(c);
}

void BM_kernel(benchmark::State& st, const OpDecl* op, Approx f, DType t, int64_t n,
               const InputScale* scale) {
  const int64_t e = static_cast<int64_t>(gelu::dtype_size(t));
  const int64_t rows = n >= kCols ? n / kCols : 1, cols = n >= kCols ? kCols : n;
  // The primary tensor's shape; every other tensor's follows from the table.
  const std::vector<int64_t> primary{
      rows, op->kind == gelu::core::OpKind::gated ? 2 * cols : cols};
  std::vector<std::unique_ptr<Buf>> bufs;
  std::vector<char*> p;
  for (int i = 0; i < op->required_tensors(); ++i) {  // optional outputs not requested
    const int64_t elems = gelu::numel(gelu::core::tensor_shape(*op, i, primary));
    bufs.push_back(std::make_unique<Buf>(elems * e));
    p.push_back(bufs.back()->p);
    if (op->tensors[i].output()) continue;
    if (scale)
      fill_scaled(t, p.back(), elems, op->tensors[i].role, *scale,
                  op->tensor_of(Role::addend) >= 0);
    else fill(t, p.back(), elems, fill_sigma(op->tensors[i].role));
  }
  std::vector<double> partial(cols);
  for (auto _ : st) {
    run_kernel(*op, f, t, rows, cols, p, partial.data());
    benchmark::DoNotOptimize(p.back());
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * n);
  st.SetBytesProcessed(st.iterations() * n * e * op->streams());
  st.SetLabel(gelu::cpu::target_name());
}

// memcpy of n f32 elements: 4n bytes read and 4n written, gelu_fwd f32's
// traffic at the same size.
void BM_copy(benchmark::State& st, int64_t n) {
  Buf src(4 * n), dst(4 * n);
  for (auto _ : st) {
    std::memcpy(dst.p, src.p, 4 * n);
    benchmark::DoNotOptimize(dst.p);
    benchmark::ClobberMemory();
  }
  st.SetBytesProcessed(st.iterations() * 8 * n);
}

const bool kRegistered = [] {
  const auto& forms = gelu::kAllForms;
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f16};
  for (int64_t n : kSizes)
    benchmark::RegisterBenchmark(("copy/f32/" + std::to_string(n)).c_str(), BM_copy, n)
        ->MinTime(0.1);
  for (const OpDecl& op : gelu::core::all_ops())
    for (Approx f : forms) {
      // Fused kernels (an addend or a gate) share the GELU math: the erf
      // form is enough there.
      const bool fused = op.tensor_of(Role::addend) >= 0 ||
                         op.kind == gelu::core::OpKind::gated;
      if (fused && f != Approx::none) continue;
      for (DType t : dtypes)
        for (int64_t n : kSizes) {
          const std::string name = std::string(op.name) + "/" + gelu::dtype_name(t) +
                                   "/" + gelu::approx_name(f) + "/" + std::to_string(n);
          benchmark::RegisterBenchmark(name.c_str(), BM_kernel, &op, f, t, n, nullptr)
              ->MinTime(0.1);
          // The wider input scales, f32 only (the storage dtypes share the
          // f32 math), in cache and at 4M.
          if (t != DType::f32 || n < (1 << 18)) continue;
          for (const InputScale& sc : kScales)
            benchmark::RegisterBenchmark((name + "/" + sc.suffix).c_str(), BM_kernel,
                                         &op, f, t, n, &sc)
                ->MinTime(0.1);
        }
    }
  return true;
}();

}  // namespace
