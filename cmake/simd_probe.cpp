// Prints the x86 SIMD targets of Highway that this CPU runs, best first, one
// per line (cmake/simd_targets.cmake runs it at configure time).
#include <cstdio>

#include "hwy/targets.h"

int main() {
  const int64_t supported = hwy::SupportedTargets();
  if (supported & HWY_AVX3) std::puts("AVX3");
  if (supported & HWY_AVX2) std::puts("AVX2");
  if (supported & HWY_SSE4) std::puts("SSE4");
  return 0;
}
