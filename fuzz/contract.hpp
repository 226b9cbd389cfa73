// The accuracy contract as the fuzzer checks it, written from the public
// header and docs/contract.md's statement of it (not from the kernels); the bounds
// themselves are src/ref/contract.hpp's, shared with the tests:
//
//   forward, f32:      |err| <= 2 ulp(exact)      (fused ops: on fl(x + b))
//   backward, f32:     |err| <= 2 ulp(|dy| * (|t1| + |t2|)) + 0.5 ulp(exact)
//                      (the ulp never below |dy| * 2^-149: docs/contract.md's floor
//                      for a subnormal f32 gelu'(x))
//   bf16 / f16:        1 ulp of the format, of the exact value forward and of
//                      the scale backward (src/ref/contract.hpp, as the tests)
//   geglu:             one more rounding for the product
//   dbias:             |err| <= 2^-20 * sum |dy| (|t1| + |t2|) + 0.5 ulp
//
// The correctly rounded result is always accepted (covers overflow to inf).
// Where the contract says nothing (a product of an infinite factor, or an
// intermediate product past FLT_MAX) the value is not checked; the call must
// still not crash or write out of bounds.
#pragma once

#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "gelu/gelu.hpp"
#include "ref/contract.hpp"
#include "ref/elements.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu::fuzz {

using ref::load;
using ref::stored;

inline double u32(double v) { return ref::ulp_of(DType::f32, v); }

// The unit of a backward's error: ulp(scale), but never below |factor| *
// 2^-149 where factor multiplies an f32 intermediate (gelu'(x)) that may be
// subnormal (docs/contract.md).
inline double unit(double scale, double factor) {
  return std::fmax(u32(scale), std::fabs(factor) * 0x1p-149);
}

// True when `got` (stored in dtype t) meets the contract for `exact`:
// f32 within `f32_err`, the f32 computation's allowed error (rounding to
// f32 included); bf16 and f16 within ref::bound_ulps (one ULP of their
// format, measured as the tests measure it: of the exact value forward, of
// `scale` backward, never below |factor| * 2^-149).
inline bool within(DType t, float got, double exact, double f32_err, double scale,
                   double factor) {
  if (std::isnan(exact) || std::isnan(got)) return std::isnan(exact) && std::isnan(got);
  if (got == stored(t, exact)) return true;
  if (!std::isfinite(got) || !std::isfinite(exact)) return false;
  if (t != DType::f32)
    return ref::contract_ulp_error(t, got, exact, scale, factor) <= ref::bound_ulps(t);
  return std::fabs(double(got) - exact) <= f32_err;
}

// One element of every op's contract. Each returns true when `got` is
// acceptable (or the contract does not constrain it).
inline bool fwd_ok(Approx a, DType t, float s, float got) {
  const double e = ref::gelu_fwd(a, s);
  return within(t, got, e, ref::kF32BoundUlps * u32(e), 0.0, 1.0);
}

// dx = dy * gelu'(s)
inline bool bwd_ok(Approx a, DType t, float dy, float s, float got) {
  if (!std::isfinite(dy)) return true;
  const ref::GradTerms g = ref::gelu_bwd_terms(a, s);
  const double e = double(dy) * (g.t1 + g.t2);
  const double scale = std::fabs(double(dy)) * (std::fabs(g.t1) + std::fabs(g.t2));
  return within(t, got, e, ref::kF32BoundUlps * unit(scale, dy) + 0.5 * u32(e), scale,
                dy);
}

// y = gelu(a) * g
inline bool geglu_fwd_ok(Approx f, DType t, float a, float g, float got) {
  if (!std::isfinite(g)) return true;
  const double ga = ref::gelu_fwd(f, a);
  const double e = ga * g;
  return within(t, got, e,
                ref::kF32BoundUlps * u32(ga) * std::fabs(double(g)) + 0.5 * u32(e), 0.0,
                g);
}

// da = dy * g * gelu'(a)
inline bool geglu_bwd_a_ok(Approx f, DType t, float dy, float a, float g, float got) {
  if (!std::isfinite(dy) || !std::isfinite(g)) return true;
  const ref::GradTerms gt = ref::gelu_bwd_terms(f, a);
  const double d = gt.t1 + gt.t2;
  const double dyg = double(dy) * g;
  if (std::fabs(dyg) > FLT_MAX || std::fabs(dy * d) > FLT_MAX ||
      std::fabs(g * d) > FLT_MAX)
    return true;  // an intermediate f32 product may overflow: unconstrained
  const double e = dyg * d;
  const double scale = std::fabs(dyg) * (std::fabs(gt.t1) + std::fabs(gt.t2));
  return within(t, got, e, ref::kF32BoundUlps * unit(scale, dyg) + 1.0 * u32(e), scale,
                dyg);
}

// dg = dy * gelu(a)
inline bool geglu_bwd_g_ok(Approx f, DType t, float dy, float a, float got) {
  if (!std::isfinite(dy)) return true;
  const double ga = ref::gelu_fwd(f, a);
  const double e = double(dy) * ga;
  return within(t, got, e,
                ref::kF32BoundUlps * u32(ga) * std::fabs(double(dy)) + 0.5 * u32(e),
                0.0, dy);
}

// dbias[j]: `exact` = sum of dy * gelu'(s) over the rows in double, `scale`
// = sum of |dy| (|t1| + |t2|); `finite` = every f32 dx was finite; `floor` =
// the sum over rows of the subnormal floor of each f32 dx it adds (docs/contract.md:
// the unit of a dx's error is never below |dy| * 2^-149, plus its rounding),
// which 2^-20 * scale does not cover when the dx are subnormal.
inline double dbias_floor_term(float dy) {
  return (2.0 * std::fabs(double(dy)) + 0.5) * 0x1p-149;
}
inline bool dbias_ok(DType t, float got, double exact, double scale, double floor,
                     bool finite) {
  if (!finite || !(scale <= FLT_MAX)) return true;
  if (std::isnan(got)) return false;
  if (got == stored(t, exact)) return true;
  const double tol = std::ldexp(scale, -20) + floor + 0.5 * ref::ulp_of(t, exact);
  return std::fabs(double(got) - exact) <= tol;
}

}  // namespace gelu::fuzz
