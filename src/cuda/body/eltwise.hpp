// The body of every element-wise CUDA kernel, a __host__ __device__
// function of (where, args), and its launch geometry. gelu, add_gelu,
// bias_gelu and geglu, forward and backward, are one loop over a rows x cols
// problem whose arrays each have a row stride:
//
//   forward    y   = gelu(x [+ x2])            x2: add_gelu's b (stride =
//   backward   dx  = dy * gelu'(x [+ x2])          x's), bias_gelu's bias
//              y   = gelu(...) where wanted        (stride 0)
//   geglu fwd  y   = gelu(x) * x2              x, x2: the halves of a row
//   geglu bwd  dx  = dy * x2 * gelu'(x), dx2 = dy * gelu(x), y = gelu(x) x2
//
// each element in f32 with the scalar method (src/math/gelu_f32.hpp) and
// the CPU's products (src/cpu/driver-inl.h Compute), so the results are the
// CPU's where its core is the same.
//
// Work: 16 elements a thread, as kUnits vectors of kVec elements (16-byte
// accesses) or, where the arrays are not equally aligned, 16 single
// elements; consecutive threads take consecutive vectors (coalesced). A
// block is tx x ty threads (tx along a row, ty rows); the grid is column
// chunks x row groups, and a thread steps over rows by ty * grid.y. Rows
// of the aligned body start kHead elements in (done one by one, as are the
// kTail after the last whole vector). No division per element.
//
// Every input of an element is read before its outputs are written, by the
// same thread, so outputs may be inputs (in place).
//
// dbias (bias_gelu_backward): each thread sums its columns' f32 dx over its
// rows in double; phase 1, after a barrier, adds the block's ty lanes in
// order into partial[grid row][column]; dbias_sum (dbias.hpp) adds those in
// order. The lanes, blocks and steps depend only on (rows, cols), not on
// alignment or the GPU, so dbias is bitwise repeatable.
#pragma once

#include <stdint.h>

#include "cuda/body/grid.hpp"
#include "cuda/body/pack.hpp"
#include "gelu/gelu.hpp"
#include "math/gelu_f32.hpp"

namespace gelu::cuda::body {

enum class Kind { forward, backward, geglu_forward, geglu_backward };

inline constexpr int kElemsPerThread = 16;
inline constexpr unsigned kBlockThreads = 256;

// The arrays: x (pre-activation, geglu's GELU half), x2 (addend or gate;
// null when none), dy; out (y or dx), out2 (geglu's dx of the gate half),
// val (the backward's y; null when not wanted). Strides in elements.
struct Arrays {
  const void* x = nullptr;
  const void* x2 = nullptr;
  const void* dy = nullptr;
  void* out = nullptr;
  void* out2 = nullptr;
  void* val = nullptr;
  int64_t sx = 0, sx2 = 0, sdy = 0, sout = 0, sout2 = 0, sval = 0;
};

struct EltwiseArgs {
  Arrays a;
  int64_t rows = 0, cols = 0;
  // Per row: single elements before the vectors, whole vectors, single
  // elements after (head = tail = 0 and vectors = cols when kVec is 1).
  int64_t head = 0, vectors = 0, tail = 0;
  double* partial = nullptr;  // dbias: [grid.y][cols]
};

// The launch and the per-row split of an element-wise call.
struct EltwisePlan {
  Launch launch;
  bool vec = false;  // 16-byte accesses
  int64_t head = 0, vectors = 0, tail = 0;
};

inline unsigned pow2_ceil(uint64_t v) {
  unsigned p = 1;
  while (p < v && p < (1u << 31)) p <<= 1;
  return p;
}

// Lanes of rows of a dbias reduction for (rows, cols): enough threads to
// fill a GPU (2^22 elements in flight), at most one lane a row.
inline uint64_t dbias_lanes(int64_t rows, int64_t cols) {
  const uint64_t want = uint64_t{1} << 22;
  uint64_t lanes = 1;
  while (lanes * 2 <= want / uint64_t(cols > 0 ? cols : 1)) lanes *= 2;
  const uint64_t r = pow2_ceil(uint64_t(rows > 0 ? rows : 1));
  return lanes < r ? lanes : r;
}

// The plan for rows x cols of elem_size-byte elements over `arrays` (base
// addresses and row strides of every non-null one), with dbias or not.
inline EltwisePlan plan_eltwise(int64_t rows, int64_t cols, int elem_size,
                                const Arrays& arrays, bool dbias) {
  EltwisePlan p;
  const int vec = 16 / elem_size;
  const void* ptrs[6] = {arrays.x,   arrays.x2,   arrays.dy,
                         arrays.out, arrays.out2, arrays.val};
  const int64_t strides[6] = {arrays.sx,   arrays.sx2,   arrays.sdy,
                              arrays.sout, arrays.sout2, arrays.sval};
  int misalign = -1;
  bool aligned = true;
  for (int i = 0; i < 6; ++i) {
    if (ptrs[i] == nullptr) continue;
    const int m = int(reinterpret_cast<uintptr_t>(ptrs[i]) & 15u);
    if (misalign < 0) misalign = m;
    if (m != misalign || m % elem_size != 0) aligned = false;
    if (rows > 1 && (strides[i] * elem_size) % 16 != 0) aligned = false;
  }
  if (dbias && (misalign != 0 || cols % vec != 0)) aligned = false;
  p.vec = aligned && misalign >= 0;
  if (p.vec) {
    const int64_t head = ((16 - misalign) & 15) / elem_size;
    p.head = head < cols ? head : cols;
    p.vectors = (cols - p.head) / vec;
    p.tail = cols - p.head - p.vectors * vec;
  } else {
    p.vectors = cols;
  }
  // Threads along a row: enough for the row's work, a power of 2 <= 256.
  const int per_thread_vectors = p.vec ? kElemsPerThread / vec : kElemsPerThread;
  const uint64_t row_threads = (uint64_t((cols + kElemsPerThread - 1) /
                                         kElemsPerThread));  // same in both modes
  unsigned tx = pow2_ceil(row_threads > 0 ? row_threads : 1);
  if (tx > kBlockThreads) tx = kBlockThreads;
  unsigned ty = kBlockThreads / tx;
  const uint64_t chunk = uint64_t(tx) * per_thread_vectors;
  uint64_t gx = (uint64_t(p.vectors) + chunk - 1) / chunk;
  if (gx == 0) gx = 1;  // head and tail only
  uint64_t gy;
  if (dbias) {
    const uint64_t lanes = dbias_lanes(rows, cols);
    if (ty > lanes) ty = unsigned(lanes);
    gy = lanes / ty;
  } else {
    gy = (uint64_t(rows) + ty - 1) / ty;
    if (gy > 65535) gy = 65535;
    if (gy == 0) gy = 1;
  }
  p.launch.grid = Dim{unsigned(gx < 0x7fffffffu ? gx : 0x7fffffffu), unsigned(gy)};
  p.launch.block = Dim{tx, ty};
  return p;
}

// Bytes of dbias workspace for (rows, cols): grid.y x cols doubles.
inline int64_t dbias_partial_rows(int64_t rows, int64_t cols) {
  const uint64_t lanes = dbias_lanes(rows, cols);
  const uint64_t tx = [&] {
    const uint64_t t = pow2_ceil(
        uint64_t((cols + kElemsPerThread - 1) / kElemsPerThread));
    return t < kBlockThreads ? t : uint64_t{kBlockThreads};
  }();
  const uint64_t ty = kBlockThreads / tx < lanes ? kBlockThreads / tx : lanes;
  return int64_t(lanes / ty);
}

// ---------------------------------------------------------------------------
// The per-element math, x already the pre-activation. kCore: the caller
// has checked that x is in the core (math::kTailStart).
template <Approx F, bool kHalf, Kind K, bool kValue, bool kCore = false,
          bool kHalfValue = kHalf>
GELU_HD void compute(float x, float x2, float dy, float& out, float& out2, float& val) {
  using ::gelu::math::fma_rn;
  using ::gelu::math::mul_rn;
  if constexpr (K == Kind::forward) {
    out = ::gelu::math::value<F, kHalf, 16, kCore>(x);
  } else if constexpr (K == Kind::geglu_forward) {
    out = fma_rn(::gelu::math::value<F, kHalf, 16, kCore>(x), x2, -0.0f);
  } else if constexpr (K == Kind::geglu_backward) {
    float v, g;
    ::gelu::math::value_and_grad<F, kHalf, 16, kCore>(x, v, g);
    // dy * x2 * g rounded once (but for a second-order term), as the CPU.
    const float p = mul_rn(dy, x2);
    const float pa = p < 0.0f ? -p : p;
    const float e = pa < INFINITY ? fma_rn(dy, x2, -p) : 0.0f;
    out = fma_rn(p, g, fma_rn(e, g, -0.0f));
    out2 = fma_rn(dy, v, -0.0f);
    if constexpr (kValue) val = fma_rn(v, x2, -0.0f);
  } else if constexpr (kValue && kHalfValue && !kHalf) {
    // dx feeds dbias (the f32 core) but y is rounded to 16 bits: y from
    // the cheaper core (fewer table reads; within y's 1-ulp contract).
    out = fma_rn(dy, ::gelu::math::grad<F, false, 16, kCore>(x), -0.0f);
    val = ::gelu::math::value<F, true, 16, kCore>(x);
  } else {
    float v, g;
    ::gelu::math::value_and_grad<F, kHalf, 16, kCore>(x, v, g);
    out = fma_rn(dy, g, -0.0f);
    if constexpr (kValue) val = v;
  }
}

// The element-wise body. kVec: elements per access (kVecOf<D> or 1); kAdd:
// x2 is added to x (an addend) rather than a gate; kDbias: sum dx for
// dbias through `shared` (kBlockThreads * kElemsPerThread doubles).
template <Approx F, DType D, Kind K, bool kAdd, bool kValue, bool kDbias, int kVec>
struct Eltwise {
  using E = Elem<D>;
  using T = typename E::T;
  static constexpr int kUnits = kElemsPerThread / kVec;
  static constexpr bool kGated = K == Kind::geglu_forward || K == Kind::geglu_backward;
  static constexpr bool kBackward = K == Kind::backward || K == Kind::geglu_backward;
  // The bf16/f16 core where results are rounded to 16 bits, except when dx
  // feeds dbias (its bound is relative to the f32 dx), as the CPU.
  static constexpr bool kHalf = sizeof(T) == 2 && !kDbias;
  static constexpr bool kHalfValue = sizeof(T) == 2;  // y never feeds dbias
  // Shared memory (doubles) and whether phase 1 runs.
  static constexpr int kSharedDoubles = kDbias ? kBlockThreads * kElemsPerThread : 0;
  static constexpr bool kPhase1 = kDbias;

  // One row of every array (computed once a row, not once a vector).
  struct Row {
    const T *x, *x2, *dy;
    T *out, *out2, *val;
  };
  template <class P>
  GELU_HD static P* at(P* p, int64_t offset) {  // no arithmetic on null
    return p != nullptr ? p + offset : p;
  }
  GELU_HD static Row row_of(const Arrays& a, int64_t r) {
    return Row{at(static_cast<const T*>(a.x), r * a.sx),
               at(static_cast<const T*>(a.x2), r * a.sx2),
               at(static_cast<const T*>(a.dy), r * a.sdy),
               at(static_cast<T*>(a.out), r * a.sout),
               at(static_cast<T*>(a.out2), r * a.sout2),
               at(static_cast<T*>(a.val), r * a.sval)};
  }

  // The inputs of n elements (kVec or 1) at column c of a row.
  template <int kN>
  struct In {
    float x[kN], x2[kN], dy[kN];
  };
  template <int kN>
  GELU_HD static void load(const Row& a, int64_t c, In<kN>& in, bool x2 = true) {
    load_elems<D, kN>(a.x + c, in.x);
    if constexpr (kAdd || kGated)
      if (x2) load_elems<D, kN>(a.x2 + c, in.x2);
    if constexpr (kBackward) load_elems<D, kN>(a.dy + c, in.dy);
  }

  // Their results, stored; acc: dbias sums.
  template <int kN>
  GELU_HD static void finish(const Row& a, int64_t c, In<kN>& in, double* acc) {
    float out[kN], out2[kN], val[kN];
    bool core = true;  // every element in the core: one branch, not one each
    for (int i = 0; i < kN; ++i) {
      if constexpr (kAdd) in.x[i] = ::gelu::math::add_rn(in.x[i], in.x2[i]);
      core = core && fabsf(in.x[i]) < ::gelu::math::kTailStart<>;
    }
    const auto x2 = [&](int i) { return kGated ? in.x2[i] : 0.0f; };
    const auto dy = [&](int i) { return kBackward ? in.dy[i] : 0.0f; };
    if (core) {
      for (int i = 0; i < kN; ++i)
        compute<F, kHalf, K, kValue, true, kHalfValue>(in.x[i], x2(i), dy(i), out[i],
                                                       out2[i], val[i]);
    } else {
      for (int i = 0; i < kN; ++i)
        compute<F, kHalf, K, kValue, false, kHalfValue>(in.x[i], x2(i), dy(i), out[i],
                                                        out2[i], val[i]);
    }
    if constexpr (kDbias)
      for (int i = 0; i < kN; ++i) acc[i] += double(out[i]);
    // gelu(x) of a stored x cannot pass the 16-bit overflow boundary.
    constexpr bool kBoundary = !(K == Kind::forward && !kAdd);
    store_elems<D, kN, kBoundary>(a.out + c, out);
    if constexpr (K == Kind::geglu_backward) store_elems<D, kN>(a.out2 + c, out2);
    if constexpr (kValue) store_elems<D, kN>(a.val + c, val);  // kValue: y is wanted
  }

  template <int kN>
  GELU_HD static void run(const Row& a, int64_t c, double* acc) {
    In<kN> in;
    load<kN>(a, c, in);
    finish<kN>(a, c, in, acc);
  }

  // Phase 0: every element of this thread; with kDbias, its sums to
  // shared[lane][tile column].
  // The next row `step` rows down: only the arrays this body uses move.
  GELU_HD static void advance(Row& row, const Arrays& a, int64_t step) {
    row.x += step * a.sx;
    if constexpr (kAdd || kGated) row.x2 += step * a.sx2;
    if constexpr (kBackward) row.dy += step * a.sdy;
    row.out += step * a.sout;
    if constexpr (K == Kind::geglu_backward) row.out2 += step * a.sout2;
    if constexpr (kValue) row.val += step * a.sval;
  }

  GELU_HD static void phase0(const Where& w, const EltwiseArgs& g, double* shared) {
    const int64_t row_step = int64_t(w.grid.y) * w.size.y;
    const int64_t first_row = int64_t(w.block.y) * w.size.y + w.thread.y;
    const int64_t first_vector = int64_t(w.block.x) * kUnits * w.size.x + w.thread.x;
    // A bias (an addend of row stride 0; always, with dbias) is the same
    // for every row: read once a unit.
    const bool column = kAdd && (kDbias || g.a.sx2 == 0);
    // One unit (a column of vectors) at a time, down this thread's rows;
    // not unrolled: the math's rare tail path, inlined once a unit, would
    // take the registers that keep threads resident.
    GELU_NO_UNROLL
    for (int u = 0; u < kUnits; ++u) {
      const int64_t j = first_vector + int64_t(u) * w.size.x;
      double acc[kVec];
      for (int v = 0; v < kVec; ++v) acc[v] = 0.0;
      if (j < g.vectors && first_row < g.rows) {
        const int64_t c = g.head + j * kVec;
        Row row = row_of(g.a, first_row);
        In<kVec> in{};
        if (column) load_elems<D, kVec>(row.x2 + c, in.x2);
        for (int64_t r = first_row; r < g.rows; r += row_step) {
          load<kVec>(row, c, in, !column);
          finish<kVec>(row, c, in, acc);
          advance(row, g.a, row_step);
        }
      }
      if constexpr (kDbias) {
        // Tile column of (u, v): (u * tx + thread.x) * kVec + v.
        double* lane = shared + int64_t(w.thread.y) * kUnits * w.size.x * kVec;
        for (int v = 0; v < kVec; ++v)
          lane[(int64_t(u) * w.size.x + w.thread.x) * kVec + v] = acc[v];
      }
    }
    if (w.block.x == 0) {  // each row's single elements at either end
      for (int64_t r = first_row; r < g.rows; r += row_step) {
        const Row row = row_of(g.a, r);
        for (int64_t e = w.thread.x; e < g.head; e += w.size.x) run<1>(row, e, nullptr);
        for (int64_t e = w.thread.x; e < g.tail; e += w.size.x)
          run<1>(row, g.head + g.vectors * kVec + e, nullptr);
      }
    }
  }

  // Phase 1 (kDbias, after a barrier): the block's lanes added in order,
  // to partial[grid row][column].
  GELU_HD static void phase1(const Where& w, const EltwiseArgs& g,
                             const double* shared) {
    if constexpr (kDbias) {
      const int64_t tile = int64_t(kUnits) * w.size.x * kVec;
      const int64_t col0 = int64_t(w.block.x) * tile;
      for (int64_t tc = w.flat_thread(); tc < tile; tc += w.threads()) {
        if (col0 + tc >= g.cols) continue;
        double s = shared[tc];
        for (unsigned y = 1; y < w.size.y; ++y) s += shared[int64_t(y) * tile + tc];
        g.partial[int64_t(w.block.y) * g.cols + col0 + tc] = s;
      }
    }
  }
};

}  // namespace gelu::cuda::body
