// Run-time CPU features the kernels use beyond their Highway target.
#pragma once

#include <atomic>

namespace gelu::cpu {

// AVX512_BF16 (vcvtne2ps2bf16: 32 f32 -> bf16 with round-to-nearest-even in
// one instruction), where CPUID reports it.
// Highway 1.0 has no target for it, so the AVX3 kernels ask per call.
inline bool cpu_has_avx512_bf16() {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
  static const bool has = __builtin_cpu_supports("avx512bf16") != 0;
  return has;
#else
  return false;
#endif
}

// Tests clear this to run the integer bf16 rounding on AVX3 CPUs that have
// the instruction (tests/kernels_test_support.hpp); nothing else writes it.
inline std::atomic<bool> g_allow_avx512_bf16{true};

inline bool use_avx512_bf16() {
  return g_allow_avx512_bf16.load(std::memory_order_relaxed) && cpu_has_avx512_bf16();
}

}  // namespace gelu::cpu
