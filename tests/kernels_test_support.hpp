// Runs a kernel test once per SIMD target the kernels were compiled for and
// this CPU supports (Highway's TestWithParamTarget pattern): SetUp pins the
// target with hwy::SetSupportedTargetsForTest, so every HWY_DYNAMIC_DISPATCH
// of the kernels picks it; TearDown restores the CPU's own choice.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "cpu/kernels.hpp"
#include "hwy/targets.h"

namespace gelu::testing {

inline std::vector<int64_t> kernel_targets() {
  std::vector<int64_t> out;
  int64_t bits = hwy::SupportedTargets() & cpu::compiled_targets();
  for (; bits != 0; bits &= bits - 1) out.push_back(bits & -bits);
  return out;
}

class KernelTarget : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    hwy::SetSupportedTargetsForTest(GetParam());
    ASSERT_STREQ(cpu::target_name(), hwy::TargetName(GetParam()))
        << "the kernels did not dispatch to the pinned target";
  }
  void TearDown() override { hwy::SetSupportedTargetsForTest(0); }
};

inline std::string kernel_target_name(const ::testing::TestParamInfo<int64_t>& i) {
  return hwy::TargetName(i.param);
}

#define GELU_INSTANTIATE_PER_TARGET(suite)                                \
  INSTANTIATE_TEST_SUITE_P(Targets, suite,                                \
                           ::testing::ValuesIn(::gelu::testing::kernel_targets()), \
                           ::gelu::testing::kernel_target_name)

}  // namespace gelu::testing
