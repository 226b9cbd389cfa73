// Shape cliffs: ns per element of bias_gelu, bias_gelu_backward and geglu
// (per input element) at a fixed element count for several last
// dimensions, against gelu / gelu_backward in the same run. Public API, f32
// by default, 1 thread; each round times every (op, shape) once in turn and
// the medians over rounds are printed, so a loaded machine slows all rows
// alike. The clock is the thread's CPU time by default (one thread: the op
// runs on the caller): on a shared machine wall time also counts the time
// the thread waited for a core, which swamped the ratios (2.3 ns/element
// for a 1.2 ns op); `wall` times the wall clock.
//   build/bench/shape_cliffs [elements=4194304] [rounds=15] [dtype=f32|bf16|f16]
//                            [last dims, comma separated=1,2,8,64,4096,65536]
//                            [clock=cpu|wall] [sigma of x=1] [threads=1]
// With more than one thread the clock is the wall clock.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <time.h>

#include "gelu/gelu.hpp"
#include "ref/convert.hpp"

namespace {

using gelu::DType;

struct Case {
  std::string op;
  int64_t cols;  // last dimension (0: the plain op)
  std::vector<double> ns;
};

bool g_wall_clock = false;

double now_s() {
  if (g_wall_clock) {
    return std::chrono::duration<double>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}

void fill(DType t, std::vector<uint16_t>& h, std::vector<float>& f, int64_t n,
          float sigma, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, sigma);
  f.resize(static_cast<size_t>(n));
  h.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    f[i] = normal(rng);
    h[i] = t == DType::bf16 ? gelu::f32_to_bf16(f[i]) : gelu::f32_to_f16(f[i]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const int64_t n = argc > 1 ? std::atoll(argv[1]) : int64_t{1} << 22;
  const int rounds = argc > 2 ? std::atoi(argv[2]) : 15;
  const std::string ds = argc > 3 ? argv[3] : "f32";
  const DType t = ds == "bf16" ? DType::bf16 : ds == "f16" ? DType::f16 : DType::f32;
  std::vector<int64_t> dims = {1, 2, 8, 64, 4096, 65536};
  if (argc > 4) {
    dims.clear();
    std::stringstream ss(argv[4]);
    for (std::string s; std::getline(ss, s, ',');)
      dims.push_back(std::atoll(s.c_str()));
  }
  const int threads = argc > 7 ? std::max(1, std::atoi(argv[7])) : 1;
  g_wall_clock = (argc > 5 && std::string(argv[5]) == "wall") || threads > 1;
  const float sigma = argc > 6 ? static_cast<float>(std::atof(argv[6])) : 1.0f;
  const size_t e = gelu::dtype_size(t);
  std::vector<float> xf, bf, dyf;
  std::vector<uint16_t> xh, bh, dyh;
  fill(t, xh, xf, n, sigma, 1);
  fill(t, bh, bf, n, 0.25f, 2);
  fill(t, dyh, dyf, n, 1.0f, 3);
  auto ptr = [&](std::vector<float>& f, std::vector<uint16_t>& h) -> void* {
    return t == DType::f32 ? static_cast<void*>(f.data())
                           : static_cast<void*>(h.data());
  };
  std::vector<char> out(static_cast<size_t>(n) * e), dbias(65536 * 4 + 64);
  gelu::Options o;
  o.num_threads = threads;
  std::vector<Case> cases = {{"gelu", 0, {}}, {"gelu_backward", 0, {}}};
  for (const char* op : {"bias_gelu", "bias_gelu_backward", "geglu"})
    for (int64_t c : dims)
      if (std::string(op) != "geglu" || c % 2 == 0) cases.push_back({op, c, {}});
  for (int r = 0; r < rounds; ++r) {
    for (Case& c : cases) {
      const int64_t cols = c.cols ? c.cols : n, rows = n / cols, m = rows * cols;
      const std::vector<int64_t> shape = {rows, cols};
      const gelu::ConstTensorRef x{ptr(xf, xh), t, shape}, dy{ptr(dyf, dyh), t, shape};
      const gelu::TensorRef y{out.data(), t, shape};
      const double t0 = now_s();
      if (c.op == "gelu") {
        gelu::gelu(x, y, o);
      } else if (c.op == "gelu_backward") {
        gelu::gelu_backward(dy, x, y, o);
      } else if (c.op == "bias_gelu") {
        gelu::bias_gelu(x, {ptr(bf, bh), t, {cols}}, y, o);
      } else if (c.op == "bias_gelu_backward") {
        gelu::bias_gelu_backward(dy, x, {ptr(bf, bh), t, {cols}}, y,
                                 {dbias.data(), DType::f32, {cols}}, o);
      } else {
        gelu::geglu(x, {out.data(), t, {rows, cols / 2}}, o);
      }
      c.ns.push_back((now_s() - t0) * 1e9 / static_cast<double>(m));
    }
  }
  std::printf(
      "%lld elements, %s, x ~ N(0, %g), %d thread(s), %s time, medians of %d "
      "interleaved rounds (ns/element; geglu per input element), [min-max]\n",
      static_cast<long long>(n), ds.c_str(), static_cast<double>(sigma), threads,
      g_wall_clock ? "wall" : "thread CPU", rounds);
  double plain[2] = {0, 0};
  for (Case& c : cases) {
    std::sort(c.ns.begin(), c.ns.end());
    const double med = c.ns[c.ns.size() / 2];
    if (c.cols == 0) plain[c.op == "gelu" ? 0 : 1] = med;
    const double ref = c.op == "bias_gelu_backward" || c.op == "gelu_backward"
                           ? plain[1]
                           : plain[0];
    std::printf("%-20s %6lld  %7.3f  x%.2f  [%.3f-%.3f]\n", c.op.c_str(),
                static_cast<long long>(c.cols), med, med / ref, c.ns.front(),
                c.ns.back());
  }
  return 0;
}
