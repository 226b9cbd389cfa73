// The accuracy contract's bounds (docs/contract.md), one copy
// for the tests, the report and the fuzzer. Errors are measured by
// ref::contract_ulp_error (ulp.hpp): in ULPs of the storage format, of the
// exact value for a forward and of the scale |dy| * (|t1| + |t2|) for a
// backward, never below the subnormal floor of the f32 intermediate.
#pragma once

#include "gelu/gelu.hpp"

namespace gelu::ref {

// f32: at most 2 ULP.
inline constexpr double kF32BoundUlps = 2.0;
// bf16 and f16 outputs: within 1 ULP of their format (the f32 result's
// error, at most 2^-16 of a bf16 ULP, is inside it).
inline constexpr double kHalfBoundUlps = 1.0;
// GeGLU's product rounds an f32 gelu(a) once more: half an f32 ULP.
inline constexpr double kProductRoundingUlps = 0.5;

// The bound for an output of dtype t; `extra_f32` widens f32 for a fused
// op's additional rounding (kProductRoundingUlps).
inline constexpr double bound_ulps(DType t, double extra_f32 = 0.0) {
  return t == DType::f32 ? kF32BoundUlps + extra_f32 : kHalfBoundUlps;
}

}  // namespace gelu::ref
