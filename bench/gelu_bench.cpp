// Microbenchmarks of the kernels alone: each src/cpu kernel over one
// contiguous array on one thread (the op layer's validation, planning and
// threads are not in the loop), with the bytes it must move so Google
// Benchmark prints GB/s, and a memcpy row of the same bytes per size as the
// ceiling. For the full picture with peers and threads: gelu-fusion report.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "ref/convert.hpp"
#include "cpu/kernels.hpp"

namespace {

using gelu::Approx;
using gelu::DType;

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
    const float v = normal(rng);
    if (t == DType::f32) static_cast<float*>(p)[i] = v;
    else if (t == DType::bf16) static_cast<uint16_t*>(p)[i] = gelu::f32_to_bf16(v);
    else static_cast<uint16_t*>(p)[i] = gelu::f32_to_f16(v);
  }
}

enum class K { gelu_fwd, gelu_bwd, bias_fwd, bias_bwd, add_fwd, add_bwd, geglu_fwd, geglu_bwd };
struct KInfo {
  const char* name;
  int streams;  // elements read + written per GELU evaluation
};
const KInfo kInfo[] = {{"gelu_fwd", 2},  {"gelu_bwd", 3}, {"bias_fwd", 2},
                       {"bias_bwd", 3},  {"add_fwd", 3},  {"add_bwd", 4},
                       {"geglu_fwd", 3}, {"geglu_bwd", 5}};

void BM_kernel(benchmark::State& st, K k, Approx f, DType t, int64_t n) {
  const int64_t e = static_cast<int64_t>(gelu::dtype_size(t));
  const int64_t rows = n >= kCols ? n / kCols : 1, cols = n >= kCols ? kCols : n;
  const bool geglu = k == K::geglu_fwd || k == K::geglu_bwd;
  Buf x((geglu ? 2 : 1) * n * e), b(n * e), dy(n * e), out(2 * n * e);
  std::vector<double> dbias(cols);
  fill(t, x.p, (geglu ? 2 : 1) * n);
  fill(t, b.p, n, 0.25f);
  fill(t, dy.p, n);
  for (auto _ : st) {
    switch (k) {
      case K::gelu_fwd: gelu::cpu::gelu_fwd(f, t, n, x.p, out.p); break;
      case K::gelu_bwd: gelu::cpu::gelu_bwd(f, t, n, dy.p, x.p, out.p); break;
      case K::add_fwd: gelu::cpu::add_fwd(f, t, n, x.p, b.p, out.p); break;
      case K::add_bwd: gelu::cpu::add_bwd(f, t, n, dy.p, x.p, b.p, out.p); break;
      case K::bias_fwd: gelu::cpu::bias_fwd(f, t, rows, cols, cols, x.p, b.p, out.p); break;
      case K::bias_bwd:
        gelu::cpu::bias_bwd(f, t, rows, cols, cols, dy.p, x.p, b.p, out.p, dbias.data());
        break;
      case K::geglu_fwd: gelu::cpu::geglu_fwd(f, t, rows, cols, cols, x.p, out.p); break;
      case K::geglu_bwd: gelu::cpu::geglu_bwd(f, t, rows, cols, cols, dy.p, x.p, out.p); break;
    }
    benchmark::DoNotOptimize(out.p);
    benchmark::ClobberMemory();
  }
  st.SetItemsProcessed(st.iterations() * n);
  st.SetBytesProcessed(st.iterations() * n * e * kInfo[static_cast<int>(k)].streams);
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
  const Approx forms[] = {Approx::none, Approx::tanh, Approx::quick};
  const DType dtypes[] = {DType::f32, DType::bf16, DType::f16};
  for (int64_t n : kSizes)
    benchmark::RegisterBenchmark(("copy/f32/" + std::to_string(n)).c_str(), BM_copy, n)
        ->MinTime(0.1);
  for (int ki = 0; ki < 8; ++ki)
    for (Approx f : forms) {
      // Fused kernels share the GELU math: the erf form is enough there.
      if (ki >= 2 && f != Approx::none) continue;
      for (DType t : dtypes)
        for (int64_t n : kSizes) {
          const std::string name = std::string(kInfo[ki].name) + "/" +
                                   gelu::dtype_name(t) + "/" + gelu::approx_name(f) +
                                   "/" + std::to_string(n);
          benchmark::RegisterBenchmark(name.c_str(), BM_kernel, static_cast<K>(ki), f, t, n)
              ->MinTime(0.1);
        }
    }
  return true;
}();

}  // namespace
