// GELU_SIMD_TARGET for the command-line tools and benchmarks: our kernels
// run on that target (gelu::set_simd_target), and oneDNN, the report's
// peer, is limited to the same instruction set through ONEDNN_MAX_CPU_ISA
// (unless that is set already), so that a narrower CPU's speed can be
// measured on this one, ours against oneDNN's code for that CPU. PyTorch,
// the other peer, is not limited (its CPU dispatch has no such switch for
// its own kernels), and the report says so.
#pragma once

#include <cstdlib>
#include <string>
#include <string_view>

#include "gelu/gelu.hpp"

namespace gelu::tools {

// oneDNN's ISA name for a Highway target: the newest instruction set that
// the target's CPUs all have and that oneDNN 2.6 (Debian 12's) knows.
inline const char* onednn_isa_for(std::string_view target) {
  if (target == "AVX3_SPR" || target == "AVX3_ZEN4") return "AVX512_CORE_BF16";
  if (target == "AVX3_DL") return "AVX512_CORE_VNNI";
  if (target == "AVX3") return "AVX512_CORE";
  if (target == "AVX2") return "AVX2";
  return "SSE41";  // SSE4, and the portable targets (oneDNN has nothing lower)
}

// Applies GELU_SIMD_TARGET if set; returns the target then in use when it
// was set, else "". Throws gelu::Error for a target this CPU or build lacks.
inline std::string apply_simd_target_env() {
  const char* want = std::getenv("GELU_SIMD_TARGET");
  if (want == nullptr || *want == '\0') return "";
  gelu::set_simd_target(want);
  const std::string target = gelu::simd_target();
  setenv("ONEDNN_MAX_CPU_ISA", onednn_isa_for(target), /*overwrite=*/0);
  return target;
}

}  // namespace gelu::tools
