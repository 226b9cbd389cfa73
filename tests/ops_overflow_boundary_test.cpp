// Results at a 16-bit format's overflow boundary (docs/contract.md, accuracy
// contract): for every op that rounds a result to bf16 or f16, an exact
// result below the format's boundary (its largest finite value plus half an
// ulp) is stored finite, within one ulp; one clearly above it (more than the
// f32 computation's 2^-16 relative error) is stored as inf. Rounding an f32
// result that lands on the boundary straight to the format would give inf
// where the exact result is finite. Every form, on every SIMD target.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gelu/gelu.hpp"
#include "kernels_test_support.hpp"
#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "test_support.hpp"

namespace gelu {
namespace {

using testing::Buffer;

struct Format {
  DType t;
  double boundary, largest, ulp;  // ulp: of the largest finite values
};
const Format kFormats[] = {{DType::f16, 65520.0, 65504.0, 32.0},
                           {DType::bf16, 0x1.ffp127, 0x1.fep127, 0x1p120}};

// Checks outputs against exact values; counts both sides of the boundary so
// that a test whose inputs missed it fails.
class Boundary {
 public:
  explicit Boundary(const Format& f) : f_(f) {}

  void check(const std::string& what, int64_t i, float got, double exact) {
    const double mag = std::fabs(exact);
    if (mag >= f_.largest && mag < f_.boundary) {
      ++below_;
      EXPECT_TRUE(std::isfinite(got) && std::fabs(got - exact) <= f_.ulp)
          << what << "[" << i << "]: got " << got << ", exact " << exact
          << " (below the boundary " << f_.boundary << ": finite)";
    } else if (mag >= f_.boundary * (1 + 0x1p-15) && std::isfinite(exact)) {
      ++above_;
      EXPECT_TRUE(std::isinf(got) && std::signbit(got) == std::signbit(exact))
          << what << "[" << i << "]: got " << got << ", exact " << exact
          << " (past the boundary " << f_.boundary << ": inf)";
    }
  }
  void expect_both_sides(const std::string& what) const {
    EXPECT_GT(below_, 0) << what << ": no exact result just below the boundary";
    EXPECT_GT(above_, 0) << what << ": no exact result past the boundary";
  }

 private:
  Format f_;
  int below_ = 0, above_ = 0;
};

// Targets spread over the boundary: within 2^-7 of it, either sign.
double Target(std::mt19937& g, const Format& f) {
  std::uniform_real_distribution<double> u(-0x1p-7, 0x1p-7);
  return (g() & 1 ? -1.0 : 1.0) * f.boundary * (1 + u(g));
}

// A stored value of dtype t.
float Stored(DType t, double v) { return ref::stored(t, v); }

constexpr int64_t kN = 4096;

class OverflowBoundary : public testing::KernelTarget {
 protected:
  template <class Fn>
  void ForEach(Fn&& fn) {
    for (const Format& f : kFormats)
      for (Approx a : testing::kForms) {
        SCOPED_TRACE(std::string(dtype_name(f.t)) + " " + approx_name(a));
        std::mt19937 g(1234);
        fn(f, a, g);
      }
  }
};

// A pre-activation in [0.3, 3] (where gelu' is largest), stored.
float PreActivation(std::mt19937& g, DType t) {
  return Stored(t, std::uniform_real_distribution<double>(0.3, 3.0)(g));
}

TEST_P(OverflowBoundary, GeluBackward) {
  ForEach([](const Format& f, Approx a, std::mt19937& g) {
    const DType t = f.t;
    Buffer dy(t, {kN}), x(t, {kN}), dx(t, {kN}), y(t, {kN});
    for (int64_t i = 0; i < kN; ++i) {
      x.set(i, PreActivation(g, t));
      dy.set(i, Stored(t, Target(g, f) / ref::gelu_bwd(a, x.get(i))));
    }
    for (bool with_y : {false, true}) {
      Boundary b(f);
      if (with_y)
        gelu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), {.approximate = a});
      else gelu_backward(dy.cref(), x.cref(), dx.ref(), {.approximate = a});
      for (int64_t i = 0; i < kN; ++i)
        b.check("dx", i, dx.get(i), double(dy.get(i)) * ref::gelu_bwd(a, x.get(i)));
      b.expect_both_sides("gelu_backward dx");
    }
  });
}

// In place (dx over dy): the kernels test every result there (a block
// cannot be rerun from its inputs once they are overwritten), elsewhere they
// rerun a block whose stores raised the FP status flags (driver-inl.h, Row).
TEST_P(OverflowBoundary, GeluBackwardInPlace) {
  ForEach([](const Format& f, Approx a, std::mt19937& g) {
    const DType t = f.t;
    Buffer dy(t, {kN}), x(t, {kN});
    std::vector<double> exact(kN);
    for (int64_t i = 0; i < kN; ++i) {
      x.set(i, PreActivation(g, t));
      dy.set(i, Stored(t, Target(g, f) / ref::gelu_bwd(a, x.get(i))));
      exact[i] = double(dy.get(i)) * ref::gelu_bwd(a, x.get(i));
    }
    Boundary b(f);
    gelu_backward(dy.cref(), x.cref(), dy.ref(), {.approximate = a});
    for (int64_t i = 0; i < kN; ++i) b.check("dx", i, dy.get(i), exact[i]);
    b.expect_both_sides("gelu_backward dx in place");
  });
}

TEST_P(OverflowBoundary, AddGelu) {
  ForEach([](const Format& f, Approx a, std::mt19937& g) {
    const DType t = f.t;
    Buffer pa(t, {kN}), pb(t, {kN}), out(t, {kN}), dy(t, {kN});
    // Forward: a + b near the boundary (gelu(s) = s there), a the largest.
    for (int64_t i = 0; i < kN; ++i) {
      const double target = Target(g, f);
      const float first = std::copysign(float(f.largest), float(target));
      pa.set(i, first);
      pb.set(i, Stored(t, target - first));
    }
    Boundary fwd(f);
    add_gelu(pa.cref(), pb.cref(), out.ref(), {.approximate = a});
    for (int64_t i = 0; i < kN; ++i)
      fwd.check("y", i, out.get(i), ref::gelu_fwd(a, pa.get(i) + pb.get(i)));
    fwd.expect_both_sides("add_gelu y");
    // Backward: a + b in [0.3, 3], dy scaled to the boundary.
    for (int64_t i = 0; i < kN; ++i) {
      pa.set(i, PreActivation(g, t));
      pb.set(i, Stored(t, 0.25));
      dy.set(i, Stored(t, Target(g, f) / ref::gelu_bwd(a, pa.get(i) + pb.get(i))));
    }
    Boundary bwd(f);
    add_gelu_backward(dy.cref(), pa.cref(), pb.cref(), out.ref(), {.approximate = a});
    for (int64_t i = 0; i < kN; ++i)
      bwd.check("dx", i, out.get(i),
                double(dy.get(i)) * ref::gelu_bwd(a, pa.get(i) + pb.get(i)));
    bwd.expect_both_sides("add_gelu_backward dx");
  });
}

TEST_P(OverflowBoundary, BiasGelu) {
  ForEach([](const Format& f, Approx a, std::mt19937& g) {
    const DType t = f.t;
    // Rows of kN columns: forward x + bias near the boundary; backward dx
    // near it on one row, and dbias (the sum of two rows of half as much).
    Buffer x(t, {2, kN}), bias(t, {kN}), y(t, {2, kN}), dy(t, {2, kN});
    Buffer dx(t, {2, kN}), dbias(t, {kN}), yv(t, {2, kN});
    for (int64_t j = 0; j < kN; ++j) {
      const double target = Target(g, f);
      const float first = std::copysign(float(f.largest), float(target));
      x.set(j, first);
      x.set(kN + j, first);
      bias.set(j, Stored(t, target - first));
    }
    Boundary fwd(f);
    bias_gelu(x.cref(), bias.cref(), y.ref(), {.approximate = a});
    for (int64_t i = 0; i < 2 * kN; ++i)
      fwd.check("y", i, y.get(i), ref::gelu_fwd(a, x.get(i) + bias.get(i % kN)));
    fwd.expect_both_sides("bias_gelu y");

    for (int64_t j = 0; j < kN; ++j) {
      bias.set(j, Stored(t, 0.25));
      const double target = Target(g, f);
      for (int64_t r = 0; r < 2; ++r) {
        x.set(r * kN + j, PreActivation(g, t));
        const double grad = ref::gelu_bwd(a, x.get(r * kN + j) + bias.get(j));
        dy.set(r * kN + j, Stored(t, target / 2 / grad));
      }
    }
    for (bool with_y : {false, true}) {
      Boundary bdx(f), bdb(f);
      if (with_y)
        bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), dbias.ref(),
                           yv.ref(), {.approximate = a});
      else
        bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), dbias.ref(),
                           {.approximate = a});
      for (int64_t j = 0; j < kN; ++j) {
        double sum = 0;
        for (int64_t r = 0; r < 2; ++r) {
          const int64_t i = r * kN + j;
          const double e = double(dy.get(i)) * ref::gelu_bwd(a, x.get(i) + bias.get(j));
          bdx.check("dx", i, dx.get(i), e);  // half the target: never near it
          sum += e;
        }
        bdb.check("dbias", j, dbias.get(j), sum);
      }
      bdb.expect_both_sides("bias_gelu_backward dbias");
    }
    // dx itself near the boundary: one row.
    Buffer dy1(t, {1, kN}), x1(t, {1, kN}), dx1(t, {1, kN}), db1(t, {kN});
    for (int64_t j = 0; j < kN; ++j) {
      x1.set(j, PreActivation(g, t));
      dy1.set(j, Stored(t, Target(g, f) / ref::gelu_bwd(a, x1.get(j) + bias.get(j))));
    }
    Boundary b1(f);
    bias_gelu_backward(dy1.cref(), x1.cref(), bias.cref(), dx1.ref(), db1.ref(),
                       {.approximate = a});
    for (int64_t j = 0; j < kN; ++j) {
      const double e = double(dy1.get(j)) * ref::gelu_bwd(a, x1.get(j) + bias.get(j));
      b1.check("dx", j, dx1.get(j), e);
      b1.check("dbias", j, db1.get(j), e);
    }
    b1.expect_both_sides("bias_gelu_backward dx");
  });
}

TEST_P(OverflowBoundary, Geglu) {
  ForEach([](const Format& f, Approx a, std::mt19937& g) {
    const DType t = f.t;
    const int64_t rows = 64, h = kN / rows;
    Buffer x(t, {rows, 2 * h}), y(t, {rows, h}), dy(t, {rows, h}), dx(t, {rows, 2 * h});
    // Forward and the gate's gradient: gelu(v) * g and dy * gelu(v) near
    // the boundary; the value's gradient dy * g * gelu'(v) lands near it
    // for some, past it for others.
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; ++j) {
        const float v = PreActivation(g, t);
        x.set(r * 2 * h + j, v);
        x.set(r * 2 * h + h + j, Stored(t, Target(g, f) / ref::gelu_fwd(a, v)));
        dy.set(r * h + j, Stored(t, Target(g, f) / ref::gelu_fwd(a, v) /
                                        (j % 2 ? 1.0 : f.boundary)));
      }
    Boundary fwd(f);
    geglu(x.cref(), y.ref(), {.approximate = a});
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < h; ++j) {
        const double v = x.get(r * 2 * h + j), gate = x.get(r * 2 * h + h + j);
        fwd.check("y", r * h + j, y.get(r * h + j), ref::gelu_fwd(a, v) * gate);
      }
    fwd.expect_both_sides("geglu y");
    for (bool with_y : {false, true}) {
      Boundary bg(f), bv(f);
      if (with_y)
        geglu_backward(dy.cref(), x.cref(), dx.ref(), y.ref(), {.approximate = a});
      else geglu_backward(dy.cref(), x.cref(), dx.ref(), {.approximate = a});
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < h; ++j) {
          const double v = x.get(r * 2 * h + j), gate = x.get(r * 2 * h + h + j);
          const double d = dy.get(r * h + j);
          bv.check("dx(value)", r * 2 * h + j, dx.get(r * 2 * h + j),
                   d * gate * ref::gelu_bwd(a, v));
          bg.check("dx(gate)", r * 2 * h + h + j, dx.get(r * 2 * h + h + j),
                   d * ref::gelu_fwd(a, v));
        }
      bg.expect_both_sides("geglu_backward dx(gate)");
    }
  });
}

// Pre-activations and products that are exactly the boundary in f32, where
// the exact result is just below it (gelu(s) < s for s > 0, by s Q(s), far
// under a double's precision at these s): stored finite, where rounding the
// f32 result on to the format gives inf. And dbias whose f32 group sum rounds
// up onto the boundary from just below.
TEST_P(OverflowBoundary, ResultOnTheBoundaryInF32) {
  struct Exact {
    DType t;
    float largest, step;  // largest + step = the boundary
    float v, gate;        // v * gate = the boundary, gelu(v) = v in f32
    float dbias_rows[4];  // dy of 4 rows at x = 100 (gelu' = 1 in f32): the
                          // f32 group sum rounds onto the boundary
  };
  const Exact kExact[] = {{DType::f16,
                           65504.0f,
                           16.0f,
                           45.0f,
                           1456.0f,
                           {32768.0f, 32736.0f, 15.984375f, 0.0146484375f}},
                          {DType::bf16,
                           0x1.fep127f,
                           0x1p119f,
                           73.0f,
                           0x1.cp121f,
                           {0x1.fep127f, 0x1.fep118f, 0x1.fep110f, 0.0f}}};
  for (const Exact& e : kExact) {
    for (Approx a : testing::kForms) {
      SCOPED_TRACE(std::string(dtype_name(e.t)) + " " + approx_name(a));
      const Options o{.approximate = a};
      const auto expect_largest = [&](const char* what, const Buffer& out, int64_t i) {
        EXPECT_EQ(out.get(i), e.largest) << what << "[" << i << "]";
      };
      Buffer x(e.t, {1, 8}), bias(e.t, {8}), y(e.t, {1, 8}), dy(e.t, {1, 8});
      Buffer dx(e.t, {1, 8}), db(e.t, {8});
      for (int64_t i = 0; i < 8; ++i) {
        x.set(i, i % 2 ? -e.largest : e.largest);
        bias.set(i, i % 2 ? -e.step : e.step);
        dy.set(i, 1.0f);
      }
      const ConstTensorRef b2{bias.data(), e.t, {1, 8}};  // add_gelu: a's shape
      add_gelu(x.cref(), b2, y.ref(), o);
      for (int64_t i = 0; i < 8; i += 2) expect_largest("add_gelu y", y, i);
      bias_gelu(x.cref(), bias.cref(), y.ref(), o);
      for (int64_t i = 0; i < 8; i += 2) expect_largest("bias_gelu y", y, i);
      bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), db.ref(), y.ref(),
                         o);
      for (int64_t i = 0; i < 8; i += 2) expect_largest("bias_gelu_backward y", y, i);

      Buffer gx(e.t, {3, 2 * 8}), gy(e.t, {3, 8}), gdy(e.t, {3, 8}),
          gdx(e.t, {3, 2 * 8});
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t j = 0; j < 8; ++j) {
          gx.set(r * 16 + j, e.v);
          gx.set(r * 16 + 8 + j, e.gate);
          gdy.set(r * 8 + j, e.gate);  // dx(gate) = dy * gelu(v)
        }
      geglu(gx.cref(), gy.ref(), o);
      for (int64_t i = 0; i < 24; ++i) expect_largest("geglu y", gy, i);
      geglu_backward(gdy.cref(), gx.cref(), gdx.ref(), gy.ref(), o);
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t j = 0; j < 8; ++j) {
          expect_largest("geglu_backward y", gy, r * 8 + j);
          expect_largest("geglu_backward dx(gate)", gdx, r * 16 + 8 + j);
        }

      // dbias: 4 rows of 64 columns (the wide path's f32 group of 4 rows).
      Buffer bdy(e.t, {4, 64}), bx(e.t, {4, 64}), bb(e.t, {64}), bdx(e.t, {4, 64});
      Buffer bdb(e.t, {64});
      for (int64_t r = 0; r < 4; ++r)
        for (int64_t j = 0; j < 64; ++j) {
          bdy.set(r * 64 + j, j % 2 ? -e.dbias_rows[r] : e.dbias_rows[r]);
          bx.set(r * 64 + j, 100.0f);
          bb.set(j, 0.0f);
        }
      bias_gelu_backward(bdy.cref(), bx.cref(), bb.cref(), bdx.ref(), bdb.ref(), o);
      for (int64_t j = 0; j < 64; ++j)
        EXPECT_EQ(bdb.get(j), j % 2 ? -e.largest : e.largest) << "dbias[" << j << "]";
    }
  }
}

// dbias sums the f32 dx, not the stored one: a dx just past f16's boundary
// (within its 2^-16 band) is stored as the largest finite value, while
// dbias, whose band is 2^-20, is inf.
TEST_P(OverflowBoundary, DbiasSumsTheUnroundedResults) {
  const double lo = 65520.0 * (1 + 0x1p-18), hi = 65520.0 * (1 + 0x1p-17);
  for (Approx a : testing::kForms) {
    SCOPED_TRACE(approx_name(a));
    constexpr int64_t kCols = 64;
    Buffer dy(DType::f16, {1, kCols}), x(DType::f16, {1, kCols}),
        bias(DType::f16, {kCols});
    Buffer dx(DType::f16, {1, kCols}), db(DType::f16, {kCols});
    // f16 pre-activations in [0.5, 3] (gelu' > 1 near 1.4) and dy in
    // [2^15 * 1.75, max], the pairs whose dx lands in [lo, hi], repeated
    // over the row.
    std::vector<std::pair<float, float>> pairs;
    for (uint32_t hx = 0x3800; hx <= 0x4200; ++hx) {
      const float xv = f16_to_f32(static_cast<uint16_t>(hx));
      const double grad = ref::gelu_bwd(a, xv);
      for (uint32_t hd = 0x7b00; hd <= 0x7bff; ++hd) {
        const float d = f16_to_f32(static_cast<uint16_t>(hd));
        if (d * grad >= lo && d * grad <= hi) pairs.emplace_back(d, xv);
      }
    }
    ASSERT_GE(pairs.size(), 4u)
        << "f16 pairs with dy * gelu'(x) in [" << lo << ", " << hi << "]";
    for (int64_t j = 0; j < kCols; ++j) {
      dy.set(j, pairs[j % pairs.size()].first);
      x.set(j, pairs[j % pairs.size()].second);
    }
    for (int64_t j = 0; j < kCols; ++j) bias.set(j, 0.0f);
    bias_gelu_backward(dy.cref(), x.cref(), bias.cref(), dx.ref(), db.ref(),
                       {.approximate = a});
    for (int64_t j = 0; j < kCols; ++j) {
      EXPECT_EQ(dx.get(j), 65504.0f) << "dx[" << j << "]";
      EXPECT_TRUE(std::isinf(db.get(j))) << "dbias[" << j << "]: " << db.get(j);
    }
  }
}

GELU_INSTANTIATE_PER_TARGET(OverflowBoundary);

}  // namespace
}  // namespace gelu
