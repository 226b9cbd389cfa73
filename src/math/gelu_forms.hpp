// The constants of the three GELU forms, the one place they are written
// (C++ and CUDA; the Python package reads them from the extension:
// gelu_fusion._surface.FORMS). The kernels' f32 tables are fitted to the
// same numbers (tools/fit/fit_gelu.py) and the reference computes from them.
//
//   none   gelu(x) = x Phi(x),        Phi(x) = erfc(-x kInvSqrt2) / 2
//   tanh   gelu(x) = x sigmoid(2u),   u = kSqrt2OverPi (x + kTanhCubic x^3)
//   quick  gelu(x) = x sigmoid(kQuickScale x)
//
// Hendrycks & Gimpel (2016), "Gaussian Error Linear Units", section 2: the
// tanh approximation and the sigmoid one (1.702, as OpenAI CLIP's
// QuickGELU).
#pragma once

namespace gelu::math {

inline constexpr double kTanhCubic = 0.044715;
inline constexpr double kSqrt2OverPi = 0.79788456080286535587989211986876;
inline constexpr double kQuickScale = 1.702;
// 1/sqrt(2) and 1/sqrt(2 pi): Phi and phi of the normal distribution.
inline constexpr double kInvSqrt2 = 0.70710678118654752440084436210485;
inline constexpr double kInvSqrt2Pi = 0.39894228040143267793994605993438;

}  // namespace gelu::math
