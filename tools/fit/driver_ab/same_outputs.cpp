// Driver A/B output check: whether two versions of src/cpu/driver-inl.h
// (same_outputs.sh builds each side from variant.cpp, as run.sh does) give
// the same bytes, call for call: every f32 row of variant.cpp (the three
// forms, forward and backward, plain and streamed stores) and its 16-bit
// rows, out of place and in place, over sizes from 1 to 262,144 (partial
// steps, partial blocks, many blocks) and input sets that take every path
// of the driver (the core alone, sparse and dense tails, a tail-only set,
// large positive inputs, inf and NaN). Exits 1 on any difference.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "sides.h"

namespace {

constexpr int kSets = 6;

// Set 0-3: N(0, set + 1); 4: U[-14, -4] (every lane in the tail); 5: U[3, 30]
// with every third lane N(0, 3). Each set of more than 20 holds +-inf, NaN
// and 1e30 too.
std::vector<float> Inputs(size_t n, int set, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.f, set < 4 ? float(set + 1) : 3.f);
  std::uniform_real_distribution<float> tail(-14.f, -4.f), large(3.f, 30.f);
  std::vector<float> x(n);
  for (size_t i = 0; i < n; ++i)
    x[i] = set == 4 ? tail(rng) : set == 5 && i % 3 != 0 ? large(rng) : normal(rng);
  if (n > 20) {
    x[3] = INFINITY;
    x[5] = -INFINITY;
    x[7] = NAN;
    x[9] = 1e30f;
  }
  return x;
}

uint16_t ToBits16(float f, bool bf16) {
  if (bf16) {
    uint32_t u;
    std::memcpy(&u, &f, 4);
    if (std::isnan(f)) return 0x7fc0;
    return static_cast<uint16_t>((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
  }
  const _Float16 h = static_cast<_Float16>(f);
  uint16_t u;
  std::memcpy(&u, &h, 2);
  return u;
}

// Streamed rows (ops 6-11) need vector-aligned outputs.
template <class T>
struct Buffer {
  explicit Buffer(size_t n)
      : p(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 64) / 64 * 64))) {}
  ~Buffer() { std::free(p); }
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  T* p;
};

void Report(const char* what, int op, size_t n, int set, int& differ) {
  if (++differ <= 10)
    std::printf("differ: %s op %d, n %zu, set %d\n", what, op, n, set);
}

}  // namespace

int main() {
  const size_t sizes[] = {1,   7,    16,   17,    100,   511,   512,
                          513, 1000, 4096, 10007, 65549, 262144};
  int calls = 0, differ = 0;
  for (int set = 0; set < kSets; ++set) {
    for (size_t n : sizes) {
      const std::vector<float> x = Inputs(n, set, uint32_t(n * 31 + set));
      const std::vector<float> dy = Inputs(n, 0, uint32_t(n * 37 + set));
      Buffer<float> a(n), b(n);
      for (int op = 0; op < 12; ++op) {
        for (int in_place = 0; in_place < 2; ++in_place) {
          for (size_t i = 0; i < n; ++i) a.p[i] = b.p[i] = in_place ? x[i] : 7.f;
          run_a(op, n, dy.data(), in_place ? a.p : x.data(), a.p);
          run_b(op, n, dy.data(), in_place ? b.p : x.data(), b.p);
          ++calls;
          if (std::memcmp(a.p, b.p, n * sizeof(float)) != 0)
            Report(in_place ? "f32 in place" : "f32", op, n, set, differ);
        }
      }
      // The 16-bit rows: x, the gate (or b) and dy in bf16 (ops 0-3) or f16
      // (4-7); out and out2.
      for (int op = 0; op < 8; ++op) {
        const bool bf16 = op < 4;
        std::vector<uint16_t> x16(n), g16(n), dy16(n);
        for (size_t i = 0; i < n; ++i) {
          x16[i] = ToBits16(x[i], bf16);
          g16[i] = ToBits16(dy[n - 1 - i], bf16);
          dy16[i] = ToBits16(dy[i], bf16);
        }
        std::vector<uint16_t> oa(n, 7), ob(n, 7), o2a(n, 7), o2b(n, 7);
        run16_a(op, n, dy16.data(), x16.data(), g16.data(), oa.data(), o2a.data());
        run16_b(op, n, dy16.data(), x16.data(), g16.data(), ob.data(), o2b.data());
        ++calls;
        if (oa != ob || o2a != o2b) Report("16-bit", op, n, set, differ);
      }
    }
  }
  std::printf("%s: %d calls, %d differ\n", variant_target(), calls, differ);
  return differ != 0;
}
