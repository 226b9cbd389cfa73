// The 16-bit kernels and the calling thread's FP status register (MXCSR).
// They read its overflow and denormal-operand flags to find the results
// that need the overflow-boundary rule (src/cpu/fp_status.hpp): a call
// leaves a flag the caller had set still set, and where the flags cannot
// detect (DAZ on, exceptions unmasked) the kernels test every result, so the
// results are the same and nothing traps. x86 only; every SIMD target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gelu/gelu.hpp"
#include "kernels_test_support.hpp"
#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "test_support.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <xmmintrin.h>

namespace gelu {
namespace {

using testing::Buffer;

constexpr unsigned kDenormal = 0x0002, kOverflow = 0x0008;
constexpr unsigned kDenormalsAreZero = 0x0040;
constexpr unsigned kDenormalMask = 0x0100, kOverflowMask = 0x0400;

// MXCSR set to `csr` for the scope (this thread; one thread per call).
class ScopedCsr {
 public:
  explicit ScopedCsr(unsigned csr) : old_(_mm_getcsr()) { _mm_setcsr(csr); }
  ~ScopedCsr() { _mm_setcsr(old_); }
  ScopedCsr(const ScopedCsr&) = delete;
  ScopedCsr& operator=(const ScopedCsr&) = delete;

 private:
  unsigned old_;
};

// The default MXCSR (exceptions masked, round to nearest, no FTZ/DAZ), no
// flags set.
constexpr unsigned kDefaultCsr = 0x1f80;

constexpr Options kOneThread{.num_threads = 1};

Options OneThread(Approx a) {
  Options o = kOneThread;
  o.approximate = a;
  return o;
}

std::vector<uint16_t> Bits(const Buffer& b, int64_t n) {
  std::vector<uint16_t> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = static_cast<const uint16_t*>(b.data())[i];
  return v;
}

class FpStatus : public testing::KernelTarget {};

constexpr int64_t kN = 4096;

// gelu_backward with results spread over the boundary (and past it) gives
// the same bits with the caller's overflow and denormal flags set, and
// leaves them set.
TEST_P(FpStatus, CallersFlagsStaySet) {
  for (DType t : {DType::bf16, DType::f16}) {
    SCOPED_TRACE(dtype_name(t));
    const double boundary = t == DType::f16 ? 65520.0 : 0x1.ffp127;
    std::mt19937 g(7);
    std::uniform_real_distribution<double> spread(1 - 0x1p-7, 1 + 0x1p-7),
        pre(0.3, 3.0);
    Buffer dy(t, {kN}), x(t, {kN}), plain(t, {kN}), flagged(t, {kN});
    for (int64_t i = 0; i < kN; ++i) {
      x.set(i, ref::stored(t, pre(g)));
      const double target = (i % 2 ? -1 : 1) * boundary * spread(g);
      dy.set(i, ref::stored(t, target / ref::gelu_bwd(Approx::none, x.get(i))));
    }
    {
      ScopedCsr csr(kDefaultCsr);
      gelu_backward(dy.cref(), x.cref(), plain.ref(), kOneThread);
    }
    {
      ScopedCsr csr(kDefaultCsr | kOverflow | kDenormal);
      gelu_backward(dy.cref(), x.cref(), flagged.ref(), kOneThread);
      EXPECT_EQ(_mm_getcsr() & (kOverflow | kDenormal), kOverflow | kDenormal);
    }
    EXPECT_EQ(Bits(plain, kN), Bits(flagged, kN));
  }
}

// bf16 results that are subnormal (from normal inputs) are rounded, not
// flushed (the AVX512_BF16 rounding flushes them: its stores raise the
// denormal flag for them and the block is rerun), and in place the same.
// Under DAZ both ways round them as zero, as DAZ asks.
TEST_P(FpStatus, SubnormalResults) {
  std::mt19937 g(11);
  std::uniform_real_distribution<double> pre(-3.0, 3.0), scale(0.5, 1.0);
  const DType t = DType::bf16;
  Buffer dy(t, {kN}), x(t, {kN}), dx(t, {kN}), in_place(t, {kN});
  for (int64_t i = 0; i < kN; ++i) {
    x.set(i, ref::stored(t, pre(g)));
    dy.set(i, ref::stored(t, 0x1p-125 * scale(g)));  // normal: >= 2^-126
  }
  for (bool daz : {false, true}) {
    SCOPED_TRACE(daz ? "DAZ" : "default MXCSR");
    std::memcpy(in_place.data(), dy.data(), kN * sizeof(uint16_t));
    {
      ScopedCsr csr(kDefaultCsr | (daz ? kDenormalsAreZero : 0));
      gelu_backward(dy.cref(), x.cref(), dx.ref(), kOneThread);
      gelu_backward(in_place.cref(), x.cref(), in_place.ref(), kOneThread);
    }
    EXPECT_EQ(Bits(dx, kN), Bits(in_place, kN));
    if (daz) continue;
    int subnormal = 0;
    for (int64_t i = 0; i < kN; ++i) {
      const float v = dx.get(i);
      if (std::fpclassify(v) == FP_SUBNORMAL) ++subnormal;
      const double exact = double(dy.get(i)) * ref::gelu_bwd(Approx::none, x.get(i));
      EXPECT_EQ(v, ref::stored(t, exact)) << "dx[" << i << "], exact " << exact;
    }
    EXPECT_GT(subnormal, kN / 2) << "the inputs were to give subnormal results";
  }
}

// geglu's y = gelu(v) * gate stored as the largest finite value, with
// overflow and denormal exceptions unmasked: f16's just past the boundary
// (in the band the rule maps to it: rounding in f16 would overflow), bf16's
// just below it (where a flagged store's probe would overflow). The kernels
// must raise neither.
TEST_P(FpStatus, NoTrapWithExceptionsUnmasked) {
  struct Format {
    DType t;
    double lo, hi;  // gelu(v) * gate to aim for
    float largest;
  };
  const Format kFormats[] = {
      {DType::f16, 65520.0 * (1 + 0x1p-20), 65520.0 * (1 + 0x1p-17), 65504.0f},
      {DType::bf16, 0x1.fe8p127, 0x1.ffp127 * (1 - 0x1p-20), 0x1.fep127f}};
  for (const Format& f : kFormats) {
    SCOPED_TRACE(dtype_name(f.t));
    // (v, gate) with v in the core and gelu(v) * gate in [lo, hi], away
    // from the ends by more than f32's rounding: for each stored v, the
    // stored gates around the one that aims for lo.
    std::vector<std::pair<float, float>> pairs;
    const double lo = f.lo, hi = f.hi;
    for (double v0 = 1.0; v0 < 3.5 && pairs.size() < 64; v0 += 0x1p-9) {
      const float v = ref::stored(f.t, v0);
      const double gelu_v = ref::gelu_fwd(Approx::none, v);
      for (int k = -4; k <= 4; ++k) {
        const float gate = ref::stored(f.t, lo / gelu_v * (1 + k * 0x1p-12));
        const double y = gelu_v * gate;
        if (y >= lo && y <= hi && (pairs.empty() || pairs.back().first != v))
          pairs.emplace_back(v, gate);
      }
    }
    ASSERT_GE(pairs.size(), 8u) << "pairs with gelu(v) * gate in the band";
    const int64_t rows = 2, h = 2048;  // rows long enough for flagged stores
    Buffer x(f.t, {rows, 2 * h}), y(f.t, {rows, h});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; ++j) {
        const auto& [v, gate] = pairs[(r * h + j) % pairs.size()];
        x.set(r * 2 * h + j, v);
        x.set(r * 2 * h + h + j, gate);
      }
    {
      ScopedCsr csr(kDefaultCsr & ~(kOverflowMask | kDenormalMask));
      geglu(x.cref(), y.ref(), OneThread(Approx::none));
    }
    for (int64_t i = 0; i < rows * h; ++i)
      EXPECT_EQ(y.get(i), f.largest) << "y[" << i << "]";
  }
}

// Products exactly on the boundary in f32 whose exact value is below it
// (gelu(v) = v in f32 at these v, v gelu(v) < v) in rows long enough for the
// flagged stores: stored as the largest finite value, where rounding on
// would give inf. (OverflowBoundary.ResultOnTheBoundaryInF32 has short rows,
// which test every result.)
TEST_P(FpStatus, ResultOnTheBoundaryInLongRows) {
  struct Exact {
    DType t;
    float v, gate, largest;  // v * gate = the boundary
  };
  const Exact kExact[] = {{DType::f16, 45.0f, 1456.0f, 65504.0f},
                          {DType::bf16, 73.0f, 0x1.cp121f, 0x1.fep127f}};
  for (const Exact& e : kExact) {
    SCOPED_TRACE(dtype_name(e.t));
    const int64_t rows = 2, h = 2048;
    Buffer x(e.t, {rows, 2 * h}), y(e.t, {rows, h}), dy(e.t, {rows, h});
    Buffer dx(e.t, {rows, 2 * h});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; ++j) {
        x.set(r * 2 * h + j, j % 2 ? -e.v : e.v);
        x.set(r * 2 * h + h + j, j % 2 ? -e.gate : e.gate);
        dy.set(r * h + j, e.gate);  // dx(gate) = dy * gelu(v)
      }
    geglu(x.cref(), y.ref(), kOneThread);
    for (int64_t i = 0; i < rows * h; i += 2)
      EXPECT_EQ(y.get(i), e.largest) << "geglu y[" << i << "]";
    geglu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), kOneThread);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; j += 2) {
        EXPECT_EQ(y.get(r * h + j), e.largest)
            << "geglu_backward y[" << r * h + j << "]";
        EXPECT_EQ(dx.get(r * 2 * h + h + j), e.largest)
            << "geglu_backward dx(gate)[" << r * 2 * h + h + j << "]";
      }
  }
}

GELU_INSTANTIATE_PER_TARGET(FpStatus);

}  // namespace
}  // namespace gelu

#endif  // x86
