#include "report_cliffs.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <vector>

#include "report_case.hpp"
#include "report_scales.hpp"
#include "report_timing.hpp"

namespace gelu::report {
namespace {

constexpr double kStorageTarget = 1.6;  // target: bf16/f16 vs f32 elements/s

}  // namespace

void run_cliffs(const Settings& s, Report& r) {
  std::vector<OpId> ops;
  for (OpId op : s.ops)
    if (op == OpId::gelu || op == OpId::gelu_backward) ops.push_back(op);
  if (ops.empty()) return;
  const int64_t big = *std::max_element(s.sizes.begin(), s.sizes.end());
  const int64_t cached = std::min<int64_t>(big, 1 << 18);
  progress(
      "kernel cliffs: storage dtypes at %lld elements, "
      "input scales of the other forms (estimate %.0f s)\n",
      static_cast<long long>(big), 4 + 2e-7 * big);
  for (OpId op : ops) {
    // Storage: f32, bf16, f16 in the same rounds.
    const Shape shape = shape_for(big);
    Case f32 = make_case(op, DType::f32, shape),
         bf16 = make_case(op, DType::bf16, shape),
         f16 = make_case(op, DType::f16, shape);
    for (int threads : s.threads) {
      const auto st = time_interleaved({[&] { run_ours(f32, Approx::none, threads); },
                                        [&] { run_ours(bf16, Approx::none, threads); },
                                        [&] { run_ours(f16, Approx::none, threads); }},
                                       policy_for(big, s.few_rounds()));
      r.cliffs.push_back({"bf16 vs f32 elements/s", op, Approx::none, big, threads,
                          st[0], st[1], kStorageTarget});
      r.cliffs.push_back({"f16 vs f32 elements/s", op, Approx::none, big, threads,
                          st[0], st[2], kStorageTarget});
    }
    // Input scales of the forms the throughput section does not time
    // (report_scales.cpp adds its own forms' ratios): every scale in the
    // same rounds, 1 thread, in cache and at the largest size.
    for (int64_t n : {cached, big}) {
      std::vector<Case> cases = scale_cases(op, n);
      for (Approx form : kAllForms) {
        if (std::find(s.throughput_forms.begin(), s.throughput_forms.end(), form) !=
            s.throughput_forms.end())
          continue;
        std::vector<std::function<void()>> fns;
        for (Case& c : cases) fns.push_back([&c, form] { run_ours(c, form, 1); });
        const auto st = time_interleaved(fns, policy_for(n, s.few_rounds()));
        for (size_t k = 1; k < cases.size(); ++k)
          r.cliffs.push_back(
              {std::string(kInputScales[k].name) + " vs N(0,1) elements/s", op, form, n,
               1, st[0], st[k], scale_target(kInputScales[k], form)});
      }
      if (cached == big) break;
    }
  }
}

}  // namespace gelu::report
