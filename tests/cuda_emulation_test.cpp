// The CUDA kernels' bodies (src/cuda/body), run on the host over the launch
// geometry the GPU gets (plan_eltwise, emulate.hpp): every op kind, form
// and dtype, on odd shapes, one column, zero rows, storage offsets of 2, 4,
// 8 and 14 bytes (equal ones take the 16-byte path with its single
// elements at either end; unequal ones the element path), in place, and
// row and column indices past 2^31 (on small buffers, by offset). Each
// result is checked bit for bit against a plain loop of the same f32 math
// (so every element is computed once, where it belongs, and nothing else
// is written: outputs are poisoned around), the f32 gelu/gelu' against the
// double reference, and dbias bit for bit against its order as
// eltwise.hpp defines it, and within its bound against the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/body/dbias.hpp"
#include "cuda/body/eltwise.hpp"
#include "cuda/body/emulate.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu::testing {
namespace {

using cuda::body::Arrays;
using cuda::body::Elem;
using cuda::body::EltwiseArgs;
using cuda::body::Kind;

constexpr uint8_t kPoison = 0xA5;

const char* form_name(Approx a) {
  return a == Approx::none ? "erf" : a == Approx::tanh ? "tanh" : "quick";
}

// A byte buffer holding `n` elements of T at byte `offset` from a 64-byte
// boundary, poisoned around.
template <class T>
struct Buf {
  std::vector<uint8_t> raw;
  size_t offset = 0, n = 0;
  Buf(size_t count, size_t off)
      : raw(count * sizeof(T) + off + 128, kPoison), offset(off), n(count) {}
  T* data() {
    const uintptr_t base = reinterpret_cast<uintptr_t>(raw.data());
    const uintptr_t aligned = (base + 63) & ~uintptr_t{63};
    return reinterpret_cast<T*>(aligned + offset);
  }
  T get(size_t i) {
    T v;
    std::memcpy(&v, data() + i, sizeof(T));
    return v;
  }
};

template <DType D>
typename Elem<D>::T random_elem(std::mt19937& rng) {
  std::normal_distribution<float> n(0.0f, 2.5f);
  const float specials[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, -9.0f, 5.0f, -3.9f};
  const float v = rng() % 64 == 0 ? specials[rng() % 8] : n(rng);
  return Elem<D>::store(v);
}

bool same(float a, float b) {
  uint32_t ua, ub;
  std::memcpy(&ua, &a, 4);
  std::memcpy(&ub, &b, 4);
  return ua == ub || (std::isnan(a) && std::isnan(b));
}

// One call: kind, addend or not, y or not, dtype; rows x cols with row
// strides; per-array byte offsets; in place (outputs on the inputs).
struct Case {
  Kind kind;
  bool column;  // the addend is a bias (one row, stride 0)
  int64_t rows, cols;
  size_t off_in, off_out;
  bool in_place;
};

std::string describe(const Case& c) {
  const char* k[] = {"forward", "backward", "geglu_forward", "geglu_backward"};
  return std::string(k[int(c.kind)]) + (c.column ? " (bias)" : "") + " " +
         std::to_string(c.rows) + "x" + std::to_string(c.cols) + " offsets " +
         std::to_string(c.off_in) + "/" + std::to_string(c.off_out) +
         (c.in_place ? " in place" : "");
}

template <Approx F, DType D, Kind K, bool kAdd, bool kValue, bool kDbias>
void run_body(const cuda::body::EltwisePlan& p, const EltwiseArgs& g) {
  using cuda::body::Eltwise;
  const size_t shared = size_t(cuda::body::kBlockThreads) * cuda::body::kElemsPerThread;
  if (p.vec) {
    cuda::body::emulate<Eltwise<F, D, K, kAdd, kValue, kDbias, cuda::body::kVecOf<D>>>(
        p.launch, g, shared);
  } else {
    cuda::body::emulate<Eltwise<F, D, K, kAdd, kValue, kDbias, 1>>(p.launch, g, shared);
  }
}

template <Approx F, DType D, Kind K, bool kAdd, bool kValue, bool kDbias>
void check_case(const Case& c, std::mt19937& rng) {
  using E = Elem<D>;
  using T = typename E::T;
  constexpr bool kGated = K == Kind::geglu_forward || K == Kind::geglu_backward;
  constexpr bool kBackward = K == Kind::backward || K == Kind::geglu_backward;
  constexpr bool kHalf = sizeof(T) == 2 && !kDbias;
  const int64_t rows = c.rows, cols = c.cols;
  // Row strides: geglu's x and dx rows hold both halves.
  const int64_t sx = kGated ? 2 * cols : cols;
  const size_t nx = size_t(rows * sx), ny = size_t(rows * cols);
  Buf<T> x(nx, c.off_in);
  const bool column = kAdd && c.column;  // bias (stride 0), or add_gelu's b
  Buf<T> add(kAdd ? (column ? size_t(cols) : ny) : 0, c.off_in);
  Buf<T> dy(kBackward ? ny : 0, c.off_in);
  Buf<T> out(kGated && kBackward ? nx : ny, c.off_out);
  Buf<T> val(kValue ? ny : 0, c.off_out);
  for (size_t i = 0; i < nx; ++i) x.data()[i] = random_elem<D>(rng);
  for (size_t i = 0; i < add.n; ++i) add.data()[i] = random_elem<D>(rng);
  for (size_t i = 0; i < dy.n; ++i) dy.data()[i] = random_elem<D>(rng);
  const std::vector<T> x0(x.data(), x.data() + nx);

  Arrays a;
  a.x = x.data();
  a.sx = sx;
  if (kAdd) {
    a.x2 = add.data();
    a.sx2 = column ? 0 : cols;
  }
  if (kGated) {
    a.x2 = x.data() + cols;
    a.sx2 = sx;
  }
  if (kBackward) {
    a.dy = dy.data();
    a.sdy = cols;
  }
  T* outp = c.in_place ? x.data() : out.data();
  a.out = outp;
  a.sout = kGated && kBackward ? sx : cols;
  if (kGated && kBackward) {
    a.out2 = outp + cols;
    a.sout2 = sx;
  }
  if (kValue) {
    a.val = val.data();
    a.sval = cols;
  }
  const auto p = cuda::body::plan_eltwise(rows, cols, int(sizeof(T)), a, kDbias);
  EltwiseArgs g;
  g.a = a;
  g.rows = rows;
  g.cols = cols;
  g.head = p.head;
  g.vectors = p.vectors;
  g.tail = p.tail;
  std::vector<double> partial(size_t(p.launch.grid.y) * size_t(cols) + 1);
  g.partial = partial.data();
  if (rows > 0) run_body<F, D, K, kAdd, kValue, kDbias>(p, g);

  // The plain loop.
  const T* addp = add.data();
  const T* dyp = dy.data();
  std::vector<float> dx32(size_t(rows * cols));
  int64_t bad = 0;
  std::string first;
  const auto expect = [&](const char* what, T got, float want, int64_t r, int64_t col) {
    const T w = E::store(want);
    if (std::memcmp(&got, &w, sizeof(T)) != 0 &&
        !(std::isnan(E::load(got)) && std::isnan(want))) {
      if (bad++ == 0)
        first = std::string(what) + " at (" + std::to_string(r) + ", " +
                std::to_string(col) + "): got " + std::to_string(E::load(got)) +
                ", want " + std::to_string(want);
    }
  };
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t col = 0; col < cols; ++col) {
      float xv = E::load(x0[size_t(r * sx + col)]);
      const float x2v = kGated ? E::load(x0[size_t(r * sx + cols + col)]) : 0.0f;
      if (kAdd) xv = xv + E::load(addp[size_t(column ? col : r * cols + col)]);
      const float dyv = kBackward ? E::load(dyp[size_t(r * cols + col)]) : 0.0f;
      float o = 0, o2 = 0, v = 0;
      cuda::body::compute<F, kHalf, K, kValue, false, sizeof(T) == 2>(xv, x2v, dyv, o,
                                                                      o2, v);
      dx32[size_t(r * cols + col)] = o;
      const int64_t so = kGated && kBackward ? sx : cols;
      T got;
      std::memcpy(&got, outp + r * so + col, sizeof(T));
      expect("out", got, o, r, col);
      if (kGated && kBackward) {
        std::memcpy(&got, outp + r * so + cols + col, sizeof(T));
        expect("out2", got, o2, r, col);
      }
      if (kValue) expect("y", val.get(size_t(r * cols + col)), v, r, col);
      // The f32 math against the reference.
      if (D == DType::f32 && !kGated && std::isfinite(xv)) {
        if (K == Kind::forward) {
          EXPECT_LE(ref::ulp_error(DType::f32, o, ref::gelu_fwd(F, xv)), 2.0) << xv;
        }
      }
    }
  }
  EXPECT_EQ(bad, 0) << form_name(F) << " " << describe(c) << ": " << first;
  // Nothing written outside the outputs.
  for (Buf<T>* b : {&out, &val}) {
    if (c.in_place && b == &out) continue;
    const size_t begin = size_t(reinterpret_cast<uint8_t*>(b->data()) - b->raw.data());
    const size_t end = begin + b->n * sizeof(T);
    for (size_t i = 0; i < b->raw.size(); ++i)
      if (i < begin || i >= end) {
        ASSERT_EQ(b->raw[i], kPoison) << describe(c) << ": written outside, byte " << i;
      }
  }

  if constexpr (kDbias) {
    // dbias in the order eltwise.hpp defines: lanes of rows (r mod L),
    // each summed upwards, the block's ty lanes in order, then the blocks.
    const int64_t L = int64_t(cuda::body::dbias_lanes(rows, cols));
    const int64_t ty = p.launch.block.y, gy = p.launch.grid.y;
    ASSERT_EQ(ty * gy, L);
    ASSERT_EQ(gy, cuda::body::dbias_partial_rows(rows, cols));
    for (int64_t col = 0; col < cols; ++col) {
      double total = 0, bound = 0, exact = 0, floor = 0;
      for (int64_t b = 0; b < gy; ++b) {
        double block = 0;
        for (int64_t y = 0; y < ty; ++y) {
          double lane = 0;
          for (int64_t r = b * ty + y; r < rows; r += L)
            lane += double(dx32[size_t(r * cols + col)]);
          block = y == 0 ? lane : block + lane;
        }
        ASSERT_TRUE(
            same(float(partial[size_t(b * cols + col)]), float(block)) &&
            (partial[size_t(b * cols + col)] == block ||
             (std::isnan(block) && std::isnan(partial[size_t(b * cols + col)]))))
            << describe(c) << " partial of block " << b << ", column " << col;
        total += block;
      }
      for (int64_t r = 0; r < rows; ++r) {
        const double s = double(E::load(x0[size_t(r * sx + col)]) +
                                E::load(addp[size_t(col)]));
        const double d = E::load(dyp[size_t(r * cols + col)]);
        const ref::GradTerms t = ref::gelu_bwd_terms(F, s);
        exact += d * (t.t1 + t.t2);
        bound += std::fabs(d) * (std::fabs(t.t1) + std::fabs(t.t2));
        floor += (2.0 * std::fabs(d) + 0.5) * 0x1p-149;
      }
      if (std::isfinite(bound) && std::isfinite(total)) {
        // The contract's floor for subnormal f32 dx (fuzz/contract.hpp).
        EXPECT_LE(std::fabs(total - exact), 0x1p-20 * bound + floor)
            << describe(c) << " dbias column " << col;
      }
      (void)total;
    }
    // The second step, over the same partial sums.
    Buf<T> dbias(size_t(cols), c.off_out);
    cuda::body::DbiasArgs da;
    da.partial = partial.data();
    da.partial_rows = gy;
    da.cols = cols;
    da.dbias = dbias.data();
    cuda::body::emulate<cuda::body::DbiasSum<D>>(cuda::body::plan_dbias_sum(cols), da,
                                                 0);
    for (int64_t col = 0; col < cols; ++col) {
      double s = 0;
      for (int64_t b = 0; b < gy; ++b) s += partial[size_t(b * cols + col)];
      typename Elem<D>::T want;
      cuda::storage::Storage<D>::store(&want, 0, s, cuda::storage::kSumBand);
      const T got = dbias.get(size_t(col));
      EXPECT_EQ(std::memcmp(&got, &want, sizeof(T)), 0)
          << describe(c) << " dbias " << col;
    }
  }
}

struct Shape {
  int64_t rows, cols;
};

// Every shape x offset x in-place combination of one configuration.
template <Approx F, DType D, Kind K, bool kAdd, bool kValue, bool kDbias>
void check_config(bool column, std::mt19937& rng) {
  const Shape shapes[] = {{1, 1},    {1, 37},   {3, 1}, {5, 33},  {4, 64},
                          {3, 1000}, {2, 4104}, {0, 8}, {300, 3}, {513, 1}};
  const size_t e = sizeof(typename Elem<D>::T);
  std::vector<std::pair<size_t, size_t>> offsets = {{0, 0}, {4, 4}, {8, 8}, {0, 4}};
  if (e == 2) {
    offsets.push_back({2, 2});
    offsets.push_back({14, 14});
    offsets.push_back({2, 0});
  }
  for (const Shape& s : shapes) {
    for (const auto& [oi, oo] : offsets) {
      for (bool in_place : {false, true}) {
        if (in_place && (K == Kind::geglu_forward || oi != oo)) continue;
        check_case<F, D, K, kAdd, kValue, kDbias>(
            Case{K, column, s.rows, s.cols, oi, oo, in_place}, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
  }
}

template <Approx F, DType D>
void check_every_config() {
  std::mt19937 rng(7 + int(F) * 3 + int(D));
  check_config<F, D, Kind::forward, false, false, false>(false, rng);
  check_config<F, D, Kind::forward, true, false, false>(false, rng);  // add_gelu
  check_config<F, D, Kind::forward, true, false, false>(true, rng);   // bias_gelu
  check_config<F, D, Kind::backward, false, false, false>(false, rng);
  check_config<F, D, Kind::backward, false, true, false>(false, rng);
  check_config<F, D, Kind::backward, true, false, false>(false, rng);
  check_config<F, D, Kind::backward, true, false, true>(true, rng);  // with dbias
  check_config<F, D, Kind::backward, true, true, true>(true, rng);
  check_config<F, D, Kind::geglu_forward, false, false, false>(false, rng);
  check_config<F, D, Kind::geglu_backward, false, false, false>(false, rng);
  check_config<F, D, Kind::geglu_backward, false, true, false>(false, rng);
}

template <Approx F>
void check_form() {
  check_every_config<F, DType::f32>();
  check_every_config<F, DType::bf16>();
  check_every_config<F, DType::f16>();
}

TEST(CudaEmulation, ErfEveryOpDtypeShapeAndOffset) { check_form<Approx::none>(); }
TEST(CudaEmulation, TanhEveryOpDtypeShapeAndOffset) { check_form<Approx::tanh>(); }
TEST(CudaEmulation, QuickEveryOpDtypeShapeAndOffset) { check_form<Approx::quick>(); }

// Index arithmetic past 2^31 elements, on small buffers: the arrays' bases
// are set so that only a window of each lies in memory, and only the blocks
// that touch the window run. Once a column index past 2^31 (one row), once
// a row offset past 2^31 (two rows).
TEST(CudaEmulation, IndicesPast2To31) {
  using Body = cuda::body::Eltwise<Approx::none, DType::f32, Kind::backward, true, true,
                                   false, 4>;
  constexpr int64_t kBig = (int64_t{1} << 31) + 8;
  struct Window {
    int64_t rows, cols, start;  // the elements [start, start + 4096) exist
    unsigned block_x, block_y;
  };
  std::mt19937 rng(31);
  for (const Window& win :
       {Window{1, kBig + 4096, kBig - 8, 0, 0}, Window{2, kBig, kBig, 0, 1}}) {
    constexpr int64_t kLen = 4096;
    std::vector<float> x(kLen), b(kLen), dy(kLen), dx(kLen, -7.0f), y(kLen, -7.0f);
    std::normal_distribution<float> n(0.0f, 3.0f);
    for (int64_t i = 0; i < kLen; ++i) x[i] = n(rng), b[i] = n(rng), dy[i] = n(rng);
    const auto shifted = [&](float* p) {  // p - start, without forming it in C++
      return reinterpret_cast<float*>(reinterpret_cast<uintptr_t>(p) -
                                      uintptr_t(win.start) * sizeof(float));
    };
    Arrays a;
    a.x = shifted(x.data());
    a.x2 = shifted(b.data());
    a.dy = shifted(dy.data());
    a.out = shifted(dx.data());
    a.val = shifted(y.data());
    a.sx = a.sx2 = a.sdy = a.sout = a.sval = win.cols;
    // The plan of the real arrays' alignment (the windows are 16-byte
    // aligned as vectors need; std::vector's storage is).
    auto p = cuda::body::plan_eltwise(win.rows, win.cols, 4, a, false);
    ASSERT_TRUE(p.vec);
    EltwiseArgs g;
    g.a = a;
    g.rows = win.rows;
    g.cols = win.cols;
    g.head = p.head;
    g.vectors = p.vectors;
    g.tail = p.tail;
    // The block whose first vector is the window's first.
    const int64_t col0 = win.start - (win.rows > 1 ? win.start : 0);
    const unsigned bx = unsigned(
        col0 / (int64_t{cuda::body::kElemsPerThread} * p.launch.block.x));
    ASSERT_EQ(int64_t(bx) * cuda::body::kElemsPerThread * p.launch.block.x, col0);
    ASSERT_LT(bx, p.launch.grid.x);
    cuda::body::emulate<Body>(p.launch, g, 0, [&](cuda::body::Dim blk) {
      return blk.x == bx && (win.rows == 1 || blk.y == win.block_y);
    });
    for (int64_t i = 0; i < kLen; ++i) {
      float o, o2, v;
      cuda::body::compute<Approx::none, false, Kind::backward, true>(x[i] + b[i], 0.0f,
                                                                     dy[i], o, o2, v);
      ASSERT_TRUE(same(dx[i], o) && same(y[i], v))
          << "window at " << win.start << ", element " << i << ": dx " << dx[i]
          << " vs " << o;
    }
  }
}

// dbias's order depends on the shape only: the same inputs at other
// offsets (the element path instead of 16-byte vectors) give the same bits.
TEST(CudaEmulation, DbiasDoesNotDependOnAlignment) {
  using Vec = cuda::body::Eltwise<Approx::tanh, DType::f32, Kind::backward, true, false,
                                  true, 4>;
  using One = cuda::body::Eltwise<Approx::tanh, DType::f32, Kind::backward, true, false,
                                  true, 1>;
  std::mt19937 rng(5);
  for (const Shape s :
       {Shape{1000, 24}, Shape{4099, 1}, Shape{7, 4096}, Shape{70000, 8}}) {
    std::vector<double> sums[2];
    const uint32_t seed = rng();
    for (int k = 0; k < 2; ++k) {
      const size_t off = k == 0 ? 0 : 1;  // elements: 4 bytes
      std::vector<float> x(size_t(s.rows * s.cols) + off), dy(x.size()),
          bias(size_t(s.cols) + off), dx(x.size());
      std::mt19937 same_rng(seed);
      std::normal_distribution<float> n(0.0f, 2.0f);
      for (auto* v : {&x, &dy, &bias})  // the same logical elements at either offset
        for (size_t i = off; i < v->size(); ++i) (*v)[i] = n(same_rng);
      Arrays a;
      a.x = x.data() + off;
      a.x2 = bias.data() + off;
      a.dy = dy.data() + off;
      a.out = dx.data() + off;
      a.sx = a.sdy = a.sout = s.cols;
      a.sx2 = 0;
      const auto p = cuda::body::plan_eltwise(s.rows, s.cols, 4, a, true);
      EXPECT_EQ(p.vec, k == 0 && s.cols % 4 == 0);
      EltwiseArgs g;
      g.a = a;
      g.rows = s.rows;
      g.cols = s.cols;
      g.head = p.head;
      g.vectors = p.vectors;
      g.tail = p.tail;
      sums[k].assign(size_t(p.launch.grid.y * s.cols), 0.0);
      g.partial = sums[k].data();
      const size_t shared = size_t(cuda::body::kBlockThreads) *
                            cuda::body::kElemsPerThread;
      if (p.vec) cuda::body::emulate<Vec>(p.launch, g, shared);
      else cuda::body::emulate<One>(p.launch, g, shared);
    }
    ASSERT_EQ(sums[0].size(), sums[1].size());
    EXPECT_EQ(
        std::memcmp(sums[0].data(), sums[1].data(), sums[0].size() * sizeof(double)), 0)
        << s.rows << "x" << s.cols;
  }
}

}  // namespace
}  // namespace gelu::testing
