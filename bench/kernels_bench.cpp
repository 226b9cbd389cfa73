// Thread threshold of the tiling plan (src/core/plan.cpp,
// kMinElementsPerThread): gelu::gelu through the public API at sizes around
// the threshold, 1 thread against 2, in one binary so the ratio is measured
// side by side. Run: gelu_bench --benchmark_filter=threads
// (pins Options::num_threads; the plan still caps threads by its threshold,
// so the 2-thread rows below the threshold also show what the cap saves).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <vector>

#include "gelu/gelu.hpp"

namespace {

void BM_threads(benchmark::State& st) {
  const int64_t n = st.range(0);
  const int threads = static_cast<int>(st.range(1));
  std::vector<float> x(n), y(n);
  for (int64_t i = 0; i < n; ++i)
    x[i] = -4.0f + 8.0f * static_cast<float>(i % 1009) / 1009.0f;
  const gelu::Options o{gelu::Approx::none, threads};
  for (auto _ : st) {
    gelu::gelu({x.data(), gelu::DType::f32, {n}}, {y.data(), gelu::DType::f32, {n}}, o);
    benchmark::DoNotOptimize(y.data());
  }
  st.SetItemsProcessed(st.iterations() * n);
}
BENCHMARK(BM_threads)
    ->Name("threads/gelu_f32")
    ->ArgsProduct({{4096, 16384, 65536, 131072, 262144, 1048576}, {1, 2}})
    ->MinTime(0.05)
    ->UseRealTime();

}  // namespace
