// GELU_SIMD_TARGET for the command-line tools and benchmarks: our kernels
// run on that target (gelu::set_simd_target), and oneDNN, the report's
// peer, is limited to the same instruction set through ONEDNN_MAX_CPU_ISA
// and PyTorch, the other peer (run in a python child process), through
// ATEN_CPU_CAPABILITY (each unless set already), so that a narrower CPU's
// speed can be measured on this one, ours against the peers' code for that
// CPU. PyTorch's capability covers its ATen kernels (GELU among them); its
// capabilities are coarser than Highway's targets, and the report says
// which it ran.
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

// PyTorch's ATEN_CPU_CAPABILITY for a Highway target: avx512 for the
// AVX-512 targets, avx2, else default (its portable code).
inline const char* aten_capability_for(std::string_view target) {
  if (target.substr(0, 4) == "AVX3") return "avx512";
  if (target == "AVX2") return "avx2";
  return "default";
}

// Applies GELU_SIMD_TARGET if set; returns the target then in use when it
// was set, else "". Throws gelu::Error for a target this CPU or build lacks.
inline std::string apply_simd_target_env() {
  const char* want = std::getenv("GELU_SIMD_TARGET");
  if (want == nullptr || *want == '\0') return "";
  gelu::set_simd_target(want);
  const std::string target = gelu::simd_target();
  setenv("ONEDNN_MAX_CPU_ISA", onednn_isa_for(target), /*overwrite=*/0);
  setenv("ATEN_CPU_CAPABILITY", aten_capability_for(target), /*overwrite=*/0);
  return target;
}

}  // namespace gelu::tools
