// gelu::set_simd_target: every op can be run on each SIMD target this CPU
// runs (to measure or test a narrower CPU's code here), each target meets
// the contract, and a name this CPU or build lacks is refused with the
// choices.
#include <gtest/gtest.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

// GELU_SIMD_TARGET=name runs every test of this binary on that target, as
// the kernels_on_<target> tests do (tests/CMakeLists.txt): the kernels'
// suites on each narrower target this CPU runs. Where the CPU or build
// lacks the target, every test is skipped with the reason.
class SimdTargetFromEnv : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* want = std::getenv("GELU_SIMD_TARGET");
    if (want == nullptr || *want == '\0') return;
    try {
      set_simd_target(want);
    } catch (const Error& e) {
      GTEST_SKIP() << "no SIMD target " << want << " here: " << e.what();
    }
    std::printf("[ simd ] every test runs on %s\n", simd_target().c_str());
  }
};
[[maybe_unused]] ::testing::Environment* const kSimdTargetFromEnv =
    ::testing::AddGlobalTestEnvironment(new SimdTargetFromEnv);

// Puts the best target back when a test ends (the mask is process-wide).
struct BestAfter {
  ~BestAfter() { set_simd_target("best"); }
};

TEST(SimdTarget, ListsTheChosenTargetFirst) {
  const std::vector<std::string> targets = simd_targets();
  ASSERT_FALSE(targets.empty());
  EXPECT_EQ(targets.front(), simd_target());
}

TEST(SimdTarget, EachTargetRunsEveryFormWithinTheContract) {
  BestAfter reset;
  for (const std::string& name : simd_targets()) {
    std::string lower = name;
    for (char& c : lower)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    set_simd_target(lower);  // names are case-insensitive
    ASSERT_EQ(simd_target(), name);
    for (Approx a : kForms) {
      for (DType t : kDTypes) {
        Buffer x(t, {37, 65}), y(t, {37, 65});
        fill_inputs(x, 11);
        y.poison();
        gelu::gelu(x.cref(), y.ref(), {.approximate = a, .num_threads = 1});
        check_all(
            y, [&](int64_t i) { return expect_fwd(a, x.get(i)); }, bound_ulps(t),
            name + " " + approx_name(a) + " " + dtype_name(t));
      }
    }
  }
  set_simd_target("");
  EXPECT_EQ(simd_target(), simd_targets().front());
}

TEST(SimdTarget, AnUnknownNameIsRefusedWithTheChoices) {
  BestAfter reset;
  const std::string before = simd_target();
  try {
    set_simd_target("avx9000");
    FAIL() << "set_simd_target accepted 'avx9000'";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("set_simd_target"), std::string::npos) << what;
    EXPECT_NE(what.find("'avx9000'"), std::string::npos) << what;
    EXPECT_NE(what.find(simd_targets().front()), std::string::npos) << what;
  }
  EXPECT_EQ(simd_target(), before);  // nothing changed
}

}  // namespace
}  // namespace gelu::testing
