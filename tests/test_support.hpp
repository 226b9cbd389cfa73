// Shared helpers for the public-API tests: typed buffers with poison, random
// inputs that reach the negative tail, and the accuracy checks of the
// contract (one definition, used by every op's test).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "gelu/gelu.hpp"
#include "ref/contract.hpp"
#include "ref/convert.hpp"
#include "ref/elements.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu::testing {

// A poison bit pattern per dtype: a signalling NaN, which no arithmetic
// produces (results are quiet NaNs), so a poisoned element that survives a
// call was never written.
inline uint32_t poison_bits(DType t) {
  switch (t) {
    case DType::f32: return 0x7fa5a5a5u;
    case DType::bf16: return 0x7fa5u;
    case DType::f16: return 0x7d55u;
  }
  return 0;
}

// A contiguous tensor of one dtype, elements read and written as float.
class Buffer {
 public:
  Buffer(DType t, std::vector<int64_t> shape)
      : t_(t),
        shape_(std::move(shape)),
        n_(numel(shape_)),
        bytes_(static_cast<size_t>(n_) * dtype_size(t) + 64) {}

  DType dtype() const { return t_; }
  int64_t size() const { return n_; }
  const std::vector<int64_t>& shape() const { return shape_; }
  void* data() { return bytes_.data(); }
  const void* data() const { return bytes_.data(); }
  TensorRef ref() { return {data(), t_, shape_}; }
  ConstTensorRef cref() const { return {data(), t_, shape_}; }

  float get(int64_t i) const { return ref::load(t_, bytes_.data(), i); }
  // Stores v rounded to the dtype; get(i) then returns the stored value.
  void set(int64_t i, float v) { ref::store(t_, bytes_.data(), i, v); }
  uint32_t bits(int64_t i) const {
    uint32_t u = 0;
    std::memcpy(&u, bytes_.data() + dtype_size(t_) * i, dtype_size(t_));
    return u;
  }
  // Poisons every element and the 64 guard bytes past the end.
  void poison() {
    const uint32_t p = poison_bits(t_);
    for (int64_t i = 0; i < n_; ++i)
      std::memcpy(bytes_.data() + dtype_size(t_) * i, &p, dtype_size(t_));
    std::memset(bytes_.data() + n_ * dtype_size(t_), 0xa5, 64);
  }
  bool guard_intact() const {
    for (size_t i = static_cast<size_t>(n_) * dtype_size(t_); i < bytes_.size(); ++i)
      if (bytes_[i] != 0xa5) return false;
    return true;
  }
  const std::vector<unsigned char>& raw() const { return bytes_; }

 private:
  DType t_;
  std::vector<int64_t> shape_;
  int64_t n_;
  std::vector<unsigned char> bytes_;
};

// Inputs for accuracy tests: mostly N(0, 3), some in the negative tail down
// to -15 and some near the derivative's root, so every region is exercised.
inline void fill_inputs(Buffer& b, uint32_t seed, float scale = 3.0f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, scale);
  std::uniform_real_distribution<float> tail(-15.0f, -3.0f);
  std::uniform_real_distribution<float> root(-0.9f, -0.6f);
  for (int64_t i = 0; i < b.size(); ++i) {
    const uint32_t pick = rng() % 8;
    b.set(i, pick == 0 ? tail(rng) : pick == 1 ? root(rng) : normal(rng));
  }
}

// The exact value the contract compares with, and for a backward the scale
// |dy| * (|t1| + |t2|) its bound is measured in.
//
// `factor` is what an f32 intermediate (gelu'(x) in a backward, gelu(a) in
// GeGLU) is multiplied by. Where that intermediate is subnormal it carries
// an absolute error of up to its bound in subnormal spacings (2^-149), which
// the multiply scales by |factor|: the unit of error is never below
// |factor| * 2^-149. Elsewhere this changes nothing.
struct Expect {
  double value;
  double scale;   // 0: forward (ULPs of the value itself)
  double factor;  // multiplier of the f32 intermediate
};

inline constexpr double kF32Subnormal = 0x1p-149;

inline Expect expect_fwd(Approx a, double x, double factor = 1.0) {
  return {ref::gelu_fwd(a, x) * factor, 0.0, factor};
}
inline Expect expect_bwd(Approx a, double x, double dy) {
  const ref::GradTerms g = ref::gelu_bwd_terms(a, x);
  return {dy * (g.t1 + g.t2), std::fabs(dy) * (std::fabs(g.t1) + std::fabs(g.t2)), dy};
}

// The accuracy contract's bounds (src/ref/contract.hpp).
using ref::bound_ulps;

inline double error_ulps(DType t, double got, const Expect& e) {
  return ref::contract_ulp_error(t, got, e.value, e.scale, e.factor);
}

// Checks out[i] against expect(i) for every element; reports and returns
// the worst error in ULPs.
template <class ExpectFn>
double check_all(const Buffer& out, ExpectFn expect, double bound,
                 const std::string& what) {
  double worst = 0.0;
  int64_t worst_i = -1, unwritten = 0;
  for (int64_t i = 0; i < out.size(); ++i) {
    if (out.bits(i) == poison_bits(out.dtype())) {
      ++unwritten;
      continue;
    }
    const double err = error_ulps(out.dtype(), out.get(i), expect(i));
    if (!(err <= worst)) {
      worst = err;
      worst_i = i;
    }
  }
  EXPECT_EQ(unwritten, 0) << what << ": elements left unwritten";
  EXPECT_TRUE(out.guard_intact()) << what << ": wrote past the end";
  if (worst_i >= 0) {
    EXPECT_LE(worst, bound) << what << ": worst " << worst << " ulp at element "
                            << worst_i << ", got " << out.get(worst_i) << ", expected "
                            << expect(worst_i).value;
  }
  return worst;
}

// Every form of the library (GELU_FUSION_FORMS): a new form is tested by
// every suite that loops over these.
inline constexpr const auto& kForms = kAllForms;

// Test-name suffix "none_f32" for suites parameterised by (form, dtype).
inline std::string form_dtype_name(
    const ::testing::TestParamInfo<std::tuple<Approx, DType>>& i) {
  return std::string(approx_name(std::get<0>(i.param))) + "_" +
         dtype_name(std::get<1>(i.param));
}
inline const DType kDTypes[] = {DType::f32, DType::bf16, DType::f16};

}  // namespace gelu::testing
