#include "report_cliffs.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "report_case.hpp"
#include "report_timing.hpp"

namespace gelu::report {
namespace {

constexpr double kStorageTarget = 1.6;  // target: bf16/f16 vs f32 elements/s
constexpr double kTailTarget = 0.5;     // target: tail-only vs N(0, 1)

// Refills x with tail-only inputs, U[-14, -4] (the deep negative tail).
void fill_tail(Case& c) { fill_uniform(c.dtype, c.x.data(), c.x_elems, -14.f, -4.f, 7); }

}  // namespace

void run_cliffs(const Settings& s, Report& r) {
  std::vector<OpId> ops;
  for (OpId op : s.ops)
    if (op == OpId::gelu || op == OpId::gelu_backward) ops.push_back(op);
  if (ops.empty()) return;
  const int64_t big = *std::max_element(s.sizes.begin(), s.sizes.end());
  const int64_t cached = std::min<int64_t>(big, 1 << 18);
  std::fprintf(stderr, "report: kernel cliffs: storage dtypes at %lld elements, "
               "tail-only inputs (estimate %.0f s)\n",
               static_cast<long long>(big), 4 + 2e-7 * big);
  for (OpId op : ops) {
    // Storage: f32, bf16, f16 in the same rounds.
    const Shape shape = shape_for(big);
    Case f32 = make_case(op, DType::f32, shape), bf16 = make_case(op, DType::bf16, shape),
         f16 = make_case(op, DType::f16, shape);
    for (int threads : s.threads) {
      const auto st = time_interleaved({[&] { run_ours(f32, Approx::none, threads); },
                                        [&] { run_ours(bf16, Approx::none, threads); },
                                        [&] { run_ours(f16, Approx::none, threads); }},
                                       policy_for(big, s.quick));
      r.cliffs.push_back({"bf16 vs f32 elements/s", op, Approx::none, big, threads,
                          st[0], st[1], kStorageTarget});
      r.cliffs.push_back({"f16 vs f32 elements/s", op, Approx::none, big, threads,
                          st[0], st[2], kStorageTarget});
    }
    // Inputs: N(0, 1) against the tail only, every form, 1 thread.
    for (int64_t n : {cached, big}) {
      Case normal = make_case(op, DType::f32, shape_for(n)),
           tail = make_case(op, DType::f32, shape_for(n));
      fill_tail(tail);
      for (Approx form : {Approx::none, Approx::tanh, Approx::quick}) {
        const auto st = time_interleaved({[&] { run_ours(normal, form, 1); },
                                          [&] { run_ours(tail, form, 1); }},
                                         policy_for(n, s.quick));
        r.cliffs.push_back({"tail-only vs N(0,1) elements/s", op, form, n, 1, st[0], st[1],
                            kTailTarget});
      }
      if (cached == big) break;
    }
  }
}

}  // namespace gelu::report
