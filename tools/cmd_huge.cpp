// `gelu-fusion huge`: one real bf16 call on more than 2^31 elements,
// checked against the double reference on samples. Not run in CI: it needs
// 4 GiB per tensor (8 GiB out of place, 4 GiB with --in-place).
//
//   gelu-fusion huge [--n N] [--op gelu|gelu_backward] [--form none|tanh|quick]
//                    [--in-place] [--samples K] [--threads T]
//
// x[i] is a hash of i (not periodic), so an index that wraps at 2^31 or 2^32
// reads the wrong value and fails the check. Samples: the first and last
// 4096 elements, 4096 around 2^31 and 2^32 (where within n), and K spread by
// a hash. Exit status 1 on any sample outside 1 bf16 ULP (forward) or 1 ULP
// of |dy| * (|t1| + |t2|) (backward).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "command.hpp"
#include "core/op_table.hpp"
#include "gelu/gelu.hpp"
#include "ref/convert.hpp"
#include "ref/gelu_ref.hpp"
#include "ref/ulp.hpp"

namespace {

uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// A bf16 in about [-8, 8) that depends on every bit of i.
uint16_t value_at(uint64_t i, uint64_t salt) {
  const double u = double(mix(i * 0x9e3779b97f4a7c15ull + salt) >> 11) * 0x1p-53;
  return gelu::f32_to_bf16(float(16.0 * u - 8.0));
}

std::string arg_value(const std::vector<std::string>& args, size_t& i) {
  if (i + 1 >= args.size()) throw gelu::Error(args[i] + " needs a value");
  return args[++i];
}

int run_huge(const std::vector<std::string>& args) {
  int64_t n = (int64_t(1) << 31) + (int64_t(1) << 20) + 3;
  int64_t samples = 1 << 20;
  std::string op = "gelu";
  gelu::Options o;
  bool in_place = false;
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--n") n = std::stoll(arg_value(args, i));
    else if (args[i] == "--samples") samples = std::stoll(arg_value(args, i));
    else if (args[i] == "--op") op = arg_value(args, i);
    else if (args[i] == "--form")
      o.approximate = gelu::parse_approx(arg_value(args, i));
    else if (args[i] == "--threads") o.num_threads = std::stoi(arg_value(args, i));
    else if (args[i] == "--in-place") in_place = true;
    else throw gelu::Error("unknown option '" + args[i] + "'");
  }
  const bool backward = op == "gelu_backward";
  if (!backward && op != "gelu") throw gelu::Error("--op is gelu or gelu_backward");
  if (n <= 0) throw gelu::Error("--n must be positive");

  const double gib = double(n) * 2 / (1 << 30);
  std::printf("huge: %s %s bf16, n = %lld (2^31 + %lld), %.2f GiB per tensor, %s\n",
              op.c_str(), gelu::approx_name(o.approximate), (long long)n,
              (long long)(n - (int64_t(1) << 31)), gib,
              in_place ? "in place" : "out of place");
  std::unique_ptr<uint16_t[]> x(new uint16_t[n]);
  std::unique_ptr<uint16_t[]> dy(backward ? new uint16_t[n] : nullptr);
  std::unique_ptr<uint16_t[]> y(in_place ? nullptr : new uint16_t[n]);
#pragma omp parallel for schedule(static)
  for (int64_t i = 0; i < n; ++i) {
    x[i] = value_at(i, 1);
    if (backward) dy[i] = value_at(i, 2);
    if (!in_place) y[i] = 0xA5A5;  // poison: an unwritten element fails
  }
  uint16_t* out = in_place ? (backward ? dy.get() : x.get()) : y.get();
  const std::vector<int64_t> shape{n};
  const auto bf16 = gelu::DType::bf16;
  const auto t0 = std::chrono::steady_clock::now();
  if (backward)
    gelu::gelu_backward({dy.get(), bf16, shape}, {x.get(), bf16, shape},
                        {out, bf16, shape}, o);
  else gelu::gelu({x.get(), bf16, shape}, {out, bf16, shape}, o);
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const int streams = gelu::core::op_decl(backward ? gelu::core::OpId::gelu_backward
                                                   : gelu::core::OpId::gelu)
                          .streams();
  std::printf("huge: call took %.3f s, %.1f GB/s (%d streams)\n", secs,
              double(n) * 2 * streams / secs * 1e-9, streams);

  std::vector<int64_t> idx;
  auto window = [&](int64_t from) {
    for (int64_t i = std::max<int64_t>(0, from); i < std::min(n, from + 4096); ++i)
      idx.push_back(i);
  };
  window(0);
  window(n - 4096);
  window((int64_t(1) << 31) - 2048);
  window((int64_t(1) << 32) - 2048);
  for (int64_t k = 0; k < samples; ++k)
    idx.push_back(int64_t(mix(k + 7) % uint64_t(n)));

  int64_t bad = 0;
  double worst = 0;
  for (int64_t i : idx) {
    // Inputs are recomputed from i (an in-place call overwrote them).
    const float xi = gelu::bf16_to_f32(value_at(i, 1));
    const float got = gelu::bf16_to_f32(out[i]);
    double err;
    if (backward) {
      const float d = gelu::bf16_to_f32(value_at(i, 2));
      const auto tm = gelu::ref::gelu_bwd_terms(o.approximate, xi);
      const double exact = double(d) * (tm.t1 + tm.t2);
      const double scale = std::fabs(d) * (std::fabs(tm.t1) + std::fabs(tm.t2));
      err = gelu::ref::scaled_ulp_error(bf16, got, exact, scale);
    } else {
      err = gelu::ref::ulp_error(bf16, got, gelu::ref::gelu_fwd(o.approximate, xi));
    }
    if (!(err <= 1.0)) {
      if (bad++ < 10)
        std::printf("huge: element %lld: x %g got %g, %g ulp\n", (long long)i,
                    double(xi), double(got), err);
    }
    if (err > worst || std::isnan(err)) worst = err;
  }
  std::printf("huge: %zu samples, worst %.3f bf16 ulp, %lld outside 1 ulp: %s\n",
              idx.size(), worst, (long long)bad, bad ? "FAIL" : "ok");
  return bad ? 1 : 0;
}

}  // namespace

GELU_COMMAND("huge",
             "one bf16 call on > 2^31 elements, samples vs the reference (needs 8 GiB)",
             run_huge);
