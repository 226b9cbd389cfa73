#include "report_accuracy.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace gelu::report {
namespace {

constexpr int64_t kCols = 64;

// Floats ordered as integers (negative values below positive ones).
int64_t order_key(float f) {
  const uint32_t u = f32_bits(f);
  return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu)
                           : static_cast<int64_t>(u);
}
float from_key(int64_t k) {
  return k < 0 ? f32_from_bits(static_cast<uint32_t>(-k) | 0x80000000u)
               : f32_from_bits(static_cast<uint32_t>(k));
}

// Where the op's pre-activation comes from (op table): x alone, x plus an
// addend (per column: bias; per element: add's b), or a gated op's value
// half with its gate.
struct Layout {
  bool addend, per_column, gated;
};
Layout layout(OpId id) {
  const core::OpDecl& op = op_decl(id);
  const int a = op.tensor_of(core::Role::addend);
  return {a >= 0, a >= 0 && op.tensors[a].shape == core::ShapeRule::last_dim,
          op.kind == core::OpKind::gated};
}

bool in_region(const Region& r, double v, bool last) {
  return v >= r.lo && (v < r.hi || (last && v == r.hi));
}

// The sweep's pre-activations for a dtype, region by region.
std::vector<float> sweep(DType t, int64_t f32_points) {
  std::vector<float> v;
  if (t == DType::f32) {
    for (const Region& r : kRegions) {
      const int64_t k0 = order_key(static_cast<float>(r.lo));
      const int64_t k1 = order_key(static_cast<float>(r.hi));
      for (int64_t i = 0; i < f32_points; ++i)
        v.push_back(from_key(k0 + (k1 - k0) * i / f32_points));
    }
    return v;
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = t == DType::bf16 ? bf16_to_f32(uint16_t(h))
                                     : f16_to_f32(uint16_t(h));
    if (f >= kRegions[0].lo && f <= kRegions[kNumRegions - 1].hi) v.push_back(f);
  }
  return v;
}

}  // namespace

Case accuracy_case(OpId op, DType t, int64_t f32_points) {
  std::vector<float> p = sweep(t, f32_points);
  const int64_t rows = (static_cast<int64_t>(p.size()) + kCols - 1) / kCols;
  p.resize(rows * kCols, p.back());
  Case c = make_case(op, t, {rows, kCols}, /*fill=*/false);
  const int64_t n = c.shape.n();
  if (c.dy_elems) fill_uniform(t, c.dy.data(), n, 0.5f, 2.f, 11);
  if (c.b_elems) fill_uniform(t, c.b.data(), c.b_elems, -1.f, 1.f, 12);
  const Layout l = layout(op);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = i / kCols, j = i % kCols;
    if (l.gated) {
      store(t, c.x.data(), r * 2 * kCols + j, p[i]);
      // The gate: 0.5 .. 2, from a hash of i.
      const float g = 0.5f + 1.5f * static_cast<float>((i * 2654435761u) % 1024) / 1024;
      store(t, c.x.data(), r * 2 * kCols + kCols + j, g);
    } else if (l.addend) {  // x = p - addend, so that x + addend is on the sweep
      store(t, c.x.data(), i, p[i] - load(t, c.b.data(), l.per_column ? j : i));
    } else {
      store(t, c.x.data(), i, p[i]);
    }
  }
  poison(c);
  return c;
}

void poison(Case& c) {
  for (int64_t i = 0; i < c.out_elems; ++i)
    store(c.dtype, c.out.data(), i, std::numeric_limits<float>::quiet_NaN());
}

std::vector<RegionError> measure(const Case& c, Approx form) {
  std::vector<RegionError> out(kNumRegions);
  const DType t = c.dtype;
  const int64_t k = c.shape.cols, n = c.shape.n();
  const bool bwd = op_decl(c.op).is_backward();
  const Layout l = layout(c.op);
  auto record = [&](double s, double got, double exact, double ulp) {
    // Relative error only where the exact value is a normal number of the
    // format: below, ULP (absolute spacing) is the meaningful measure.
    const double min_normal = std::ldexp(1.0, ref::format_bits(t).min_exp);
    double rel = std::fabs(exact) >= min_normal
                     ? std::fabs(got - exact) / std::fabs(exact)
                     : 0;
    if (std::isnan(got)) rel = ulp = std::numeric_limits<double>::infinity();
    for (int g = 0; g < kNumRegions; ++g) {
      if (!in_region(kRegions[g], s, g == kNumRegions - 1)) continue;
      RegionError& e = out[g];
      if (ulp > e.max_ulp) e.max_ulp = ulp, e.worst_x = s;
      e.max_rel = std::max(e.max_rel, rel);
      ++e.points;
    }
  };
  for (int64_t i = 0; i < n; ++i) {
    const int64_t r = i / k, j = i % k;
    const bool geglu = l.gated;
    const int64_t xi = geglu ? r * 2 * k + j : i;
    float sf = load(t, c.x.data(), xi);
    if (l.addend)  // the f32 sum every kernel evaluates at
      sf += load(t, c.b.data(), l.per_column ? j : i);
    const double s = sf;
    const double gate = geglu ? load(t, c.x.data(), xi + k) : 1.0;
    const double dy = bwd ? load(t, c.dy.data(), i) : 1.0;
    if (!bwd) {
      const double exact = ref::gelu_fwd(form, s) * gate;
      const double got = load(t, c.out.data(), i);
      record(s, got, exact, ref::contract_ulp_error(t, got, exact, 0.0, gate));
      continue;
    }
    const ref::GradTerms g = ref::gelu_bwd_terms(form, s);
    const double exact = dy * gate * ref::gelu_bwd(form, s);
    const double scale = std::fabs(dy * gate) * (std::fabs(g.t1) + std::fabs(g.t2));
    const double got = load(t, c.out.data(), xi);
    record(s, got, exact, ref::contract_ulp_error(t, got, exact, scale, dy * gate));
    if (geglu) {  // backward: the gate half, dy * gelu(x)
      const double ex2 = dy * ref::gelu_fwd(form, s);
      const double got2 = load(t, c.out.data(), xi + k);
      record(s, got2, ex2, ref::contract_ulp_error(t, got2, ex2, 0.0, dy));
    }
  }
  return out;
}

}  // namespace gelu::report
