// Every kernel of src/cpu/kernels.hpp on every SIMD target this CPU runs.
//
// Two checks, so that a failure says which layer is wrong:
//  - PlainAccuracy: gelu_fwd / gelu_bwd against the double reference with
//    the contract's bounds (every form and dtype, every tail length).
//  - *MatchPlainF32: every fused, gated, 16-bit, strided, in-place or tail
//    variant equals, bit for bit, the plain f32 kernel on the same target
//    applied to the f32 pre-activation and rounded once to the dtype. The
//    plain kernel uses the math of the variant's result dtype (bf16/f16
//    results use a cheaper core; bias_bwd keeps the f32 one for its dbias
//    sums). The drivers add no error of their own, and any lane that is
//    computed wrong, skipped, or written out of its range shows up.
// Outputs are poisoned first; guard bytes catch writes past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "kernels_test_support.hpp"
#include "ref/convert.hpp"
#include "test_support.hpp"

namespace gelu::testing {
namespace {

using F = std::vector<float>;

// 0 .. 3 * 16 + 1 (every tail of every target up to 16 lanes), primes, large.
std::vector<int64_t> sizes() {
  std::vector<int64_t> s;
  for (int64_t n = 0; n <= 49; ++n) s.push_back(n);
  for (int64_t n : {61, 127, 1031, 65537}) s.push_back(n);
  return s;
}

F values(const Buffer& b) {
  F v(b.size());
  for (int64_t i = 0; i < b.size(); ++i) v[i] = b.get(i);
  return v;
}

// The plain f32 kernels over a zero-padded copy, so that every wanted
// element comes from a full vector.
F pad(const F& v) {
  F p(v);
  p.resize(v.size() + 64 - v.size() % 16, 0.0f);
  return p;
}
// `math`: the dtype whose results the kernel computes (f32: the f32 math).
F plain_fwd(Approx a, DType math, const F& x) {
  F px = pad(x), y(px.size());
  cpu::gelu_fwd_f32_with_math_of(math, a, static_cast<int64_t>(px.size()), px.data(),
                                 y.data());
  y.resize(x.size());
  return y;
}
F plain_bwd(Approx a, DType math, const F& dy, const F& x) {
  F pd = pad(dy), px = pad(x), dx(px.size());
  cpu::gelu_bwd_f32_with_math_of(math, a, static_cast<int64_t>(px.size()), pd.data(),
                                 px.data(), dx.data());
  dx.resize(x.size());
  return dx;
}

uint32_t round_bits(DType t, float v) {
  switch (t) {
    case DType::f32: return f32_bits(v);
    case DType::bf16: return f32_to_bf16(v);
    case DType::f16: return f32_to_f16(v);
  }
  return 0;
}

// out[i] == round(want[i]) bit for bit wherever want_at(i) >= 0 names an
// index into want, and untouched (poison) elsewhere.
template <class At>
void expect_bits(const Buffer& out, const F& want, At want_at,
                 const std::string& what) {
  ASSERT_TRUE(out.guard_intact()) << what << ": wrote past the end";
  for (int64_t i = 0; i < out.size(); ++i) {
    const int64_t k = want_at(i);
    const uint32_t w = k >= 0 ? round_bits(out.dtype(), want[k])
                              : poison_bits(out.dtype());
    ASSERT_EQ(out.bits(i), w) << what << ": element " << i
                              << (k >= 0 ? " (computed)" : " (must stay untouched)");
  }
}
void expect_bits(const Buffer& out, const F& want, const std::string& what) {
  expect_bits(
      out, want, [](int64_t i) { return i; }, what);
}

// Element `i` of a buffer, as the kernels take it.
void* at(Buffer& b, int64_t i) {
  return static_cast<char*>(b.data()) + i * static_cast<int64_t>(dtype_size(b.dtype()));
}

// A copy of b's elements with poisoned guard bytes past the end.
Buffer clone(const Buffer& b) {
  Buffer c(b.dtype(), b.shape());
  c.poison();
  std::memcpy(c.data(), b.data(),
              static_cast<size_t>(b.size()) * dtype_size(b.dtype()));
  return c;
}

class KernelsOps : public KernelTarget {
 protected:
  // Highway's HWY_NATIVE_FMA targets among those compiled here.
  static bool target_has_fma() {
    const std::string t = cpu::target_name();
    return t == "AVX2" || t == "AVX3" || t == "AVX3_DL";
  }
  std::string what(const char* op, Approx a, DType t, int64_t n) const {
    return std::string(op) + " " + approx_name(a) + " " + dtype_name(t) +
           " n=" + std::to_string(n) + " on " + cpu::target_name();
  }
};

TEST_P(KernelsOps, PlainAccuracy) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (int64_t n : sizes()) {
        Buffer x(t, {n}), dy(t, {n}), y(t, {n}), dx(t, {n});
        fill_inputs(x, 100 + n);
        fill_inputs(dy, 200 + n, 1.0f);
        y.poison();
        dx.poison();
        cpu::gelu_fwd(a, t, n, x.data(), y.data());
        cpu::gelu_bwd(a, t, n, dy.data(), x.data(), dx.data());
        check_all(
            y, [&](int64_t i) { return expect_fwd(a, x.get(i)); }, bound_ulps(t),
            what("gelu_fwd", a, t, n));
        check_all(
            dx, [&](int64_t i) { return expect_bwd(a, x.get(i), dy.get(i)); },
            bound_ulps(t), what("gelu_bwd", a, t, n));
        if (HasFailure()) return;
      }
}

TEST_P(KernelsOps, ElementwiseMatchPlainF32) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (int64_t n : sizes()) {
        Buffer pa(t, {n}), pb(t, {n}), dy(t, {n}), out(t, {n});
        fill_inputs(pa, 300 + n);
        fill_inputs(pb, 400 + n, 1.0f);
        fill_inputs(dy, 500 + n, 1.0f);
        const F av = values(pa), bv = values(pb), dv = values(dy);
        F sum(n);
        for (int64_t i = 0; i < n; ++i) sum[i] = av[i] + bv[i];

        out.poison();
        cpu::gelu_fwd(a, t, n, pa.data(), out.data());
        expect_bits(out, plain_fwd(a, t, av), what("gelu_fwd", a, t, n));
        out.poison();
        cpu::gelu_bwd(a, t, n, dy.data(), pa.data(), out.data());
        expect_bits(out, plain_bwd(a, t, dv, av), what("gelu_bwd", a, t, n));
        out.poison();
        cpu::add_fwd(a, t, n, pa.data(), pb.data(), out.data());
        expect_bits(out, plain_fwd(a, t, sum), what("add_fwd", a, t, n));
        out.poison();
        cpu::add_bwd(a, t, n, dy.data(), pa.data(), pb.data(), out.data());
        expect_bits(out, plain_bwd(a, t, dv, sum), what("add_bwd", a, t, n));

        // In place: the output is an input's own buffer.
        Buffer io = clone(pa);
        cpu::gelu_fwd(a, t, n, io.data(), io.data());
        expect_bits(io, plain_fwd(a, t, av), what("gelu_fwd in place", a, t, n));
        io = clone(dy);
        cpu::gelu_bwd(a, t, n, io.data(), pa.data(), io.data());
        expect_bits(io, plain_bwd(a, t, dv, av), what("gelu_bwd dx=dy", a, t, n));
        io = clone(pa);
        cpu::gelu_bwd(a, t, n, dy.data(), io.data(), io.data());
        expect_bits(io, plain_bwd(a, t, dv, av), what("gelu_bwd dx=x", a, t, n));
        io = clone(pb);
        cpu::add_fwd(a, t, n, pa.data(), io.data(), io.data());
        expect_bits(io, plain_fwd(a, t, sum), what("add_fwd y=b", a, t, n));
        io = clone(dy);
        cpu::add_bwd(a, t, n, io.data(), pa.data(), pb.data(), io.data());
        expect_bits(io, plain_bwd(a, t, dv, sum), what("add_bwd dx=dy", a, t, n));
        if (HasFailure()) return;
      }
}

// An output buffer at a chosen alignment: `shift` elements past a 64-byte
// boundary (0: every target's vector-aligned, as the streamed stores need),
// poisoned, with 64 poisoned guard bytes after its n elements.
class PlacedOut {
 public:
  PlacedOut(DType t, int64_t n, int64_t shift)
      : bytes_(static_cast<size_t>(n) * dtype_size(t)), raw_(bytes_ + 256) {
    const uintptr_t base = reinterpret_cast<uintptr_t>(raw_.data());
    p_ = raw_.data() + ((64 - base % 64) % 64) +
         static_cast<size_t>(shift) * dtype_size(t);
    const uint32_t poison = poison_bits(t);
    for (size_t i = 0; i < bytes_; i += dtype_size(t))
      std::memcpy(p_ + i, &poison, dtype_size(t));
    std::memset(p_ + bytes_, 0xa5, 64);
  }
  void* data() { return p_; }
  // The same bytes as want's elements, and the guard untouched.
  void expect_same(const Buffer& want, const std::string& what) const {
    ASSERT_EQ(0, std::memcmp(p_, want.data(), bytes_)) << what;
    for (size_t i = 0; i < 64; ++i)
      ASSERT_EQ(p_[bytes_ + i], 0xa5) << what << ": guard";
  }

 private:
  size_t bytes_;
  std::vector<unsigned char> raw_;
  unsigned char* p_;
};

// stream = true (non-temporal stores from the outputs' first vector
// boundary on, plain ones before it, plain ones throughout when the outputs
// sit at different offsets from a boundary) writes the same bits as
// stream = false, to every element and nothing past them, for every op,
// form, dtype and tail length. Outputs aligned (shift 0), one or three
// elements off; gelu_bwd's y at shift 3 is aligned while dx is not (the
// fallback). ElementwiseMatchPlainF32 checks the plain path's bits.
TEST_P(KernelsOps, StreamedStoresMatchPlain) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (int64_t n : sizes())
        for (int64_t shift : {0, 1, 3}) {
          const std::string tag = " stream, output shift " + std::to_string(shift);
          Buffer pa(t, {n}), pb(t, {n}), dy(t, {n}), want(t, {n}), want_y(t, {n});
          fill_inputs(pa, 600 + n);
          fill_inputs(pb, 700 + n, 1.0f);
          fill_inputs(dy, 800 + n, 1.0f);
          {
            PlacedOut out(t, n, shift);
            cpu::gelu_fwd(a, t, n, pa.data(), want.data());
            cpu::gelu_fwd(a, t, n, pa.data(), out.data(), true);
            out.expect_same(want, what("gelu_fwd", a, t, n) + tag);
          }
          {
            PlacedOut out(t, n, shift), y(t, n, shift == 3 ? 0 : shift);
            cpu::gelu_bwd(a, t, n, dy.data(), pa.data(), want.data(), want_y.data());
            cpu::gelu_bwd(a, t, n, dy.data(), pa.data(), out.data(), y.data(), true);
            out.expect_same(want, what("gelu_bwd", a, t, n) + tag);
            y.expect_same(want_y, what("gelu_bwd y", a, t, n) + tag);
          }
          {
            PlacedOut out(t, n, shift);
            cpu::gelu_bwd(a, t, n, dy.data(), pa.data(), want.data());
            cpu::gelu_bwd(a, t, n, dy.data(), pa.data(), out.data(), nullptr, true);
            out.expect_same(want, what("gelu_bwd without y", a, t, n) + tag);
          }
          {
            PlacedOut out(t, n, shift);
            cpu::add_fwd(a, t, n, pa.data(), pb.data(), want.data());
            cpu::add_fwd(a, t, n, pa.data(), pb.data(), out.data(), true);
            out.expect_same(want, what("add_fwd", a, t, n) + tag);
          }
          {
            PlacedOut out(t, n, shift);
            cpu::add_bwd(a, t, n, dy.data(), pa.data(), pb.data(), want.data());
            cpu::add_bwd(a, t, n, dy.data(), pa.data(), pb.data(), out.data(), true);
            out.expect_same(want, what("add_bwd", a, t, n) + tag);
          }
          if (HasFailure()) return;
        }
}

// A column block [c0, c0 + cols) of `rows` rows `stride` apart, as the op
// layer's tiling passes it.
struct Block {
  int64_t rows, cols, stride, c0;
};
const Block kFixedBlocks[] = {
    {1, 1, 1, 0},
    {37, 1, 1, 0},
    {5, 3, 3, 0},
    {7, 13, 13, 0},
    {3, 49, 49, 0},
    {2, 1031, 1031, 0},
    {4, 16, 16, 0},
    {5, 7, 20, 3},
    {3, 33, 70, 17},
    {0, 5, 5, 0},
    {4, 0, 6, 2},
    // past one dbias tile (4096 columns), 5 rows: a short group
    {5, 4100, 4111, 5},
    // f32 reads dbias back from dx in tiles of 16384 columns: two whole
    // tiles and a partial one, a group of 4 and a short group, strided
    {5, 2 * 16384 + 33, 2 * 16384 + 42, 7},
    // past 64K columns with 3 rows (one short group)
    {3, 65537 + 11, 65537 + 11, 0},
    // bias_fwd's flat pass over contiguous rows (BiasForwardFlat), near its
    // widest, whose chunks start mid-row; and rows of whole steps past it
    {9, 1000, 1000, 0},
    {6, 1024 + 32, 1024 + 32, 0}};

// Whole rows of the widths around every narrow-row path's limits, each with
// a few odd rows and, below kDbiasNarrowCols, enough rows for more than one
// group of 4 dbias spans and a partial last span; and wide rows around the
// dbias tile and past 64K columns.
std::vector<Block> blocks() {
  std::vector<Block> b(std::begin(kFixedBlocks), std::end(kFixedBlocks));
  for (int64_t c : {1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 128, 129}) {
    b.push_back({3, c, c, 0});
    const int64_t k = c < cpu::kDbiasNarrowCols ? cpu::dbias_span(c) / c : 8;
    b.push_back({4 * k + k / 2 + 1, c, c, 0});
  }
  for (int64_t c : {4095, 4096, 4097}) b.push_back({3, c, c, 0});
  b.push_back({2, 65537, 65537, 0});
  return b;
}

// dbias as src/cpu/kernels.hpp specifies it, from the f32 dx (want_dx) of
// the block: f32 sums over groups of 4 rows, added in double; narrow rows
// by spans of rows.
std::vector<double> want_dbias(const Block& k, const F& want_dx) {
  std::vector<double> db(static_cast<size_t>(k.cols), 0.0);
  auto dx = [&](int64_t r, int64_t j) { return want_dx[r * k.stride + k.c0 + j]; };
  if (!cpu::dbias_narrow(k.rows, k.cols, k.stride)) {
    for (int64_t r0 = 0; r0 < k.rows; r0 += 4)
      for (int64_t j = 0; j < k.cols; ++j) {
        float group = dx(r0, j);
        for (int64_t r = r0 + 1; r < std::min(k.rows, r0 + 4); ++r) group += dx(r, j);
        db[j] += group;
      }
    return db;
  }
  const int64_t span_rows = cpu::dbias_span(k.cols) / k.cols;
  for (int64_t q = 0; q < std::min(span_rows, k.rows); ++q)
    for (int64_t j = 0; j < k.cols; ++j) {
      double per_q = 0.0;
      for (int64_t r0 = q; r0 < k.rows; r0 += 4 * span_rows) {
        float group = dx(r0, j);
        for (int64_t r = r0 + span_rows; r < std::min(k.rows, r0 + 4 * span_rows);
             r += span_rows)
          group += dx(r, j);
        per_q = r0 == q ? static_cast<double>(group) : per_q + group;
      }
      db[j] = q == 0 ? per_q : db[j] + per_q;
    }
  return db;
}

TEST_P(KernelsOps, RowsMatchPlainF32) {
  for (Approx a : kForms)
    for (DType t : kDTypes)
      for (const Block& k : blocks()) {
        const int64_t n = k.rows * k.stride, off = k.c0;
        auto in_block = [&](int64_t i) {
          const int64_t j = i % k.stride - k.c0;
          return j >= 0 && j < k.cols;
        };
        auto at_elem = [&](int64_t i) { return in_block(i) ? i : int64_t{-1}; };
        const std::string w = what("rows", a, t, n) + " block " +
                              std::to_string(k.rows) + "x" + std::to_string(k.cols) +
                              "/" + std::to_string(k.stride) + "+" +
                              std::to_string(k.c0);
        // --- bias: x [rows, stride], bias [stride] ---
        Buffer x(t, {n}), bias(t, {k.stride}), dy(t, {n}), out(t, {n});
        fill_inputs(x, 600 + n);
        fill_inputs(bias, 700 + n, 1.0f);
        fill_inputs(dy, 800 + n, 1.0f);
        const F xv = values(x), bv = values(bias), dv = values(dy);
        F pre(n);
        for (int64_t i = 0; i < n; ++i) pre[i] = xv[i] + bv[i % k.stride];
        // bias_bwd keeps the f32 math for every dtype (its dbias sums).
        const F want_y = plain_fwd(a, t, pre),
                want_dx = plain_bwd(a, DType::f32, dv, pre);

        out.poison();
        cpu::bias_fwd(a, t, k.rows, k.cols, k.stride, at(x, off), at(bias, off),
                      at(out, off));
        expect_bits(out, want_y, at_elem, "bias_fwd " + w);
        // Non-temporal stores: rows over kFlatMaxCols columns stream from
        // each row's first vector boundary (rows start at any alignment).
        out.poison();
        cpu::bias_fwd(a, t, k.rows, k.cols, k.stride, at(x, off), at(bias, off),
                      at(out, off), true);
        expect_bits(out, want_y, at_elem, "bias_fwd streamed " + w);

        std::vector<double> dbias(k.cols + 1, -1.0);
        const std::vector<double> want_db = want_dbias(k, want_dx);
        out.poison();
        cpu::bias_bwd(a, t, k.rows, k.cols, k.stride, at(dy, off), at(x, off),
                      at(bias, off), at(out, off), dbias.data());
        expect_bits(out, want_dx, at_elem, "bias_bwd " + w);
        for (int64_t j = 0; j < k.cols; ++j)
          ASSERT_EQ(dbias[j], want_db[j]) << "bias_bwd dbias column " << j << " " << w;
        ASSERT_EQ(dbias[k.cols], -1.0) << "bias_bwd wrote dbias past cols " << w;
        // Non-temporal stores of dx and y (rows the narrow path leaves; f32
        // then sums dbias in a tile instead of reading dx back): same dx,
        // dbias and y as the plain call.
        {
          Buffer y_plain(t, {n}), y_streamed(t, {n});
          y_plain.poison();
          y_streamed.poison();
          std::vector<double> db_plain(k.cols + 1, -1.0);
          cpu::bias_bwd(a, t, k.rows, k.cols, k.stride, at(dy, off), at(x, off),
                        at(bias, off), at(out, off), db_plain.data(), at(y_plain, off));
          out.poison();
          std::fill(dbias.begin(), dbias.end(), -1.0);
          cpu::bias_bwd(a, t, k.rows, k.cols, k.stride, at(dy, off), at(x, off),
                        at(bias, off), at(out, off), dbias.data(), at(y_streamed, off),
                        true);
          expect_bits(out, want_dx, at_elem, "bias_bwd streamed " + w);
          for (int64_t j = 0; j <= k.cols; ++j)
            ASSERT_EQ(dbias[j], j < k.cols ? want_db[j] : -1.0)
                << "bias_bwd streamed dbias column " << j << " " << w;
          for (int64_t i = 0; i < n; ++i)
            ASSERT_EQ(y_streamed.bits(i), y_plain.bits(i))
                << "bias_bwd streamed y " << w << " element " << i;
          ASSERT_TRUE(y_streamed.guard_intact()) << "bias_bwd streamed y " << w;
        }

        Buffer io = clone(x);  // in place: y = x
        cpu::bias_fwd(a, t, k.rows, k.cols, k.stride, at(io, off), at(bias, off),
                      at(io, off));
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(io.bits(i), in_block(i) ? round_bits(t, want_y[i]) : x.bits(i))
              << "bias_fwd y=x " << w << " element " << i;
        io = clone(dy);  // dx = dy
        std::fill(dbias.begin(), dbias.end(), -1.0);
        cpu::bias_bwd(a, t, k.rows, k.cols, k.stride, at(io, off), at(x, off),
                      at(bias, off), at(io, off), dbias.data());
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(io.bits(i), in_block(i) ? round_bits(t, want_dx[i]) : dy.bits(i))
              << "bias_bwd dx=dy " << w << " element " << i;
        for (int64_t j = 0; j < k.cols; ++j)
          ASSERT_EQ(dbias[j], want_db[j])
              << "bias_bwd dx=dy dbias column " << j << " " << w;

        // --- geglu: x [rows, 2 * stride], gate half `stride` after value ---
        const int64_t h = k.stride;
        Buffer gx(t, {2 * n}), gy(t, {n}), gdx(t, {2 * n});
        fill_inputs(gx, 900 + n);
        const F gxv = values(gx);
        F val(n), gate(n), dg(n);
        for (int64_t r = 0; r < k.rows; ++r)
          for (int64_t j = 0; j < h; ++j) {
            val[r * h + j] = gxv[r * 2 * h + j];
            gate[r * h + j] = gxv[r * 2 * h + h + j];
            dg[r * h + j] = dv[r * h + j] * gate[r * h + j];
          }
        const F gelu_v = plain_fwd(a, t, val), dval = plain_bwd(a, t, dg, val);
        const F ones(n, 1.0f), grad = plain_bwd(a, t, ones, val);
        F want_gy(n), want_gdx(2 * n);
        for (int64_t i = 0; i < n; ++i) {
          const int64_t r = i / h, j = i % h;
          want_gy[i] = gelu_v[i] * gate[i];
          // FMA targets: dy * gate * gelu' rounded once (p + e exactly).
          const float p = dv[i] * gate[i];
          const float e = std::isfinite(p) ? std::fma(dv[i], gate[i], -p) : 0.0f;
          want_gdx[r * 2 * h + j] = target_has_fma() ? std::fma(p, grad[i], e * grad[i])
                                                     : dval[i];
          want_gdx[r * 2 * h + h + j] = dv[i] * gelu_v[i];
        }
        gy.poison();
        cpu::geglu_fwd(a, t, k.rows, k.cols, h, at(gx, off), at(gy, off));
        expect_bits(gy, want_gy, at_elem, "geglu_fwd " + w);
        gy.poison();  // non-temporal stores (rows the narrow path leaves)
        cpu::geglu_fwd(a, t, k.rows, k.cols, h, at(gx, off), at(gy, off), false, true);
        expect_bits(gy, want_gy, at_elem, "geglu_fwd streamed " + w);
        auto at_g = [&](int64_t i) {
          return in_block(i % (2 * h) % h + i / (2 * h) * h) ? i : int64_t{-1};
        };
        gdx.poison();
        cpu::geglu_bwd(a, t, k.rows, k.cols, h, at(dy, off), at(gx, off), at(gdx, off));
        expect_bits(gdx, want_gdx, at_g, "geglu_bwd " + w);
        // Streamed, with y: dx's halves and y are aligned alike only where
        // h * dtype size is a multiple of 64 bytes (otherwise plain stores).
        gdx.poison();
        gy.poison();
        cpu::geglu_bwd(a, t, k.rows, k.cols, h, at(dy, off), at(gx, off), at(gdx, off),
                       false, at(gy, off), true);
        expect_bits(gdx, want_gdx, at_g, "geglu_bwd streamed " + w);
        expect_bits(gy, want_gy, at_elem, "geglu_bwd streamed y " + w);
        Buffer gio = clone(gx);  // in place: dx = x
        cpu::geglu_bwd(a, t, k.rows, k.cols, h, at(dy, off), at(gio, off),
                       at(gio, off));
        for (int64_t i = 0; i < 2 * n; ++i)
          ASSERT_EQ(gio.bits(i), at_g(i) >= 0 ? round_bits(t, want_gdx[i]) : gx.bits(i))
              << "geglu_bwd dx=x " << w << " element " << i;
        if (HasFailure()) return;
      }
}

// A row whose segments alternate in how many lanes need the tail path:
// none, a few, most, all, and inf/NaN among N(0, 3). The driver runs each
// block sparse or dense by the density of the block before it (Row,
// kDenseSteps), and packs tail lanes across a block; no path may change a
// lane's result. Each op's long call equals, bit for bit, the same op
// called on one element at a time (every call one staged step).
std::vector<float> density_segments(int64_t seg, int segments) {
  std::mt19937 rng(4242);
  std::normal_distribution<float> n1(0.0f, 1.0f), n3(0.0f, 3.0f), n5(0.0f, 5.0f);
  std::uniform_real_distribution<float> tail(-14.0f, -4.0f), core(-3.5f, 3.5f);
  const float inf = std::numeric_limits<float>::infinity();
  const float special[] = {inf,     -inf, std::numeric_limits<float>::quiet_NaN(),
                           -3.875f, 4.0f, -0.0f};
  std::vector<float> x;
  for (int s = 0; s < segments; ++s)
    for (int64_t i = 0; i < seg; ++i) {
      switch (s % 5) {
        case 0: x.push_back(core(rng)); break;                      // no tail lane
        case 1: x.push_back(i % 97 == 0 ? -8.0f : n1(rng)); break;  // a few
        case 2: x.push_back(n5(rng)); break;                        // most pairs
        case 3: x.push_back(tail(rng)); break;                      // every lane
        default: x.push_back(i % 13 == 0 ? special[i / 13 % 6] : n3(rng)); break;
      }
    }
  x.push_back(-9.0f);  // a partial last step with a tail lane
  return x;
}

TEST_P(KernelsOps, BlockDensityChangesNoResult) {
  const std::vector<float> xs = density_segments(1024, 11);
  const int64_t n = static_cast<int64_t>(xs.size());
  for (Approx a : kForms)
    for (DType t : kDTypes) {
      Buffer x(t, {n}), b(t, {n}), dy(t, {n}), g2(t, {2 * n});
      for (int64_t i = 0; i < n; ++i) x.set(i, xs[i]);
      fill_inputs(b, 11, 1.0f);
      fill_inputs(dy, 12, 1.0f);
      for (int64_t i = 0; i < n; ++i) {
        g2.set(i, xs[i]);
        g2.set(n + i, b.get(i));
      }
      const std::string w = what("density", a, t, n);
      Buffer whole(t, {n}), each(t, {n}), whole2(t, {2 * n}), each2(t, {2 * n});
      Buffer whole_y(t, {n}), each_y(t, {n});
      // NaN -> NaN is the contract; its sign and payload are not.
      const auto same = [&](const Buffer& got, const Buffer& want, const char* op) {
        ASSERT_TRUE(got.guard_intact()) << op << " " << w;
        for (int64_t i = 0; i < got.size(); ++i) {
          if (std::isnan(got.get(i)) && std::isnan(want.get(i))) continue;
          ASSERT_EQ(got.bits(i), want.bits(i))
              << op << " " << w << ": element " << i << " (x = " << xs[i % n] << ")";
        }
      };
      const auto reset = [&] {
        for (Buffer* o : {&whole, &each, &whole2, &each2, &whole_y, &each_y})
          o->poison();
      };

      reset();
      cpu::gelu_fwd(a, t, n, x.data(), whole.data());
      for (int64_t i = 0; i < n; ++i) cpu::gelu_fwd(a, t, 1, at(x, i), at(each, i));
      same(whole, each, "gelu_fwd");

      reset();
      cpu::gelu_bwd(a, t, n, dy.data(), x.data(), whole.data(), whole_y.data());
      for (int64_t i = 0; i < n; ++i)
        cpu::gelu_bwd(a, t, 1, at(dy, i), at(x, i), at(each, i), at(each_y, i));
      same(whole, each, "gelu_bwd dx");
      same(whole_y, each_y, "gelu_bwd y");

      reset();
      cpu::add_bwd(a, t, n, dy.data(), x.data(), b.data(), whole.data());
      for (int64_t i = 0; i < n; ++i)
        cpu::add_bwd(a, t, 1, at(dy, i), at(x, i), at(b, i), at(each, i));
      same(whole, each, "add_bwd");

      // One row: dbias is each column's f32 dx, in double.
      reset();
      std::vector<double> db_whole(n, -1.0), db_each(n, -1.0);
      cpu::bias_bwd(a, t, 1, n, n, dy.data(), x.data(), b.data(), whole.data(),
                    db_whole.data(), whole_y.data());
      for (int64_t i = 0; i < n; ++i)
        cpu::bias_bwd(a, t, 1, 1, 1, at(dy, i), at(x, i), at(b, i), at(each, i),
                      &db_each[i], at(each_y, i));
      same(whole, each, "bias_bwd dx");
      same(whole_y, each_y, "bias_bwd y");
      for (int64_t i = 0; i < n; ++i)  // a NaN sum's payload is not specified
        ASSERT_TRUE(std::isnan(db_whole[i])
                        ? std::isnan(db_each[i])
                        : std::memcmp(&db_whole[i], &db_each[i], sizeof(double)) == 0)
            << "bias_bwd dbias " << w << ": column " << i << " " << db_whole[i]
            << " against " << db_each[i];

      reset();
      cpu::geglu_bwd(a, t, 1, n, n, dy.data(), g2.data(), whole2.data(), false,
                     whole_y.data());
      for (int64_t i = 0; i < n; ++i)
        cpu::geglu_bwd(a, t, 1, 1, n, at(dy, i), at(g2, i), at(each2, i), false,
                       at(each_y, i));
      same(whole2, each2, "geglu_bwd dx");
      same(whole_y, each_y, "geglu_bwd y");
      if (HasFailure()) return;
    }
}

GELU_INSTANTIATE_PER_TARGET(KernelsOps);

}  // namespace
}  // namespace gelu::testing
