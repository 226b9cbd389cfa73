// Throwaway-sized benchmark of the per-target GELU math against oneDNN 2.6's
// eltwise gelu_erf, side by side in one process (1 thread, 256K f32 elements,
// medians of interleaved rounds). Not part of the build; run by hand:
//
//   g++ -std=c++20 -O2 -I. -Isrc -Iinclude tools/fit/bench_gelu_math.cpp
//       -lhwy -ldnnl -o /tmp/bench_gelu_math
//   OMP_NUM_THREADS=1 /tmp/bench_gelu_math
//
// Inputs: N(0, 1), N(0, 2), N(0, 3) and the negative tail U[-14, -4].
// N=<elements> in the environment changes the size.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <random>
#include <string>
#include <vector>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "tools/fit/bench_gelu_math.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/gelu_math-inl.h"
#include "hwy/aligned_allocator.h"
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {

template <class M>
HWY_NOINLINE void Fwd(const float* x, float* y, size_t n) {
  const hn::ScalableTag<float> d;
  for (size_t i = 0; i < n; i += hn::Lanes(d))
    hn::Store(M::Value(d, hn::Load(d, x + i)), d, y + i);
}
template <class M>
HWY_NOINLINE void Bwd(const float* dy, const float* x, float* dx, size_t n) {
  const hn::ScalableTag<float> d;
  for (size_t i = 0; i < n; i += hn::Lanes(d))
    // dy * gelu'(x) as an FMA: gelu' is subnormal deep in the tail, and some
    // x86 cores take a slow path for vmulps with subnormal operands (not for FMA).
    hn::Store(hn::MulAdd(hn::Load(d, dy + i), M::Grad(d, hn::Load(d, x + i)),
                         hn::Set(d, -0.0f)),
              d, dx + i);
}
// form: 0 erf, 1 tanh, 2 quick; bwd: 0/1.
void Run(int form, int bwd, const float* dy, const float* x, float* y, size_t n) {
  if (form == 0) bwd ? Bwd<GeluErfMath>(dy, x, y, n) : Fwd<GeluErfMath>(x, y, n);
  if (form == 1) bwd ? Bwd<GeluTanhMath>(dy, x, y, n) : Fwd<GeluTanhMath>(x, y, n);
  if (form == 2) bwd ? Bwd<GeluQuickMath>(dy, x, y, n) : Fwd<GeluQuickMath>(x, y, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "oneapi/dnnl/dnnl.hpp"

namespace gelu::cpu {
HWY_EXPORT(Run);
}

int main() {
  using dnnl::memory;
  const size_t n = getenv("N") ? size_t(atol(getenv("N"))) : 256 * 1024;
  hwy::AlignedFreeUniquePtr<float[]> x = hwy::AllocateAligned<float>(n),
                                     dy = hwy::AllocateAligned<float>(n),
                                     y = hwy::AllocateAligned<float>(n);
  std::mt19937 rng(1);
  for (size_t i = 0; i < n; ++i) dy[i] = 1.0f + 1e-3f * float(i % 7);

  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const memory::desc md({int64_t(n)}, memory::data_type::f32, memory::format_tag::a);
  memory mx(md, eng, x.get()), mdy(md, eng, dy.get()), my(md, eng, y.get());
  const auto fdesc = dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_training,
                                                 dnnl::algorithm::eltwise_gelu_erf, md,
                                                 0.f, 0.f);
  const auto fpd = dnnl::eltwise_forward::primitive_desc(fdesc, eng);
  dnnl::eltwise_forward fwd(fpd);
  const auto bpd = dnnl::eltwise_backward::primitive_desc(
      dnnl::eltwise_backward::desc(dnnl::algorithm::eltwise_gelu_erf, md, md, 0.f, 0.f),
      eng, fpd);
  dnnl::eltwise_backward bwd(bpd);

  struct Case {
    std::string name;
    std::function<void()> fn;
    std::vector<double> ns;
  };
  std::vector<Case> cases;
  cases.push_back({"onednn gelu_erf fwd",
                   [&] {
                     fwd.execute(s, {{DNNL_ARG_SRC, mx}, {DNNL_ARG_DST, my}});
                     s.wait();
                   },
                   {}});
  cases.push_back({"onednn gelu_erf bwd",
                   [&] {
                     bwd.execute(s, {{DNNL_ARG_SRC, mx},
                                     {DNNL_ARG_DIFF_DST, mdy},
                                     {DNNL_ARG_DIFF_SRC, my}});
                     s.wait();
                   },
                   {}});
  const char* forms[] = {"erf", "tanh", "quick"};
  for (int f = 0; f < 3; ++f) {
    for (int b = 0; b < 2; ++b) {
      cases.push_back({std::string("ours ") + forms[f] + (b ? " bwd" : " fwd"),
                       [&, f, b] {
                         HWY_DYNAMIC_DISPATCH(gelu::cpu::Run)
                         (f, b, dy.get(), x.get(), y.get(), n);
                       },
                       {}});
    }
  }
  std::printf("target %s, %zu elements, 1 thread, median ns/element\n",
              hwy::TargetName(hwy::SupportedAndGeneratedTargets()[0]), n);
  const char* dist_name[] = {"N(0,1)", "N(0,2)", "N(0,3)", "U[-14,-4]"};
  for (int dist = 0; dist < 4; ++dist) {
    std::normal_distribution<float> nd(0.f, float(dist + 1));
    std::uniform_real_distribution<float> ud(-14.f, -4.f);
    for (size_t i = 0; i < n; ++i) x[i] = dist < 3 ? nd(rng) : ud(rng);
    for (Case& c : cases) c.ns.clear();
    for (int round = 0; round < 41; ++round) {
      for (Case& c : cases) {
        const auto t0 = std::chrono::steady_clock::now();
        c.fn();
        const auto t1 = std::chrono::steady_clock::now();
        c.ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count() /
                       double(n));
      }
    }
    std::printf("inputs %s\n", dist_name[dist]);
    const double base = [&] {
      std::vector<double> v = cases[0].ns;
      std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
      return v[v.size() / 2];
    }();
    for (Case& c : cases) {
      std::nth_element(c.ns.begin(), c.ns.begin() + c.ns.size() / 2, c.ns.end());
      const double med = c.ns[c.ns.size() / 2];
      std::printf("  %-22s %7.3f ns/elem  (oneDNN fwd / this = %.2fx)\n",
                  c.name.c_str(), med, base / med);
    }
  }
  return 0;
}
#endif
