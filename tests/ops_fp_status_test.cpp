// The 16-bit kernels and the calling thread's FP status register (MXCSR).
// They read its overflow and denormal-operand flags to find the results
// that need the overflow-boundary rule (src/cpu/fp_status.hpp): a call
// leaves a flag the caller had set still set, and where the flags cannot
// detect (DAZ on, exceptions unmasked) the kernels test every result, so the
// results are the same and nothing traps; inputs whose results are numbers
// raise no invalid, divide-by-zero or overflow flag. x86 only; every SIMD
// target.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/op_table.hpp"
#include "core/run_op.hpp"
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
using testing::kDTypes;
using testing::kForms;

constexpr unsigned kInvalid = 0x0001, kDivideByZero = 0x0004;
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

// Every op of the table, form and dtype on inputs whose results are
// numbers: pre-activations from tiny to the dtype's largest (core, tail,
// large and huge lanes mixed in one pair, pairs wholly in the tail, long
// runs of tail lanes), in a second pass with infinities among them; dy, addends and
// gates in [-1, 1]. A call raises no invalid, divide-by-zero or overflow flag: a caller
// who unmasks them must not trap on such inputs (a lane past the core computes results
// that are discarded, but computes them quietly). The outputs are finite (numbers, with
// infinite inputs).
TEST_P(FpStatus, InputsRaiseNoInvalidOrOverflow) {
  constexpr int64_t kRows = 3, kCols = 1030;  // odd halves, several blocks
  std::mt19937 g(5);
  std::uniform_real_distribution<double> unit(-1.0, 1.0), tail(3.5, 40.0),
      core(-4.0, 4.0);
  std::uniform_int_distribution<int> pick(0, 9);
  for (bool with_inf : {false, true}) {
    for (DType t : kDTypes) {
      const int max_exp = t == DType::f16 ? 15 : 127;
      std::uniform_int_distribution<int> huge_exp(max_exp - 7, max_exp),
          mid_exp(4, std::min(max_exp, 17));
      const float largest = t == DType::f16    ? 65504.0f
                            : t == DType::bf16 ? 0x1.fep127f
                                               : 0x1.fffffep127f;
      // Element i's pre-activation: its kind switches every 300 elements
      // between a mix and a run wholly in the tail.
      auto pre_activation = [&](int64_t i) -> double {
        const double sign = unit(g) < 0 ? -1.0 : 1.0;
        const int kind = (i / 300) % 3 == 2 ? 7 + pick(g) % 3 : pick(g);
        if (kind <= 3) return core(g);
        if (kind <= 5) return sign * tail(g);
        // Around 2^16, where the kernels stop running the core on a tail lane.
        if (kind == 6) return sign * std::ldexp(1.0 + unit(g) * 0.4, mid_exp(g));
        if (kind == 7) return sign * std::ldexp(1.0 + unit(g) * 0.4, huge_exp(g));
        if (kind == 8) return sign * double(largest);
        if (with_inf) return sign * HUGE_VAL;
        // 2^30, 2^31: an f32 lane converted to int32 would be out of range.
        return t == DType::f16 ? sign * 0.5 * largest
                               : sign * std::ldexp(1.0, 30 + pick(g) % 2);
      };
      for (const core::OpDecl& op : core::all_ops()) {
        for (Approx form : kForms) {
          SCOPED_TRACE(std::string(op.name) + " " + dtype_name(t) + " " +
                       approx_name(form) + (with_inf ? " with infinities" : ""));
          const std::vector<int64_t> primary{kRows, kCols};
          std::vector<Buffer> bufs;
          for (int i = 0; i < op.num_tensors; ++i) {
            const core::TensorDecl& d = op.tensors[i];
            bufs.emplace_back(t, core::tensor_shape(op, i, primary));
            Buffer& b = bufs.back();
            const int64_t cols = b.shape().back();
            for (int64_t e = 0; e < b.size(); ++e) {
              const bool gate = op.kind == core::OpKind::gated && e % cols >= cols / 2;
              if (d.output()) {
                b.set(e, 0.0f);
              } else if (d.role == core::Role::x && !gate) {
                b.set(e, ref::stored(t, pre_activation(e)));
              } else {
                b.set(e, ref::stored(t, unit(g)));
              }
            }
          }
          std::vector<TensorRef> refs;
          for (Buffer& b : bufs) refs.push_back(b.ref());
          unsigned flags = 0;
          {
            ScopedCsr csr(kDefaultCsr);
            core::call_op(op, refs, OneThread(form));
            flags = _mm_getcsr() & (kInvalid | kDivideByZero | kOverflow);
          }
          EXPECT_EQ(flags & kInvalid, 0u) << "invalid flag";
          EXPECT_EQ(flags & kDivideByZero, 0u) << "divide-by-zero flag";
          EXPECT_EQ(flags & kOverflow, 0u) << "overflow flag";
          for (int i = 0; i < op.num_tensors; ++i) {
            if (!op.tensors[i].output()) continue;
            int64_t bad = 0;
            for (int64_t e = 0; e < bufs[i].size(); ++e) {
              const float v = bufs[i].get(e);
              if (with_inf ? std::isnan(v) : !std::isfinite(v)) ++bad;
            }
            EXPECT_EQ(bad, 0) << op.tensors[i].name
                              << (with_inf ? ": NaN elements"
                                           : ": elements not finite");
          }
        }
      }
    }
  }
}

GELU_INSTANTIATE_PER_TARGET(FpStatus);

}  // namespace
}  // namespace gelu

#endif  // x86
