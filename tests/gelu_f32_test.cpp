// The scalar f32 method (src/math/gelu_f32.hpp), which the CUDA kernels
// run, compiled here for the host:
//  * the same bits as the CPU's SIMD math on every FMA target this CPU
//    runs, with the core of that target (32 intervals on AVX-512, 8 on
//    AVX2, 16 elsewhere and for AVX-512's bf16/f16 results), for every
//    form, for f32 results and for the bf16/f16 core;
//    the erf tail's 1/t^2 differs in method (a quotient here, an
//    approximate reciprocal and a Newton step there), so there the two may
//    differ by one ulp, and no more;
//  * within the f32 contract against the double reference (value 2 ULP,
//    grad 2 ULP of |t1| + |t2|), with either core;
// on every bf16 and f16 value and 10^7 f32 inputs (evenly spread bit
// patterns, N(0,1), N(0,3), the negative tail) per form.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "gelu/gelu.hpp"
#include "math/gelu_forms.hpp"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tests/gelu_f32_test.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/gelu_math-inl.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

template <class Math>
void EvalWith(const float* x, size_t n, float* v, float* g) {
  const hn::ScalableTag<float> d;
  const size_t lanes = hn::Lanes(d);
  for (size_t i = 0; i < n; i += lanes) {  // n: a multiple of 16
    hn::Vec<decltype(d)> vv, gg;
    Math::ValueAndGrad(d, hn::LoadU(d, x + i), vv, gg);
    hn::StoreU(vv, d, v + i);
    hn::StoreU(gg, d, g + i);
  }
}

// This target's math over x[0, n); returns its core's interval count, and
// whether it computes with FMA (the scalar method's steps).
int TargetMath(Approx form, bool half, const float* x, size_t n, float* v, float* g,
               bool* fma) {
  *fma = HWY_NATIVE_FMA != 0;
  const auto run = [&](auto math) {
    using M = decltype(math);
    if (half) EvalWith<typename M::ForBf16F16>(x, n, v, g);
    else EvalWith<M>(x, n, v, g);
  };
  ::gelu::math::visit_form(
      form, [&](auto f) { run(typename FormMath<decltype(f)::value>::type{}); });
  // The bf16/f16 results keep 16 intervals where f32 takes the wide core.
  return half && kCoreIntervals == 32 ? 16 : int(kCoreIntervals);
}

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include <gtest/gtest.h>

#include "cpu/kernels.hpp"
#include "math/gelu_f32.hpp"
#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu::cpu {
HWY_EXPORT(TargetMath);

// The dispatch stays inside the namespace: HWY_COMPILE_ONLY_STATIC
// builds (the sanitizers') expand it to N_<TARGET>::TargetMath.
int DispatchTargetMath(Approx form, bool half, const float* x, size_t n, float* v,
                       float* g, bool* fma) {
  return HWY_DYNAMIC_DISPATCH(TargetMath)(form, half, x, n, v, g, fma);
}
}  // namespace gelu::cpu

namespace gelu::testing {
namespace {

const char* form_name(Approx a) { return approx_name(a); }

// Every bf16 and f16 value, then 10^7 f32 inputs; a multiple of 16.
const std::vector<float>& inputs() {
  static const std::vector<float> in = [] {
    std::vector<float> v;
    v.reserve(10'200'000);
    for (uint32_t h = 0; h < 65536; ++h) {
      v.push_back(bf16_to_f32(uint16_t(h)));
      v.push_back(f16_to_f32(uint16_t(h)));
    }
    constexpr uint32_t kSpread = 4'000'000;
    for (uint32_t i = 0; i < kSpread; ++i)
      v.push_back(f32_from_bits(uint32_t(uint64_t(i) * 0xFFFFFFFFu / kSpread) ^
                                ((i * 0x9E3779B1u) >> 20)));
    std::mt19937 rng(20261206);
    std::normal_distribution<float> n01(0.0f, 1.0f);
    for (int i = 0; i < 2'500'000; ++i) v.push_back(n01(rng));
    for (int i = 0; i < 2'500'000; ++i) v.push_back(3.0f * n01(rng));
    std::uniform_real_distribution<float> tail(-15.0f, -3.5f);
    for (int i = 0; i < 1'000'000; ++i) v.push_back(tail(rng));
    while (v.size() % 16) v.push_back(0.0f);
    return v;
  }();
  return in;
}

bool same_bits(float a, float b) {
  return f32_bits(a) == f32_bits(b) || (std::isnan(a) && std::isnan(b));
}

// Distance in ulps between two finite floats of the same sign (or zeros).
int64_t ulp_distance(float a, float b) {
  const auto key = [](float f) {
    const int64_t u = f32_bits(f) & 0x7fffffffu;
    return std::signbit(f) ? -u : u;
  };
  const int64_t d = key(a) - key(b);
  return d < 0 ? -d : d;
}

template <Approx F, bool kHalf, int kN>
void scalar_math(const std::vector<float>& x, std::vector<float>& v,
                 std::vector<float>& g) {
  v.resize(x.size());
  g.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    math::value_and_grad<F, kHalf, kN>(x[i], v[i], g[i]);
}

// The worst f32 errors against the reference (value: ulps of gelu; grad:
// ulps of |t1| + |t2|) and their inputs.
template <Approx F>
struct WorstError {
  double value = 0, grad = 0;
  float at_value = 0, at_grad = 0;
  void add(float x, float v, float g) {
    const double ev = ref::ulp_error(DType::f32, v, ref::gelu_fwd(F, x));
    const ref::GradTerms t = ref::gelu_bwd_terms(F, x);
    const double eg = ref::scaled_ulp_error(DType::f32, g, t.t1 + t.t2,
                                            std::fabs(t.t1) + std::fabs(t.t2));
    if (!(ev <= value)) value = std::isnan(ev) ? INFINITY : ev, at_value = x;
    if (!(eg <= grad)) grad = std::isnan(eg) ? INFINITY : eg, at_grad = x;
  }
  void expect_within_contract() const {
    EXPECT_LE(value, 2.0) << form_name(F) << " value at x = " << at_value;
    EXPECT_LE(grad, 2.0) << form_name(F) << " grad at x = " << at_grad;
  }
};

// The scalar method's interval counts: 16, 8 and, for f32 results, 32.
constexpr int kCoreCounts[] = {16, 8, 32};

template <Approx F, bool kHalf>
void check_form() {
  const std::vector<float>& x = inputs();
  constexpr int kCores = kHalf ? 2 : 3;
  std::vector<float> sv[3], sg[3];  // kCoreCounts' order
  scalar_math<F, kHalf, 16>(x, sv[0], sg[0]);
  scalar_math<F, kHalf, 8>(x, sv[1], sg[1]);
  if constexpr (!kHalf) scalar_math<F, kHalf, 32>(x, sv[2], sg[2]);

  // Against the reference, f32 results only (the bf16/f16 core's 2^-17 is
  // checked through the ops' results).
  if (!kHalf) {
    for (int c = 0; c < kCores; ++c) {
      WorstError<F> worst;
      for (size_t i = 0; i < x.size(); ++i) worst.add(x[i], sv[c][i], sg[c][i]);
      std::printf(
          "[ gelu_f32 ] %-5s %2d intervals: value %.3f ulp (x=%a), grad %.3f "
          "ulp (x=%a)\n",
          form_name(F), kCoreCounts[c], worst.value, worst.at_value, worst.grad,
          worst.at_grad);
      worst.expect_within_contract();
    }
  }

  // Against the CPU's math on each FMA target this CPU runs.
  const std::string before = simd_target();
  int compared = 0;
  std::vector<float> tv(x.size()), tg(x.size());
  for (const cpu::Target& target : cpu::runnable_targets()) {
    cpu::pin_target(target.bit);
    bool fma = false;
    const int kn = cpu::DispatchTargetMath(F, kHalf, x.data(), x.size(), tv.data(),
                                           tg.data(), &fma);
    if (!fma) continue;
    ++compared;
    const int c = int(std::find(std::begin(kCoreCounts), std::end(kCoreCounts), kn) -
                      std::begin(kCoreCounts));
    ASSERT_LT(c, kCores) << "no scalar core of " << kn << " intervals";
    const float tail_start = kn == 16  ? math::kCoreEnd<F, kHalf, 16>
                             : kn == 8 ? math::kCoreEnd<F, kHalf, 8>
                                       : math::kCoreEnd<F, false, 32>;
    uint64_t differ = 0, tail_differ = 0;
    float first = 0;
    for (size_t i = 0; i < x.size(); ++i) {
      const bool sv_same = same_bits(sv[c][i], tv[i]),
                 sg_same = same_bits(sg[c][i], tg[i]);
      if (sv_same && sg_same) continue;
      const bool erf_tail = F == Approx::none && std::fabs(x[i]) >= tail_start &&
                            std::isfinite(x[i]);
      if (erf_tail && (sv_same || ulp_distance(sv[c][i], tv[i]) <= 1) &&
          (sg_same || ulp_distance(sg[c][i], tg[i]) <= 1)) {
        ++tail_differ;
        continue;
      }
      if (differ++ == 0) first = x[i];
    }
    std::printf(
        "[ gelu_f32 ] %-5s%s vs %s (%d intervals): %llu differ, %llu by one "
        "ulp in the erf tail, of %zu\n",
        form_name(F), kHalf ? " (bf16/f16 core)" : "", target.name, kn,
        static_cast<unsigned long long>(differ),
        static_cast<unsigned long long>(tail_differ), x.size());
    EXPECT_EQ(differ, 0u) << form_name(F) << " on " << target.name
                          << ": first at x = " << std::hexfloat << first;
  }
  set_simd_target(before);
  if (compared == 0) std::printf("[ gelu_f32 ] no FMA target on this CPU to compare\n");
}

// A core of kN intervals (8: AVX2's narrow core, 32: AVX-512's wide one)
// on every f32 input it takes with |x| >= 2^-4: within the contract against
// the reference, and, where this CPU runs an FMA target with that core,
// the same bits as that target's SIMD math. The sampled sets above miss
// the worst inputs by up to 0.1 ulp; the narrow core's interval ends and
// expansion points (tools/fit/fit_gelu.py --narrow) are chosen on this
// whole range, and the wide core's widths.
template <Approx F, int kN>
void check_core_everywhere() {
  const uint32_t first = f32_bits(0x1p-4f),
                 end = f32_bits(math::kCoreEnd<F, false, kN>);
  const std::string before = simd_target();
  int64_t with_core = -1;
  for (const cpu::Target& target : cpu::runnable_targets()) {
    cpu::pin_target(target.bit);
    bool fma = false;
    float v0, g0, x0 = 1.0f;
    if (cpu::DispatchTargetMath(F, false, &x0, 0, &v0, &g0, &fma) == kN && fma)
      with_core = target.bit;
  }
  set_simd_target(before);
  if (with_core >= 0) cpu::pin_target(with_core);
  constexpr size_t kChunk = 1 << 20;
  std::vector<float> x(kChunk), tv(kChunk), tg(kChunk);
  WorstError<F> worst;
  uint64_t checked = 0, differ = 0;
  for (uint32_t sign : {0u, 0x80000000u}) {
    for (uint32_t u = first; u < end; u += kChunk) {
      const size_t n = std::min<size_t>(kChunk, end - u);
      for (size_t i = 0; i < n; ++i) x[i] = f32_from_bits((u + uint32_t(i)) | sign);
      if (with_core >= 0) {
        bool fma = false;
        cpu::DispatchTargetMath(F, false, x.data(), (n + 15) / 16 * 16, tv.data(),
                                tg.data(), &fma);
      }
      for (size_t i = 0; i < n; ++i) {
        float v, g;
        math::value_and_grad<F, false, kN>(x[i], v, g);
        if (with_core >= 0 && !(same_bits(v, tv[i]) && same_bits(g, tg[i]))) ++differ;
        worst.add(x[i], v, g);
      }
      checked += n;
    }
  }
  set_simd_target(before);
  std::printf(
      "[ gelu_f32 ] %-5s %d intervals, every |x| in [2^-4, %g): value %.3f ulp (x=%a), "
      "grad %.3f ulp (x=%a), %llu inputs, %s\n",
      form_name(F), kN, double(math::kCoreEnd<F, false, kN>), worst.value,
      worst.at_value, worst.grad, worst.at_grad,
      static_cast<unsigned long long>(checked),
      with_core >= 0 ? "the same bits as the SIMD math"
                     : "no target with this core here");
  worst.expect_within_contract();
  EXPECT_EQ(differ, 0u) << form_name(F)
                        << ": the scalar method and the SIMD math differ";
}

// The narrow core's c0 is a single f32 (no lo part): each interval is
// expanded at a centre where V and G lie within 1/64 ulp of an f32, and c0
// is that f32 (tools/fit/fit_gelu.py, narrow_centres). V(c) = -gelu(-c),
// G(c) = gelu'(-c), from the double reference.
template <Approx F>
void check_narrow_constants() {
  using C = math::Core<F, false, 8>;
  static_assert(!C::kLo, "the narrow core's c0 is one f32");
  constexpr int kN = 8;
  for (int k = 0; k < kN; ++k) {
    const double c = C::centre()[k];
    const ref::GradTerms terms = ref::gelu_bwd_terms(F, -c);
    const double want[2] = {-ref::gelu_fwd(F, -c), terms.t1 + terms.t2};
    const float got[2] = {C::v()[k], C::g()[k]};
    for (int j = 0; j < 2; ++j) {
      SCOPED_TRACE(std::string(form_name(F)) + (j == 0 ? " V" : " G") + ", interval " +
                   std::to_string(k) + ", centre " + std::to_string(c));
      EXPECT_EQ(got[j], static_cast<float>(want[j]));
      if (want[j] != 0.0) {
        const double ulp = std::ldexp(1.0, std::ilogb(got[j]) - 23);
        EXPECT_LE(std::fabs(want[j] - double(got[j])), ulp / 64);
      }
    }
  }
}

std::string FormParamName(const ::testing::TestParamInfo<Approx>& info) {
  return approx_name(info.param);
}

// Every form of the library (GELU_FUSION_FORMS), one test each. The
// narrow tables' check is quick (outside the slow label's GeluF32*).
class NarrowCoreTables : public ::testing::TestWithParam<Approx> {};
TEST_P(NarrowCoreTables, ConstantsAreExactAtTheCentres) {
  math::visit_form(GetParam(),
                   [](auto f) { check_narrow_constants<decltype(f)::value>(); });
}
INSTANTIATE_TEST_SUITE_P(Forms, NarrowCoreTables, ::testing::ValuesIn(kAllForms),
                         FormParamName);

class GeluF32Form : public ::testing::TestWithParam<Approx> {};
TEST_P(GeluF32Form, NarrowCoreEveryInput) {
  math::visit_form(GetParam(),
                   [](auto f) { check_core_everywhere<decltype(f)::value, 8>(); });
}
TEST_P(GeluF32Form, WideCoreEveryInput) {
  math::visit_form(GetParam(),
                   [](auto f) { check_core_everywhere<decltype(f)::value, 32>(); });
}
TEST_P(GeluF32Form, MatchesTheCpuAndTheReference) {
  math::visit_form(GetParam(), [](auto f) { check_form<decltype(f)::value, false>(); });
}
TEST_P(GeluF32Form, HalfCoreMatchesTheCpu) {
  math::visit_form(GetParam(), [](auto f) { check_form<decltype(f)::value, true>(); });
}
INSTANTIATE_TEST_SUITE_P(Forms, GeluF32Form, ::testing::ValuesIn(kAllForms),
                         FormParamName);

}  // namespace
}  // namespace gelu::testing
#endif  // HWY_ONCE
