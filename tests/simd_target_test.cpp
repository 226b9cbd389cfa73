// gelu::set_simd_target: every op can be run on each SIMD target this CPU
// runs (to measure or test a narrower CPU's code here), each target meets
// the contract, and a name this CPU or build lacks is refused with the
// choices.
#include <gtest/gtest.h>

#include <cctype>
#include <string>

#include "test_support.hpp"

namespace gelu::testing {
namespace {

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
