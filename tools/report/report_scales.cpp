#include "report_scales.hpp"

#include <algorithm>
#include <cstdio>

#include "report_case.hpp"
#include "report_onednn.hpp"
#include "report_timing.hpp"

namespace gelu::report {
namespace {

constexpr int kNumScales = sizeof(kInputScales) / sizeof(kInputScales[0]);
constexpr double kWideScaleTarget = 0.7;      // erf, quick: N(0, 2), N(0, 3)
constexpr double kWideScaleTanhTarget = 0.6;  // tanh: its tail path is longer
constexpr double kTailOnlyTarget = 0.5;

constexpr OpId kScaleOps[] = {OpId::gelu, OpId::gelu_backward, OpId::bias_gelu,
                              OpId::bias_gelu_backward};
constexpr OpId kShapeOps[] = {OpId::bias_gelu, OpId::bias_gelu_backward, OpId::geglu};
constexpr int64_t kShapeElements = 1 << 22;
constexpr int64_t kNarrowCols = 8, kWideCols = 65536;

template <size_t N>
std::vector<OpId> selected(const Settings& s, const OpId (&ops)[N]) {
  std::vector<OpId> out;
  for (OpId op : ops)
    if (std::find(s.ops.begin(), s.ops.end(), op) != s.ops.end()) out.push_back(op);
  return out;
}

// 256K (in cache) and the largest size.
std::vector<int64_t> scale_sizes(const Settings& s) {
  const int64_t big = *std::max_element(s.sizes.begin(), s.sizes.end());
  const int64_t cached = std::min<int64_t>(big, 1 << 18);
  return cached == big ? std::vector<int64_t>{big} : std::vector<int64_t>{cached, big};
}

}  // namespace

double scale_target(const InputScale& sc, Approx form) {
  if (sc.sigma == 0) return kTailOnlyTarget;
  return form == Approx::tanh ? kWideScaleTanhTarget : kWideScaleTarget;
}

std::vector<Case> scale_cases(OpId op, int64_t n) {
  const Shape shape = shape_for(n);
  std::vector<Case> cases;
  // make_case draws x ~ N(0, 1) and dy; the N(0, 1) scale keeps that x
  // (unit = itself: x = 1 * x) and draws the N(0, 1) bias.
  cases.push_back(make_case(op, DType::f32, shape));
  fill_inputs(cases[0], kInputScales[0], &cases[0]);
  for (int k = 1; k < kNumScales; ++k) {
    cases.push_back(make_case(op, DType::f32, shape, false));
    Case& c = cases.back();
    if (c.dy_elems)
      std::copy_n(static_cast<const char*>(cases[0].dy.data()), cases[0].dy.bytes(),
                  static_cast<char*>(c.dy.data()));
    fill_inputs(c, kInputScales[k], &cases[0]);
  }
  return cases;
}

void run_input_scales(const Settings& s, TorchPeer* torch, Report& r) {
  const std::vector<OpId> ops = selected(s, kScaleOps);
  if (ops.empty()) return;
  const std::vector<int64_t> sizes = scale_sizes(s);
  progress(
      "input scales (N(0,1), N(0,2), N(0,3), tail-only): %zu ops x %zu "
      "sizes x %zu threads, f32 (estimate %.0f s)\n",
      ops.size(), sizes.size(), s.threads.size(),
      ops.size() * s.throughput_forms.size() *
          (s.threads.size() * 1.0 + 1.5e-7 * sizes.back() * (1 + s.threads.size())));
  for (Approx form : s.throughput_forms)
    for (int64_t n : sizes)
      for (OpId op : ops) {
        std::vector<Case> cases = scale_cases(op, n);
        const int64_t bytes = traffic_bytes(op, DType::f32, cases[0].shape);
        Buffer src(bytes / 2), dst(bytes / 2);
        for (int threads : s.threads) {
          onednn::set_threads(threads);
          // Round order: ours and oneDNN on each scale, then the copy.
          std::vector<std::function<void()>> fns;
          std::vector<std::unique_ptr<onednn::Peer>> peers;
          std::vector<int> peer_at(kNumScales, -1);
          std::string why = s.peers ? "" : "--no-peers";
          for (int k = 0; k < kNumScales; ++k) {
            Case& c = cases[k];
            fns.push_back([&c, form, threads] { run_ours(c, form, threads); });
            auto peer = s.peers ? onednn::make_peer(c, form, &why) : nullptr;
            if (peer) {
              peer_at[k] = static_cast<int>(fns.size());
              onednn::Peer* p = peer.get();
              fns.push_back([p] { p->run(); });
              peers.push_back(std::move(peer));
            }
          }
          fns.push_back(
              [&] { parallel_copy(dst.data(), src.data(), bytes / 2, threads); });
          const TimingPolicy p = policy_for(n, s.few_rounds());
          const std::vector<Stat> st = time_interleaved(fns, p);
          // Index of ours on scale k: one slot per scale plus its peer's.
          std::vector<int> ours_at(kNumScales);
          for (int k = 0, i = 0; k < kNumScales; ++k) {
            ours_at[k] = i;
            i += peer_at[k] >= 0 ? 2 : 1;
          }
          for (int k = 0; k < kNumScales; ++k) {
            ThroughputRow row{op,    form,           DType::f32, n,  threads,
                              bytes, st[ours_at[k]], st.back(),  {}, {}};
            row.table = "scales";
            row.inputs = kInputScales[k].name;
            row.cols = cases[k].shape.cols;
            if (peer_at[k] >= 0) row.onednn.t = st[peer_at[k]];
            else row.onednn.note = why;
            row.torch.note = s.peers ? "not run" : "--no-peers";
            r.throughput.push_back(row);
            if (s.peers)
              torch->add_throughput(op, form, DType::f32, cases[k].shape, threads,
                                    bytes / 2, p, &kInputScales[k]);
            if (k > 0)
              r.cliffs.push_back(
                  {std::string(kInputScales[k].name) + " vs N(0,1) elements/s", op,
                   form, n, threads, st[ours_at[0]], st[ours_at[k]],
                   scale_target(kInputScales[k], form)});
          }
        }
      }
}

void run_shapes(const Settings& s, TorchPeer* torch, Report& r) {
  const std::vector<OpId> ops = selected(s, kShapeOps);
  if (ops.empty()) return;
  const int64_t n = std::min(kShapeElements,
                             *std::max_element(s.sizes.begin(), s.sizes.end()));
  progress(
      "shapes: last dimension %lld and %lld at %lld elements, %zu ops "
      "(estimate %.0f s)\n",
      static_cast<long long>(kNarrowCols), static_cast<long long>(kWideCols),
      static_cast<long long>(n), ops.size(),
      ops.size() * 2 * s.threads.size() * (0.3 + 4e-8 * n));
  for (int64_t want : {kNarrowCols, kWideCols})
    for (OpId op : ops) {
      const int64_t cols = std::min(want, n);
      if (n % cols) continue;
      const Shape shape{n / cols, cols};
      Case c = make_case(op, DType::f32, shape);
      const int64_t bytes = traffic_bytes(op, DType::f32, shape);
      Buffer src(bytes / 2), dst(bytes / 2);
      for (Approx form : s.throughput_forms)
        for (int threads : s.threads) {
          ThroughputRow row = time_throughput_row(s, torch, c, op, DType::f32, bytes,
                                                  src, dst, form, threads);
          row.table = "shapes";
          r.throughput.push_back(row);
        }
    }
}

}  // namespace gelu::report
