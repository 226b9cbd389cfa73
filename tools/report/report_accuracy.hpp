// The accuracy section: every op, form and dtype over a sweep of inputs,
// measured against the double reference (src/ref) with the same ULP measures
// the tests use (src/ref/ulp.hpp), split by region of the pre-activation x.
// Peers (oneDNN in process, PyTorch through the python script) are measured
// on the very same inputs.
#pragma once

#include <string>
#include <vector>

#include "report_case.hpp"

namespace gelu::report {

struct Region {
  const char* name;
  double lo, hi;  // [lo, hi); the last region includes hi
};
inline constexpr Region kRegions[] = {
    {"negative tail [-16,-2)", -16, -2},
    {"around root [-2,-0.25)", -2, -0.25},
    {"core [-0.25,0.25)", -0.25, 0.25},
    {"positive [0.25,16]", 0.25, 16},
};
inline constexpr int kNumRegions = 4;

// The deterministic inputs of one accuracy case: pre-activations on the
// sweep (f32: `f32_points` evenly spaced bit patterns per region; bf16 and
// f16: every value in the regions), bias/addend, gate and dy random.
Case accuracy_case(OpId, DType, int64_t f32_points);

// Measures c.out (computed by any implementation) against the reference.
std::vector<RegionError> measure(const Case& c, Approx form);

}  // namespace gelu::report

namespace gelu::report {
// Fills the output with NaN, so an element an implementation leaves
// unwritten shows up as an infinite error.
void poison(Case& c);
}  // namespace gelu::report
