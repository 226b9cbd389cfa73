#include "report_sections.hpp"

#include <cstdio>

#include "report_accuracy.hpp"
#include "report_onednn.hpp"
#include "report_timing.hpp"

namespace gelu::report {
namespace {

bool onednn_offers(OpId op) {
  return op == OpId::gelu || op == OpId::gelu_backward || op == OpId::bias_gelu ||
         op == OpId::add_gelu;
}

int64_t elements(const std::vector<int64_t>& v) {
  int64_t s = 0;
  for (int64_t n : v) s += n;
  return s;
}

}  // namespace

TimingPolicy policy_for(int64_t n, bool quick) {
  TimingPolicy p;
  if (n <= (1 << 18)) {
    p.min_rounds = quick ? 5 : 11, p.max_rounds = quick ? 11 : 41;
    p.budget_ns = quick ? 20e6 : 120e6;
  } else if (n <= (1 << 22)) {
    p.min_rounds = quick ? 3 : 5, p.max_rounds = quick ? 7 : 15;
    p.budget_ns = quick ? 40e6 : 150e6;
  } else {  // a round here takes 20-200 ms: keep them few
    p.min_rounds = 3, p.max_rounds = 3;
    p.budget_ns = 0;
  }
  return p;
}

std::vector<PendingTorchAccuracy> run_accuracy(const Settings& s, TorchPeer* torch,
                                               Report& r) {
  const size_t cases = s.ops.size() * s.accuracy_forms.size() * s.dtypes.size();
  progress(
      "[1/4] accuracy: %zu op/form/dtype cases, %lld f32 points "
      "per region (estimate %.0f s)\n",
      cases, static_cast<long long>(s.f32_points),
      cases * (4e-7 * 4 * s.f32_points + 0.02));
  std::vector<PendingTorchAccuracy> pending;
  onednn::set_threads(default_num_threads());
  for (OpId op : s.ops)
    for (Approx form : s.accuracy_forms)
      for (DType t : s.dtypes) {
        Case c = accuracy_case(op, t, s.f32_points);
        run_ours(c, form, 0);
        r.accuracy.push_back({op, form, t, "ours", "", measure(c, form)});
        if (!s.peers) continue;
        if (onednn_offers(op)) {
          std::string why;
          poison(c);
          auto peer = onednn::make_peer(c, form, &why);
          if (peer) peer->run();
          r.accuracy.push_back(
              {op, form, t, "oneDNN", peer ? "" : why,
               peer ? measure(c, form) : std::vector<RegionError>(kNumRegions)});
        }
        r.accuracy.push_back(
            {op, form, t, "PyTorch", "not run", std::vector<RegionError>(kNumRegions)});
        if (form != Approx::none && form != Approx::tanh) {  // F.gelu's forms
          r.accuracy.back().note = std::string("no ") + approx_name(form) +
                                   " form in PyTorch";
          continue;
        }
        pending.push_back({r.accuracy.size() - 1, torch->add_accuracy(c, form)});
      }
  return pending;
}

ThroughputRow time_throughput_row(const Settings& s, TorchPeer* torch, Case& c, OpId op,
                                  DType t, int64_t bytes, Buffer& src, Buffer& dst,
                                  Approx form, int threads) {
  const int64_t n = c.shape.n();
  onednn::set_threads(threads);
  std::string why;
  auto peer = s.peers ? onednn::make_peer(c, form, &why) : nullptr;
  if (!s.peers) why = "--no-peers";
  // Round order: ours, oneDNN, copy.
  std::vector<std::function<void()>> fns{[&] { run_ours(c, form, threads); }};
  if (peer) fns.push_back([&] { peer->run(); });
  fns.push_back([&] { parallel_copy(dst.data(), src.data(), bytes / 2, threads); });
  const TimingPolicy p = policy_for(n, s.few_rounds());
  const std::vector<Stat> st = time_interleaved(fns, p);
  ThroughputRow row{op, form, t, n, threads, bytes, st[0], st.back(), {}, {}};
  row.cols = c.shape.cols;
  if (peer) row.onednn.t = st[1];
  else row.onednn.note = why;
  row.torch.note = s.peers ? "not run" : "--no-peers";
  if (s.peers) torch->add_throughput(op, form, t, c.shape, threads, bytes / 2, p);
  return row;
}

void run_throughput(const Settings& s, TorchPeer* torch, Report& r) {
  double estimate = 0;
  const size_t per_size = s.ops.size() * s.throughput_dtypes.size() *
                          s.throughput_forms.size();
  for (int64_t n : s.sizes)
    estimate += per_size *
                (s.threads.size() *
                     (policy_for(n, s.few_rounds()).budget_ns * 1e-9 + 3 * 3e-9 * n) +
                 3e-9 * n * 4);
  progress(
      "[2/4] throughput: %zu cases (op x form x dtype x size x "
      "threads), %lld elements per op (estimate %.0f s with fast kernels)\n",
      per_size * s.sizes.size() * s.threads.size(),
      static_cast<long long>(elements(s.sizes)), estimate);
  // Progress weighs a case by its size (plus a fixed cost), so the estimate
  // holds when the large sizes come last.
  size_t done = 0;
  double work_done = 0, work_total = 0;
  for (int64_t n : s.sizes)
    work_total += (n + 1e6) * s.ops.size() * s.throughput_dtypes.size();
  const double start = now_ns();
  for (int64_t n : s.sizes)
    for (OpId op : s.ops)
      for (DType t : s.throughput_dtypes) {
        const Shape shape = shape_for(n);
        Case c = make_case(op, t, shape);
        const int64_t bytes = traffic_bytes(op, t, shape);
        Buffer src(bytes / 2), dst(bytes / 2);
        for (Approx form : s.throughput_forms)
          for (int threads : s.threads) {
            r.throughput.push_back(time_throughput_row(s, torch, c, op, t, bytes, src,
                                                       dst, form, threads));
          }
        ++done;
        work_done += n + 1e6;
        const size_t total = s.sizes.size() * s.ops.size() * s.throughput_dtypes.size();
        if (done % 8 == 0 || done == total) {
          const double el = (now_ns() - start) * 1e-9;
          progress(
              "  throughput %zu/%zu op x dtype x size done, "
              "%.0f s elapsed, ~%.0f s left\n",
              done, total, el, el / work_done * (work_total - work_done));
        }
      }
}

void run_overhead(const Settings& s, TorchPeer* torch, Report& r) {
  progress("[3/4] per-call overhead (estimate 1 s)\n");
  Case c = make_case(OpId::gelu, DType::f32, {1, 1});
  const Stat ours = time_alone([&] { run_ours(c, Approx::none, 1); }, 1000, 21);
  r.overhead.push_back(
      {"ours", "gelu::gelu, 1 f32 element, 1 thread", ours.median, ""});
  Case big = make_case(OpId::gelu, DType::f32, shape_for(4096));
  const Stat ours4k = time_alone([&] { run_ours(big, Approx::none, 1); }, 100, 21);
  r.overhead.push_back(
      {"ours", "gelu::gelu, 4K f32 elements, 1 thread (for scale)", ours4k.median, ""});
  if (!s.peers) return;
  onednn::set_threads(1);
  std::string why;
  auto peer = onednn::make_peer(c, Approx::none, &why);
  OverheadRow o{
      "oneDNN", "eltwise_forward gelu_erf execute + wait, 1 f32 element", {}, why};
  if (peer) o.ns = time_alone([&] { peer->run(); }, 1000, 21).median;
  r.overhead.push_back(o);
  torch->add_overhead();
}

void fill_torch(const Settings& s, const TorchPeer& torch,
                const std::vector<PendingTorchAccuracy>& pending, Report& r) {
  for (const PendingTorchAccuracy& p : pending) {
    AccuracyRow& row = r.accuracy[p.row];
    Case c = accuracy_case(row.op, row.dtype, s.f32_points);
    std::string why;
    if (torch.accuracy_output(p.id, c, &why)) {
      row.regions = measure(c, row.form);
      row.note.clear();
    } else {
      row.note = why;
    }
  }
  for (ThroughputRow& t : r.throughput)
    if (s.peers) t.torch = torch.throughput(t);
  if (s.peers) {
    OverheadRow o{"PyTorch", "torch._C._nn.gelu(out=) from python, 1 f32 element",
                  torch.overhead_ns(), torch.note()};
    r.overhead.push_back(o);
    // What a model's GELU call costs from python, ours against F.gelu in the
    // same interleaved rounds (adapters/torch/bench/call_overhead.py has every
    // op and form).
    const std::string& why = torch.py_overhead_note();
    r.overhead.push_back(
        {"PyTorch", "F.gelu(x) from python, 1 f32 element", torch.f_gelu_ns(), why});
    r.overhead.push_back({"ours", "gelu_fusion.gelu(x) from python, 1 f32 element",
                          torch.ours_gelu_ns(), why});
    std::optional<double> diff;
    if (torch.f_gelu_ns() && torch.ours_gelu_ns())
      diff = *torch.ours_gelu_ns() - *torch.f_gelu_ns();
    r.overhead.push_back({"ours - PyTorch",
                          "gelu_fusion.gelu(x) - F.gelu(x), medians of the same rounds",
                          diff, why});
  }
}

}  // namespace gelu::report
