// Accuracy of the per-target f32 GELU math (src/cpu/gelu_math-inl.h) against
// the double reference (src/ref), once per SIMD target the CPU supports.
//
// Per form, Value, Grad and ValueAndGrad (which must agree bit for bit with
// the two alone) are checked on
//  * 2^24 evenly spread f32 bit patterns, every sign and exponent (2^22 on the
//    targets below the best one, to keep the whole test near 30 s),
//  * a dense sweep of the negative tail [-15, -3] and of [3, 15],
//  * a dense sweep around the derivative's root (x ~ -0.7518),
//  * a few ulps on both sides of every core interval edge (k/4),
//  * the same inputs shuffled so that vectors mix core, tail and special
//    lanes (the blend path), and the special values.
// The contract: Value within 2 ULP of the exact value; Grad within 2 ULP of
// |t1| + |t2| (gelu' = t1 + t2, ref::gelu_bwd_terms). The worst error and its
// input are printed for every target and given in any failure message.

// Compile every target Highway can, including the portable EMU128 fallback.
#ifndef HWY_COMPILE_ALL_ATTAINABLE
#define HWY_COMPILE_ALL_ATTAINABLE
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <utility>
#include <vector>

#include "gelu/gelu.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/gelu_math_test.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/gelu_math-inl.h"
#include "hwy/highway.h"
#include "hwy/tests/hwy_gtest.h"
#include "ref/convert.hpp"

#ifndef GELU_TESTS_GELU_MATH_TEST_ONCE_
#define GELU_TESTS_GELU_MATH_TEST_ONCE_
namespace gelu::math_test {

inline float FromBits(uint32_t u) { return f32_from_bits(u); }
inline uint32_t ToBits(float f) { return f32_bits(f); }

inline const char* FormName(Approx a) {
  return a == Approx::none ? "erf" : a == Approx::tanh ? "tanh" : "quick";
}

// Best target of this CPU, read before any test restricts the targets.
int64_t BestTarget();

// Inputs [a, b] (same sign), `count` bit patterns evenly spaced between.
inline void AppendRange(std::vector<float>& in, float a, float b, uint32_t count) {
  const uint32_t ua = ToBits(a), ub = ToBits(b);
  const uint32_t lo = ua < ub ? ua : ub, hi = ua < ub ? ub : ua;
  const uint64_t span = uint64_t(hi - lo) + 1;
  const uint64_t step = span > count ? span / count : 1;
  for (uint64_t u = lo; u <= hi; u += step) in.push_back(FromBits(uint32_t(u)));
}

// The inputs every target checks besides the evenly spread sweep.
inline std::vector<float> DenseInputs() {
  std::vector<float> in;
  AppendRange(in, -15.0f, -3.0f, 1u << 20);
  AppendRange(in, 3.0f, 15.0f, 1u << 18);
  AppendRange(in, -0.80f, -0.70f, 1u << 18);  // gelu' root, erf ~ -0.7518
  AppendRange(in, -0.60f, -0.50f, 1u << 16);  // tanh/quick roots nearby
  // Core interval edges and the tail start: 16 intervals of width 1/4
  // centred on k/4, and the narrow core's 8 of width 1/2 from k/2 (AVX2).
  for (const auto& [n, w] : {std::pair{16, 0.25f}, std::pair{8, 0.5f}}) {
    for (int k = 1; k <= n; ++k) {
      for (float s : {1.0f, -1.0f}) {
        const uint32_t c = ToBits(s * (n == 16 ? k - 0.5f : float(k)) * w);
        for (uint32_t j = 0; j < 128; ++j) in.push_back(FromBits(c - 64 + j));
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float maxf = std::numeric_limits<float>::max();
  const float minf = std::numeric_limits<float>::min();
  const float den = std::numeric_limits<float>::denorm_min();
  for (float v :
       {0.0f,   -0.0f,   inf,   -inf,   nan,     -nan,   maxf,    -maxf, minf,
        -minf,  den,     -den,  1e-40f, -1e-40f, 3.875f, -3.875f, 4.0f,  -4.0f,
        14.75f, -14.75f, 11.0f, -11.0f, 68.0f,   -68.0f, 1e30f,   -1e30f}) {
    in.push_back(v);
  }
  return in;
}

}  // namespace gelu::math_test
#endif  // GELU_TESTS_GELU_MATH_TEST_ONCE_

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace {

namespace mt = gelu::math_test;

struct Worst {
  double ulp = 0;
  float x = 0;
  void Add(double e, float at) {
    if (!(e <= ulp)) {  // NaN errors count as infinite
      ulp = std::isnan(e) ? std::numeric_limits<double>::infinity() : e;
      x = at;
    }
  }
};

struct Result {
  Worst value, grad;
  uint64_t mismatches = 0;  // ValueAndGrad vs Value / Grad, bitwise
  float mismatch_x = 0;
};

bool SameBits(float a, float b) {
  return mt::ToBits(a) == mt::ToBits(b) || (std::isnan(a) && std::isnan(b));
}

// Runs Math over in[0, n) (n a multiple of 16) with descriptor d and
// scores it.
template <class Math, class D>
void Score(D d, Approx form, const float* in, size_t n, Result& res) {
  const size_t lanes = hn::Lanes(d);
  constexpr size_t kChunk = 4096;
  std::vector<float> v(kChunk), g(kChunk), v2(kChunk), g2(kChunk);
  for (size_t base = 0; base < n; base += kChunk) {
    const size_t m = std::min(kChunk, n - base);
    for (size_t i = 0; i + lanes <= m; i += lanes) {
      const auto x = hn::LoadU(d, in + base + i);
      hn::StoreU(Math::Value(d, x), d, v.data() + i);
      hn::StoreU(Math::Grad(d, x), d, g.data() + i);
      hn::Vec<D> vv, gg;
      Math::ValueAndGrad(d, x, vv, gg);
      hn::StoreU(vv, d, v2.data() + i);
      hn::StoreU(gg, d, g2.data() + i);
    }
    for (size_t i = 0; i < m; ++i) {
      const float x = in[base + i];
      if (!SameBits(v[i], v2[i]) || !SameBits(g[i], g2[i])) {
        if (res.mismatches++ == 0) res.mismatch_x = x;
      }
      res.value.Add(ref::ulp_error(DType::f32, v[i], ref::gelu_fwd(form, x)), x);
      const ref::GradTerms t = ref::gelu_bwd_terms(form, x);
      res.grad.Add(ref::scaled_ulp_error(DType::f32, g[i], t.t1 + t.t2,
                                         std::fabs(t.t1) + std::fabs(t.t2)),
                   x);
    }
  }
}

// bound: the contract's 2 ULP for the f32 math; for ForBf16F16 (results
// rounded to bf16/f16) 256 f32 ULP = 2^-16 relative, 1/32 ulp of f16.
template <class Math>
void CheckForm(Approx form, double bound = 2.0) {
  const hn::ScalableTag<float> d;
  // Evenly spread bit patterns: 2^24 on the best target, 2^22 elsewhere.
  const bool best = HWY_TARGET == mt::BestTarget() && bound == 2.0;
  const int log2n = best ? 24 : 22;
  std::vector<float> in;
  in.reserve((size_t{1} << log2n) + (3u << 20));
  for (uint32_t i = 0; i < (1u << log2n); ++i) {
    // High bits step evenly; low bits vary so mantissas are not all alike.
    const uint32_t u = (i << (32 - log2n)) | ((i * 0x9E3779B1u) >> (log2n));
    in.push_back(mt::FromBits(u));
  }
  const std::vector<float> dense = mt::DenseInputs();
  in.insert(in.end(), dense.begin(), dense.end());
  // The dense inputs again, shuffled: vectors mixing core, tail, inf, NaN.
  std::vector<float> mixed = dense;
  std::shuffle(mixed.begin(), mixed.end(), std::mt19937(12345));
  in.insert(in.end(), mixed.begin(), mixed.end());
  while (in.size() % 16) in.push_back(0.0f);

  Result res;
  Score<Math>(d, form, in.data(), in.size(), res);
  // Partial vectors (a caller may use them) take the gather path: the dense
  // and mixed inputs again through a 4-lane (or narrower) descriptor.
  const hn::CappedTag<float, 4> d4;
  Score<Math>(d4, form, in.data() + in.size() - 2 * dense.size(),
              2 * dense.size() & ~size_t{15}, res);
  std::printf(
      "[ gelu_math ] %-6s %-5s%s value %.3f ulp (x=%a), grad %.3f ulp "
      "(x=%a), %zu inputs\n",
      hwy::TargetName(HWY_TARGET), mt::FormName(form),
      bound == 2.0 ? "" : " (for bf16/f16)", res.value.ulp, res.value.x, res.grad.ulp,
      res.grad.x, in.size());
  EXPECT_LE(res.value.ulp, bound)
      << hwy::TargetName(HWY_TARGET) << " " << mt::FormName(form) << " Value: worst "
      << res.value.ulp << " ULP at x = " << res.value.x << " (" << std::hexfloat
      << res.value.x << ")";
  EXPECT_LE(res.grad.ulp, bound)
      << hwy::TargetName(HWY_TARGET) << " " << mt::FormName(form) << " Grad: worst "
      << res.grad.ulp << " ULP of |t1|+|t2| at x = " << res.grad.x << " ("
      << std::hexfloat << res.grad.x << ")";
  EXPECT_EQ(res.mismatches, 0u)
      << "ValueAndGrad differs from Value/Grad, first at x = " << res.mismatch_x;
}

// Exact results the contract names, lane by lane in a vector of specials.
template <class Math>
void CheckSpecial() {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  const float inf = std::numeric_limits<float>::infinity();
  const float maxf = std::numeric_limits<float>::max();
  struct Case {
    float x, value, grad;
  };
  const Case cases[] = {{inf, inf, 1.0f},       {-inf, -0.0f, 0.0f},
                        {maxf, maxf, 1.0f},     {-maxf, -0.0f, 0.0f},
                        {0.0f, 0.0f, 0.5f},     {-0.0f, 0.0f, 0.5f},
                        {100.0f, 100.0f, 1.0f}, {-100.0f, -0.0f, 0.0f}};
  std::vector<float> in(lanes), v(lanes), g(lanes);
  for (const Case& c : cases) {
    for (size_t pos = 0; pos < lanes; ++pos) {  // alone and among core lanes
      for (size_t i = 0; i < lanes; ++i) in[i] = 0.5f;
      in[pos] = c.x;
      const auto x = hn::LoadU(d, in.data());
      hn::StoreU(Math::Value(d, x), d, v.data());
      hn::StoreU(Math::Grad(d, x), d, g.data());
      EXPECT_EQ(v[pos], c.value) << "gelu(" << c.x << ") lane " << pos;
      EXPECT_EQ(g[pos], c.grad) << "gelu'(" << c.x << ") lane " << pos;
      if (c.x < 0 && c.value == 0) {
        EXPECT_TRUE(std::signbit(v[pos])) << "gelu(" << c.x << ") not -0";
      }
    }
    for (size_t i = 0; i < lanes; ++i) in[i] = std::nanf("");
    in[0] = c.x;
    const auto x = hn::LoadU(d, in.data());
    hn::StoreU(Math::Value(d, x), d, v.data());
    hn::StoreU(Math::Grad(d, x), d, g.data());
    for (size_t i = 1; i < lanes; ++i) {
      EXPECT_TRUE(std::isnan(v[i]) && std::isnan(g[i])) << "NaN lane " << i;
    }
    EXPECT_EQ(v[0], c.value);
  }
}

void TestErf() { CheckForm<GeluErfMath>(Approx::none); }
void TestTanh() { CheckForm<GeluTanhMath>(Approx::tanh); }
void TestQuick() { CheckForm<GeluQuickMath>(Approx::quick); }
constexpr double kBf16F16Bound = 256.0;
void TestErfForBf16F16() {
  CheckForm<GeluErfMath::ForBf16F16>(Approx::none, kBf16F16Bound);
}
void TestTanhForBf16F16() {
  CheckForm<GeluTanhMath::ForBf16F16>(Approx::tanh, kBf16F16Bound);
}
void TestQuickForBf16F16() {
  CheckForm<GeluQuickMath::ForBf16F16>(Approx::quick, kBf16F16Bound);
}
void TestSpecial() {
  CheckSpecial<GeluErfMath>();
  CheckSpecial<GeluTanhMath>();
  CheckSpecial<GeluQuickMath>();
  CheckSpecial<GeluErfMath::ForBf16F16>();
  CheckSpecial<GeluTanhMath::ForBf16F16>();
  CheckSpecial<GeluQuickMath::ForBf16F16>();
}

}  // namespace
// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace gelu::math_test {

int64_t BestTarget() {
  static const int64_t best = hwy::SupportedAndGeneratedTargets()[0];
  return best;
}
// Read once before the tests restrict the supported targets.
static const int64_t kBestAtStart = BestTarget();

}  // namespace gelu::math_test

namespace gelu::cpu {
HWY_BEFORE_TEST(GeluMathTest);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestErf);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestTanh);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestQuick);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestErfForBf16F16);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestTanhForBf16F16);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestQuickForBf16F16);
HWY_EXPORT_AND_TEST_P(GeluMathTest, TestSpecial);
}  // namespace gelu::cpu
#endif
