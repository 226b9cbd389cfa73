// Checks every output element of a successful call against the double
// reference under the accuracy contract (contract.hpp). Shared by the fuzzer
// and the reliability tests.
#pragma once

#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "api_model.hpp"
#include "contract.hpp"

namespace gelu::fuzz {

namespace detail {
inline std::string describe(const char* what, int64_t i, float got, double exact) {
  char buf[160];
  std::snprintf(buf, sizeof buf, "%s[%lld]: got %.9g (0x%08x), exact %.17g", what,
                static_cast<long long>(i), double(got), f32_bits(got), exact);
  return buf;
}
}  // namespace detail

// `before[i]`: tensor i's bytes as they were before the call (inputs); the
// outputs are read from args[i].data. Returns false with `why` on the first
// element outside the contract.
inline bool check_values(Op op, const std::vector<Arg>& a,
                         const std::vector<const void*>& before, Approx f,
                         std::string& why) {
  const auto dt = [&](int i) { return static_cast<DType>(a[i].dtype); };
  const auto in = [&](int i, int64_t k) { return load(dt(i), before[i], k); };
  const auto out = [&](int i, int64_t k) { return load(dt(i), a[i].data, k); };
  const int p = primary_of(op_model(op));
  const int64_t n = *model_numel(a[p].shape);
  if (n == 0 && op != Op::bias_gelu_backward) return true;
  const DType t = dt(p);
  // The backward ops' optional y, where requested: the forward's contract.
  const OpModel& m = op_model(op);
  const int iy = m.n - 1;
  if (m.roles[iy].optional && !absent(m, a, iy) && n > 0) {
    const int64_t cols = a[1].shape.empty() ? 1 : a[1].shape.back();
    for (int64_t k = 0, ny = *model_numel(a[iy].shape); k < ny; ++k) {
      const float y = out(iy, k);
      if (op == Op::geglu_backward) {
        const int64_t h = cols / 2, r = k / h, j = k % h;
        const float x = in(1, r * 2 * h + j), g = in(1, r * 2 * h + h + j);
        if (!geglu_fwd_ok(f, t, x, g, y))
          return why = detail::describe("y", k, y, ref::gelu_fwd(f, x) * g), false;
      } else {
        const float s = op == Op::bias_gelu_backward ? in(1, k) + in(2, k % cols)
                                                     : in(1, k);
        if (!fwd_ok(f, t, s, y))
          return why = detail::describe("y", k, y, ref::gelu_fwd(f, s)), false;
      }
    }
  }
  switch (op) {
    case Op::gelu:
      for (int64_t k = 0; k < n; ++k)
        if (!fwd_ok(f, t, in(0, k), out(1, k)))
          return why = detail::describe("y", k, out(1, k), ref::gelu_fwd(f, in(0, k))),
                 false;
      return true;
    case Op::gelu_backward:
      for (int64_t k = 0; k < n; ++k)
        if (!bwd_ok(f, t, in(0, k), in(1, k), out(2, k)))
          return why = detail::describe("dx", k, out(2, k),
                                        double(in(0, k)) * ref::gelu_bwd(f, in(1, k))),
                 false;
      return true;
    case Op::add_gelu:
      for (int64_t k = 0; k < n; ++k) {
        const float s = in(0, k) + in(1, k);
        if (!fwd_ok(f, t, s, out(2, k)))
          return why = detail::describe("y", k, out(2, k), ref::gelu_fwd(f, s)), false;
      }
      return true;
    case Op::add_gelu_backward:
      for (int64_t k = 0; k < n; ++k) {
        const float s = in(1, k) + in(2, k);
        if (!bwd_ok(f, t, in(0, k), s, out(3, k)))
          return why = detail::describe("dx", k, out(3, k),
                                        double(in(0, k)) * ref::gelu_bwd(f, s)),
                 false;
      }
      return true;
    case Op::bias_gelu: {
      const int64_t cols = a[0].shape.back();
      for (int64_t k = 0; k < n; ++k) {
        const float s = in(0, k) + in(1, k % cols);
        if (!fwd_ok(f, t, s, out(2, k)))
          return why = detail::describe("y", k, out(2, k), ref::gelu_fwd(f, s)), false;
      }
      return true;
    }
    case Op::bias_gelu_backward: {
      const int64_t cols = a[1].shape.back();
      std::vector<double> sum(cols, 0.0), scale(cols, 0.0), floor(cols, 0.0);
      std::vector<char> finite(cols, 1);
      for (int64_t k = 0; k < n; ++k) {
        const int64_t j = k % cols;
        const float dy = in(0, k), s = in(1, k) + in(2, j);
        if (!bwd_ok(f, t, dy, s, out(3, k)))
          return why = detail::describe("dx", k, out(3, k),
                                        double(dy) * ref::gelu_bwd(f, s)),
                 false;
        const ref::GradTerms g = ref::gelu_bwd_terms(f, s);
        const double e = double(dy) * (g.t1 + g.t2);
        sum[j] += e;
        scale[j] += std::fabs(double(dy)) * (std::fabs(g.t1) + std::fabs(g.t2));
        floor[j] += dbias_floor_term(dy);
        finite[j] &= std::isfinite(static_cast<float>(e));
      }
      for (int64_t j = 0; j < cols; ++j)
        if (!dbias_ok(dt(4), out(4, j), sum[j], scale[j], floor[j], finite[j]))
          return why = detail::describe("dbias", j, out(4, j), sum[j]), false;
      return true;
    }
    case Op::geglu: {
      const int64_t h = a[0].shape.back() / 2, rows = n / (2 * h);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < h; ++j) {
          const float x = in(0, r * 2 * h + j), g = in(0, r * 2 * h + h + j);
          const float y = out(1, r * h + j);
          if (!geglu_fwd_ok(f, t, x, g, y))
            return why = detail::describe("y", r * h + j, y, ref::gelu_fwd(f, x) * g),
                   false;
        }
      return true;
    }
    case Op::geglu_backward: {
      const int64_t h = a[1].shape.back() / 2, rows = n / (2 * h);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < h; ++j) {
          const int64_t ia = r * 2 * h + j, ig = ia + h;
          const float dy = in(0, r * h + j), x = in(1, ia), g = in(1, ig);
          if (!geglu_bwd_a_ok(f, t, dy, x, g, out(2, ia)))
            return why = detail::describe("dx(value half)", ia, out(2, ia),
                                          double(dy) * g * ref::gelu_bwd(f, x)),
                   false;
          if (!geglu_bwd_g_ok(f, t, dy, x, out(2, ig)))
            return why = detail::describe("dx(gate half)", ig, out(2, ig),
                                          double(dy) * ref::gelu_fwd(f, x)),
                   false;
        }
      return true;
    }
  }
  return true;
}

}  // namespace gelu::fuzz
