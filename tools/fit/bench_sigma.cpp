// The input-distribution benchmark of the kernels: f32 gelu forward and
// backward of each form on x ~ N(0, 1), N(0, 2), N(0, 3) and tail-only
// U[-14, -4], against oneDNN 2.6's eltwise gelu_erf / gelu_tanh on the same
// buffers (256K elements, 1 thread), and the op at 32M elements on 1 and 2
// threads against a copy of the same bytes. Medians (and quartiles) of
// interleaved rounds, all in one process. Not part of the build; run by hand
// against a built library (to compare two versions, build each and run the
// two binaries alternately):
//
//   g++ -std=c++20 -O2 -fopenmp -Iinclude -Isrc tools/fit/bench_sigma.cpp
//       build/libgelu_fusion.a -ldnnl -lhwy -o /tmp/bench_sigma
//   /tmp/bench_sigma            (ROUNDS=<n>, BIG=0 skips the 32M part)
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "cpu/kernels.hpp"
#include "gelu/gelu.hpp"
#include "omp.h"
#include "oneapi/dnnl/dnnl.hpp"

namespace {

struct Case {
  std::string name;
  std::function<void()> fn;
  std::vector<double> ns;
};

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * double(v.size() - 1) + 0.5)];
}

void Fill(std::vector<float>& x, int dist) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> nd(0.f, dist == 3 ? 1.f : float(dist + 1));
  std::uniform_real_distribution<float> ud(-14.f, -4.f);
  for (float& v : x) v = dist == 3 ? ud(rng) : nd(rng);
}
const char* kDist[] = {"N(0,1)", "N(0,2)", "N(0,3)", "U[-14,-4]"};

void Time(std::vector<Case>& cases, int rounds, size_t n) {
  for (Case& c : cases) c.ns.clear();
  for (int r = 0; r < rounds; ++r)
    for (Case& c : cases) {
      const auto t0 = std::chrono::steady_clock::now();
      c.fn();
      const auto t1 = std::chrono::steady_clock::now();
      c.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                     double(n));
    }
}

}  // namespace

int main() {
  const int rounds = getenv("ROUNDS") ? atoi(getenv("ROUNDS")) : 41;
  const bool big = !getenv("BIG") || atoi(getenv("BIG")) != 0;
  // oneDNN runs on OpenMP's default team: one thread for the 256K part (a
  // second one would spin against the other jobs of a shared machine).
  omp_set_num_threads(1);
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream strm(eng);
  std::printf("target %s, median ns/element [quartiles] of %d interleaved rounds\n",
              gelu::cpu::target_name(), rounds);

  const size_t n = 256 * 1024;
  std::vector<float> x(n), dy(n), y(n);
  for (size_t i = 0; i < n; ++i) dy[i] = 1.0f + 1e-3f * float(i % 7);
  const memory::desc md({int64_t(n)}, memory::data_type::f32, memory::format_tag::a);
  memory mx(md, eng, x.data()), mdy(md, eng, dy.data()), my(md, eng, y.data());
  std::vector<Case> cases;
  for (auto alg :
       {dnnl::algorithm::eltwise_gelu_erf, dnnl::algorithm::eltwise_gelu_tanh}) {
    const std::string an = alg == dnnl::algorithm::eltwise_gelu_erf ? "erf" : "tanh";
    const auto fpd = dnnl::eltwise_forward::primitive_desc(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training, alg, md, 0.f,
                                    0.f),
        eng);
    const auto bpd = dnnl::eltwise_backward::primitive_desc(
        dnnl::eltwise_backward::desc(alg, md, md, 0.f, 0.f), eng, fpd);
    dnnl::eltwise_forward fwd(fpd);
    dnnl::eltwise_backward bwd(bpd);
    cases.push_back({"onednn " + an + " fwd",
                     [=, &strm] {
                       fwd.execute(strm, {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}});
                       strm.wait();
                     },
                     {}});
    cases.push_back({"onednn " + an + " bwd",
                     [=, &strm] {
                       bwd.execute(strm, {{DNNL_ARG_SRC, mx},
                                          {DNNL_ARG_DIFF_DST, mdy},
                                          {DNNL_ARG_DIFF_SRC, my}});
                       strm.wait();
                     },
                     {}});
  }
  const gelu::Approx forms[] = {gelu::Approx::none, gelu::Approx::tanh,
                                gelu::Approx::quick};
  const char* fname[] = {"erf", "tanh", "quick"};
  for (int f = 0; f < 3; ++f) {
    const auto a = forms[f];
    cases.push_back(
        {std::string("ours ") + fname[f] + " fwd",
         [&, a] { gelu::cpu::gelu_fwd(a, gelu::DType::f32, n, x.data(), y.data()); },
         {}});
    cases.push_back({std::string("ours ") + fname[f] + " bwd",
                     [&, a] {
                       gelu::cpu::gelu_bwd(a, gelu::DType::f32, n, dy.data(), x.data(),
                                           y.data());
                     },
                     {}});
  }
  for (int dist = 0; dist < 4; ++dist) {
    Fill(x, dist);
    Time(cases, rounds, n);
    std::printf("256K f32, 1 thread, x ~ %s\n", kDist[dist]);
    for (Case& c : cases)
      std::printf("  %-18s %6.3f [%6.3f %6.3f]\n", c.name.c_str(), Quantile(c.ns, 0.5),
                  Quantile(c.ns, 0.25), Quantile(c.ns, 0.75));
  }
  if (!big) return 0;

  const size_t nb = size_t(32) << 20;
  std::vector<float> bx(nb), by(nb);
  std::vector<Case> bc;
  for (int th : {1, 2}) {
    bc.push_back({"copy " + std::to_string(th) + "t",
                  [&, th] {
#pragma omp parallel for num_threads(th)
                    for (int k = 0; k < th; ++k) {
                      const size_t lo = nb * k / th, hi = nb * (k + 1) / th;
                      std::memcpy(by.data() + lo, bx.data() + lo, (hi - lo) * 4);
                    }
                  },
                  {}});
    bc.push_back({"ours erf fwd " + std::to_string(th) + "t",
                  [&, th] {
                    gelu::Options o;
                    o.num_threads = th;
                    gelu::gelu({bx.data(), gelu::DType::f32, {int64_t(nb)}},
                               {by.data(), gelu::DType::f32, {int64_t(nb)}}, o);
                  },
                  {}});
  }
  for (int dist = 0; dist < 3; ++dist) {
    Fill(bx, dist);
    Time(bc, std::max(5, rounds / 4), nb);
    std::printf("32M f32, x ~ %s\n", kDist[dist]);
    for (size_t k = 0; k < bc.size(); ++k) {
      const double med = Quantile(bc[k].ns, 0.5);
      std::printf("  %-18s %6.3f [%6.3f %6.3f]", bc[k].name.c_str(), med,
                  Quantile(bc[k].ns, 0.25), Quantile(bc[k].ns, 0.75));
      if (k % 2 == 1)
        std::printf("  %3.0f%% of copy", 100.0 * Quantile(bc[k - 1].ns, 0.5) / med);
      std::printf("\n");
    }
  }
  return 0;
}
