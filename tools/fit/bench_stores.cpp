// Plain against non-temporal stores on this machine, without our kernels:
// y = 1.0001 * x over n f32 (AVX-512), each way repeated on its own buffers
// (so a size that fits the caches stays there, as it would for repeated
// calls), and glibc's memcpy of the same bytes; medians of 31 calls, wall
// time, 1 thread, at 1M, 4M, 16M and 32M elements. Where plain stores fall
// behind the streamed ones is where Plan::stream_outputs (src/core/plan.hpp)
// should switch. Not part of the build:
//
//   g++ -std=c++20 -O2 -mavx512f tools/fit/bench_stores.cpp -o /tmp/bench_stores
//   /tmp/bench_stores
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

double Seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 0: plain stores, 1: non-temporal stores, 2: memcpy.
void Run(int way, size_t n, const float* x, float* y) {
  const __m512 c = _mm512_set1_ps(1.0001f);
  if (way == 0) {
    for (size_t i = 0; i < n; i += 16)
      _mm512_store_ps(y + i, _mm512_mul_ps(_mm512_load_ps(x + i), c));
  } else if (way == 1) {
    for (size_t i = 0; i < n; i += 16)
      _mm512_stream_ps(y + i, _mm512_mul_ps(_mm512_load_ps(x + i), c));
    _mm_sfence();
  } else {
    std::memcpy(y, x, n * sizeof(float));
  }
}

}  // namespace

int main() {
  const char* names[3] = {"plain stores", "non-temporal", "memcpy"};
  std::printf("ns/element, medians of 31 calls, 1 thread\n%-10s", "elements");
  for (const char* name : names) std::printf(" %14s", name);
  std::printf("\n");
  for (size_t n :
       {size_t{1} << 20, size_t{1} << 22, size_t{1} << 24, size_t{1} << 25}) {
    std::printf("%-10zu", n);
    for (int way = 0; way < 3; ++way) {
      float* x = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      float* y = static_cast<float*>(std::aligned_alloc(64, n * sizeof(float)));
      for (size_t i = 0; i < n; ++i) x[i] = y[i] = float(i) * 1e-7f;
      std::vector<double> t;
      for (int r = 0; r < 31; ++r) {
        const double t0 = Seconds();
        Run(way, n, x, y);
        t.push_back((Seconds() - t0) / double(n) * 1e9);
      }
      std::sort(t.begin(), t.end());
      std::printf(" %14.3f", t[t.size() / 2]);
      std::free(x);
      std::free(y);
    }
    std::printf("\n");
  }
  return 0;
}
