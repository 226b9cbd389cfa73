// Runs a kernel test once per SIMD target the kernels were compiled for and
// this CPU supports (Highway's TestWithParamTarget pattern): SetUp pins the
// target with hwy::SetSupportedTargetsForTest, so every HWY_DYNAMIC_DISPATCH
// of the kernels picks it; TearDown restores the CPU's own choice.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/cpu_features.hpp"
#include "cpu/kernels.hpp"
#include "hwy/targets.h"

namespace gelu::testing {

// A parameter bit beside the target's: run the AVX3 kernels with the
// AVX512_BF16 instruction turned off (src/cpu/cpu_features.hpp), so the
// integer bf16 rounding is tested on CPUs that have the instruction too.
inline constexpr int64_t kWithoutAvx512Bf16 = int64_t{1}
                                              << 40;  // no Highway target bit

inline std::vector<int64_t> kernel_targets() {
  std::vector<int64_t> out;
  int64_t bits = hwy::SupportedTargets() & cpu::compiled_targets();
  for (; bits != 0; bits &= bits - 1) {
    const int64_t target = bits & -bits;
    out.push_back(target);
    if ((target == HWY_AVX3 || target == HWY_AVX3_DL) && cpu::cpu_has_avx512_bf16())
      out.push_back(target | kWithoutAvx512Bf16);
  }
  return out;
}

class KernelTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    const int64_t target = GetParam() & ~kWithoutAvx512Bf16;
    hwy::SetSupportedTargetsForTest(target);
    cpu::g_allow_avx512_bf16 = (GetParam() & kWithoutAvx512Bf16) == 0;
    ASSERT_STREQ(cpu::target_name(), hwy::TargetName(target))
        << "the kernels did not dispatch to the pinned target";
  }
  void TearDown() override {
    hwy::SetSupportedTargetsForTest(0);
    cpu::g_allow_avx512_bf16 = true;
  }
};

inline std::string kernel_target_name(const ::testing::TestParamInfo<int64_t>& i) {
  return std::string(hwy::TargetName(i.param & ~kWithoutAvx512Bf16)) +
         ((i.param & kWithoutAvx512Bf16) != 0 ? "_without_AVX512_BF16" : "");
}

#define GELU_INSTANTIATE_PER_TARGET(suite)                                         \
  INSTANTIATE_TEST_SUITE_P(Targets, suite,                                         \
                           ::testing::ValuesIn(::gelu::testing::kernel_targets()), \
                           ::gelu::testing::kernel_target_name)

}  // namespace gelu::testing
