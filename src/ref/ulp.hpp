// Error measures against a double-precision exact value, in units in the last
// place (ULP) of the storage format. Shared by the tests, the report and the
// sweep so they all count errors the same way.
#pragma once

#include <cmath>
#include <limits>

#include "gelu/gelu.hpp"

namespace gelu::ref {

// Mantissa bits (excluding the implicit one) and the smallest normal exponent.
struct FormatBits {
  int mantissa;
  int min_exp;  // exponent of the smallest normal number
};
inline constexpr FormatBits format_bits(DType t) {
  switch (t) {
    case DType::f32: return {23, -126};
    case DType::bf16: return {7, -126};
    case DType::f16: return {10, -14};
  }
  return {23, -126};
}

// The spacing of the format's numbers at magnitude |v| (subnormal spacing
// below the smallest normal). ulp of a value past the format's range is
// the spacing at its largest binade.
inline double ulp_of(DType t, double v) {
  const FormatBits f = format_bits(t);
  const double a = std::fabs(v);
  int e = a > 0 && std::isfinite(a) ? std::ilogb(a) : f.min_exp;
  if (e < f.min_exp) e = f.min_exp;
  return std::ldexp(1.0, e - f.mantissa);
}

// |got - exact| in ULPs of the format at `exact`. NaN agreeing with NaN and an
// infinity agreeing with the same infinity are 0; any other mismatch with a
// non-finite value is +inf.
inline double ulp_error(DType t, double got, double exact) {
  if (std::isnan(exact) || std::isnan(got))
    return std::isnan(exact) && std::isnan(got)
               ? 0.0
               : std::numeric_limits<double>::infinity();
  if (std::isinf(exact) || std::isinf(got))
    return got == exact ? 0.0 : std::numeric_limits<double>::infinity();
  return std::fabs(got - exact) / ulp_of(t, exact);
}

// Backward bound: |got - exact| in ULPs of scale = |t1| + |t2| (times |dy|),
// the measure the accuracy contract bounds by 2.
inline double scaled_ulp_error(DType t, double got, double exact, double scale) {
  if (std::isnan(exact) || std::isnan(got) || std::isinf(exact) || std::isinf(got))
    return ulp_error(t, got, exact);
  return std::fabs(got - exact) / ulp_of(t, scale);
}

// The contract's error of a result that multiplies an f32 intermediate (gelu
// or gelu') by `factor` (dy, the gate, dy * gate; 1 for the plain forward):
// as ulp_error (scale 0) or scaled_ulp_error (scale > 0), but the unit never
// drops below |factor| * 2^-149, the rounding of a subnormal intermediate
// (docs/contract.md). Used by the tests and the report alike.
inline double contract_ulp_error(DType t, double got, double exact, double scale,
                                 double factor) {
  const double err = ulp_error(t, got, exact);  // NaN/inf handling
  if (!std::isfinite(err) || err == 0.0) return err;
  const bool scaled = scale > 0 && std::isfinite(scale);
  const double unit = std::fmax(ulp_of(t, scaled ? scale : exact),
                                std::fabs(factor) * 0x1p-149);
  return std::fabs(got - exact) / unit;
}

}  // namespace gelu::ref
