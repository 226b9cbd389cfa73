// Driver A/B benchmark: two versions of src/cpu/driver-inl.h (run.sh builds
// each side from variant.cpp) timed in one process on the same buffers, f32
// gelu forward and backward of each form, 256K elements (N=<count> in the
// environment for another size; STREAM=1 runs the rows with streamed
// non-temporal stores, into a 64-byte-aligned output; both sides' drivers
// must stream then), 1 thread, on
// x ~ N(0, 1), N(0, 2), N(0, 3) and tail-only U[-14, -4]. Rounds alternate
// which side runs first, each timing follows an untimed warm-up call, and
// time is the thread's CPU time: on a shared machine other jobs add time,
// never remove it, so the 20% quantile of the rounds is printed (a median
// spread +-10% between identical sides on the 2-core machine while it
// compiled; the 20% quantile within +-3%).
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <random>
#include <vector>

extern "C" void run_a(int, size_t, const float*, const float*, float*);
extern "C" void run_b(int, size_t, const float*, const float*, float*);

namespace {

double ThreadNs() {
  timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) * 1e9 + double(t.tv_nsec);
}

// Scale 0-2: N(0, scale + 1); scale 3: U[-14, -4], every lane in the tail.
void Fill(std::vector<float>& x, int scale) {
  std::mt19937 rng(12345);
  std::normal_distribution<float> normal(0.f, float(scale + 1));
  std::uniform_real_distribution<float> tail(-14.f, -4.f);
  for (float& v : x) v = scale == 3 ? tail(rng) : normal(rng);
}

double Quantile20(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 5];
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = getenv("N") ? std::max(1L, atol(getenv("N"))) : 262144;
  const int stream = getenv("STREAM") && atoi(getenv("STREAM")) != 0 ? 6 : 0;
  const int rounds = argc > 1 ? std::max(1, atoi(argv[1])) : 15;
  std::vector<float> xs[4], dy(n), out_plain(n);
  for (int d = 0; d < 4; ++d) {
    xs[d].resize(n);
    Fill(xs[d], d);
  }
  std::mt19937 rng(7);
  std::normal_distribution<float> normal;
  for (float& v : dy) v = normal(rng);
  // Streamed stores need an aligned output (the library aligns a head).
  std::vector<float> out_aligned(n + 16);
  float* const out_data = out_aligned.data() +
                          (16 -
                           reinterpret_cast<uintptr_t>(out_aligned.data()) / 4 % 16) %
                              16;
  float* const out = stream ? out_data : out_plain.data();
  const char* names[6] = {"erf fwd", "tanh fwd", "quick fwd",
                          "erf bwd", "tanh bwd", "quick bwd"};
  std::vector<double> t[2][6][4];
  for (int r = 0; r < rounds; ++r)
    for (int o = 0; o < 6; ++o)
      for (int d = 0; d < 4; ++d)
        for (int k = 0; k < 2; ++k) {
          const int side = k ^ (r & 1);
          auto run = side ? run_b : run_a;
          run(o + stream, n, dy.data(), xs[d].data(), out);
          const double t0 = ThreadNs();
          for (int rep = 0; rep < 3; ++rep)
            run(o + stream, n, dy.data(), xs[d].data(), out);
          t[side][o][d].push_back((ThreadNs() - t0) / (3.0 * double(n)));
        }
  printf("ns/element A|B and B/A  %-17s %-17s %-17s %-17s N(0,3) speed/N(0,1) A B\n",
         "N(0,1)", "N(0,2)", "N(0,3)", "U[-14,-4]");
  for (int o = 0; o < 6; ++o) {
    printf("%-23s", names[o]);
    double a[4], b[4];
    for (int d = 0; d < 4; ++d) {
      a[d] = Quantile20(t[0][o][d]);
      b[d] = Quantile20(t[1][o][d]);
      printf(" %.3f|%.3f %.2f ", a[d], b[d], b[d] / a[d]);
    }
    printf("  %.2f %.2f\n", a[0] / a[2], b[0] / b[2]);
  }
}
