// NaN propagation through every op, every NaN bit pattern of bf16 and f16
// (a spread of them for f32), in every input, on every SIMD target.
//
// Why: the bf16 pair stores round without a NaN check (src/cpu/storage-inl.h,
// BF16Pairs::Store2), which is right only if every NaN a kernel produces
// has a quiet bit and so cannot carry into the exponent. A NaN that enters
// through a fused op's second input (bias, b, the GeGLU gate, dy) takes
// other arithmetic than the plain gelu's, so each gets its own check: an
// output is NaN exactly where an input it depends on is NaN, finite
// elsewhere (no NaN leaks across lanes, rows or dbias columns), and never
// the poison pattern (a signalling NaN: unwritten, or passed through).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "kernels_test_support.hpp"
#include "test_support.hpp"

namespace gelu::testing {
namespace {

// Every NaN of bf16 (254) and f16 (2046); for f32, quiet and signalling
// NaNs of both signs with low, high and full payloads.
std::vector<uint32_t> nan_patterns(DType t) {
  std::vector<uint32_t> out;
  if (t == DType::f32) {
    for (const uint32_t sign : {0u, 0x80000000u})
      for (const uint32_t m : {0x400000u, 0x400001u, 0x7fffffu, 0x000001u, 0x3fffffu,
                               0x200000u, 0x012345u, 0x7f0000u, 0x00ffffu})
        out.push_back(sign | 0x7f800000u | m);
    return out;
  }
  const uint32_t exp = t == DType::bf16 ? 0x7f80u : 0x7c00u;
  const uint32_t mant = t == DType::bf16 ? 0x7fu : 0x3ffu;
  for (const uint32_t sign : {0u, 0x8000u})
    for (uint32_t m = 1; m <= mant; ++m) out.push_back(sign | exp | m);
  return out;
}

using NanAt = std::function<bool(int64_t)>;

// Element i: the next NaN pattern where nan_at(i), else a finite value in
// [-10, 6.5] (the core and the negative tail).
void fill(Buffer& b, const std::vector<uint32_t>& pats, const NanAt& nan_at) {
  const size_t width = dtype_size(b.dtype());
  size_t next = 0;
  for (int64_t i = 0; i < b.size(); ++i) {
    if (nan_at(i)) {
      const uint32_t p = pats[next++ % pats.size()];
      std::memcpy(static_cast<unsigned char*>(b.data()) + width * i, &p, width);
    } else {
      b.set(i, -10.0f + 0.75f * static_cast<float>((i * 7) % 23));
    }
  }
}

void expect_nan_exactly_where(const Buffer& out, const NanAt& nan_at,
                              const std::string& what) {
  int64_t wrong = 0, first = -1;
  for (int64_t i = 0; i < out.size(); ++i) {
    const float v = out.get(i);
    const bool ok = nan_at(i)
                        ? (std::isnan(v) && out.bits(i) != poison_bits(out.dtype()))
                        : std::isfinite(v);
    if (!ok && wrong++ == 0) first = i;
  }
  EXPECT_EQ(wrong, 0) << what << ": first wrong element " << first << " (bits 0x"
                      << std::hex << (first >= 0 ? out.bits(first) : 0) << std::dec
                      << ", NaN expected: " << (first >= 0 && nan_at(first)) << ")";
  EXPECT_TRUE(out.guard_intact()) << what << ": wrote past the end";
}

bool never(int64_t) { return false; }

class NanPatterns : public KernelTarget {
 protected:
  // rows x cols with cols = 3 * patterns + 5: every third element of a
  // NaN-bearing input is a NaN, so each pattern appears at least once even
  // in a 1-D bias, and no row length is a multiple of a vector.
  template <class Fn>
  void ForEachCase(Fn fn) {
    for (const DType t : kDTypes)
      for (const Approx form : kForms) {
        const auto pats = nan_patterns(t);
        const int64_t cols = 3 * static_cast<int64_t>(pats.size()) + 5;
        fn(t, form, pats, int64_t{3}, cols,
           std::string(approx_name(form)) + " " + dtype_name(t));
      }
  }
};

bool third(int64_t i) { return i % 3 == 0; }

TEST_P(NanPatterns, Gelu) {
  ForEachCase([](DType t, Approx form, const auto& pats, int64_t rows, int64_t cols,
                 const std::string& w) {
    Buffer x(t, {rows, cols}), y(t, {rows, cols}), dy(t, {rows, cols}),
        dx(t, {rows, cols});
    for (const bool nan_in_x : {true, false}) {
      fill(x, pats, nan_in_x ? NanAt(third) : NanAt(never));
      fill(dy, pats, nan_in_x ? NanAt(never) : NanAt(third));
      y.poison();
      dx.poison();
      gelu::gelu(x.cref(), y.ref(), {form, 0});
      gelu::gelu_backward(dy.cref(), x.cref(), dx.ref(), {form, 0});
      expect_nan_exactly_where(y, nan_in_x ? NanAt(third) : NanAt(never), "gelu " + w);
      expect_nan_exactly_where(dx, third,
                               "gelu_backward " + w + (nan_in_x ? " (x)" : " (dy)"));
    }
  });
}

// Which input of bias_gelu(_backward) holds the NaNs.
enum class BiasInput { x, bias, dy };

TEST_P(NanPatterns, BiasGelu) {
  ForEachCase([](DType t, Approx form, const auto& pats, int64_t rows, int64_t cols,
                 const std::string& w) {
    Buffer x(t, {rows, cols}), bias(t, {cols}), dy(t, {rows, cols}), y(t, {rows, cols}),
        dx(t, {rows, cols}), dbias(t, {cols});
    for (const BiasInput in : {BiasInput::x, BiasInput::bias, BiasInput::dy}) {
      const std::string wi = w + (in == BiasInput::x      ? " (x)"
                                  : in == BiasInput::bias ? " (bias)"
                                                          : " (dy)");
      fill(x, pats, in == BiasInput::x ? NanAt(third) : NanAt(never));
      fill(bias, pats, in == BiasInput::bias ? NanAt(third) : NanAt(never));
      fill(dy, pats, in == BiasInput::dy ? NanAt(third) : NanAt(never));
      // A NaN in element (r, c) of x or dy, or in bias[c].
      const NanAt elem = [&](int64_t i) {
        return in == BiasInput::bias ? third(i % cols) : third(i);
      };
      // dbias[c] is NaN where any row of column c is.
      const NanAt column = [&](int64_t c) {
        for (int64_t r = 0; r < rows; ++r)
          if (elem(r * cols + c)) return true;
        return false;
      };
      if (in != BiasInput::dy) {
        y.poison();
        gelu::bias_gelu(x.cref(), bias.cref(), y.ref(), {form, 0});
        expect_nan_exactly_where(y, elem, "bias_gelu " + wi);
      }
      dx.poison();
      dbias.poison();
      gelu::bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), dbias.ref(),
                               {form, 0});
      expect_nan_exactly_where(dx, elem, "bias_gelu_backward dx " + wi);
      expect_nan_exactly_where(dbias, column, "bias_gelu_backward dbias " + wi);
    }
  });
}

TEST_P(NanPatterns, AddGelu) {
  ForEachCase([](DType t, Approx form, const auto& pats, int64_t rows, int64_t cols,
                 const std::string& w) {
    Buffer a(t, {rows, cols}), b(t, {rows, cols}), dy(t, {rows, cols}),
        y(t, {rows, cols}), dx(t, {rows, cols});
    for (const int in : {0, 1, 2}) {  // NaNs in a, b or dy
      const std::string wi = w + (in == 0 ? " (a)" : in == 1 ? " (b)" : " (dy)");
      fill(a, pats, in == 0 ? NanAt(third) : NanAt(never));
      fill(b, pats, in == 1 ? NanAt(third) : NanAt(never));
      fill(dy, pats, in == 2 ? NanAt(third) : NanAt(never));
      if (in != 2) {
        y.poison();
        gelu::add_gelu(a.cref(), b.cref(), y.ref(), {form, 0});
        expect_nan_exactly_where(y, third, "add_gelu " + wi);
      }
      dx.poison();
      gelu::add_gelu_backward(dy.cref(), a.cref(), b.cref(), dx.ref(), {form, 0});
      expect_nan_exactly_where(dx, third, "add_gelu_backward " + wi);
    }
  });
}

// Which part of GeGLU's inputs holds the NaNs: the value half of x (the
// gelu input), the gate half, or dy.
enum class GegluInput { value, gate, dy };

TEST_P(NanPatterns, Geglu) {
  ForEachCase([](DType t, Approx form, const auto& pats, int64_t rows, int64_t cols,
                 const std::string& w) {
    const int64_t h = cols;
    Buffer x(t, {rows, 2 * h}), dy(t, {rows, h}), y(t, {rows, h}), dx(t, {rows, 2 * h});
    for (const GegluInput in : {GegluInput::value, GegluInput::gate, GegluInput::dy}) {
      const std::string wi = w + (in == GegluInput::value  ? " (value half)"
                                  : in == GegluInput::gate ? " (gate half)"
                                                           : " (dy)");
      // x element i is (row i / 2h, column i % 2h); the gate half starts at h.
      const NanAt x_nan = [&](int64_t i) {
        const int64_t c = i % (2 * h);
        if (in == GegluInput::value) return c < h && third(c);
        if (in == GegluInput::gate) return c >= h && third(c - h);
        return false;
      };
      fill(x, pats, x_nan);
      fill(dy, pats, in == GegluInput::dy ? NanAt(third) : NanAt(never));
      // y[r, c] = gelu(value) * gate: NaN when either is.
      const NanAt y_nan = [&](int64_t i) {
        return in != GegluInput::dy && third(i % h);
      };
      // dx[r, c < h] = dy gate gelu'(value): NaN for any input;
      // dx[r, h + c] = dy gelu(value): NaN for value and dy, not the gate.
      const NanAt dx_nan = [&](int64_t i) {
        const int64_t c = i % (2 * h);
        const int64_t r = i / (2 * h);
        if (c < h) return in == GegluInput::dy ? third(r * h + c) : third(c);
        if (in == GegluInput::gate) return false;
        return in == GegluInput::dy ? third(r * h + c - h) : third(c - h);
      };
      if (in != GegluInput::dy) {
        y.poison();
        gelu::geglu(x.cref(), y.ref(), {form, 0});
        expect_nan_exactly_where(y, y_nan, "geglu " + wi);
      }
      dx.poison();
      gelu::geglu_backward(dy.cref(), x.cref(), dx.ref(), {form, 0});
      expect_nan_exactly_where(dx, dx_nan, "geglu_backward " + wi);
    }
  });
}

GELU_INSTANTIATE_PER_TARGET(NanPatterns);

}  // namespace
}  // namespace gelu::testing
