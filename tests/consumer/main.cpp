// A program using the installed library: gelu on f32 values, each checked
// against erf-form GELU in double (the contract: within 2 ULP), the header's
// version against the library's, and a misuse caught as gelu::Error.
// Built by tests/consumer/CMakeLists.txt and by plain g++ with pkg-config
// (scripts/test-packaging.sh); exits non-zero on any failure.
#include <gelu/gelu.hpp>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <vector>

namespace {

double gelu_erf(double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }

// Spacing of floats at |v|.
double ulp(float v) {
  const float a = std::fabs(v);
  return std::nextafter(a, std::numeric_limits<float>::infinity()) - a;
}

}  // namespace

int main() {
  int failures = 0;
  if (std::strcmp(gelu::version(), GELU_FUSION_VERSION_STRING) != 0) {
    std::printf("FAIL: library %s, header %s\n", gelu::version(),
                GELU_FUSION_VERSION_STRING);
    ++failures;
  }

  // 3 rows of 37 (an odd size: SIMD tails), from -12 (the negative tail) up.
  const int64_t rows = 3, cols = 37;
  std::vector<float> x(rows * cols);
  for (size_t i = 0; i < x.size(); ++i) x[i] = -12.0f + 0.17f * float(i);
  std::vector<float> y(x.size(), std::numeric_limits<float>::quiet_NaN());
  gelu::gelu({x.data(), gelu::DType::f32, {rows, cols}},
             {y.data(), gelu::DType::f32, {rows, cols}});
  for (size_t i = 0; i < x.size(); ++i) {
    const double exact = gelu_erf(x[i]);
    const double err = std::fabs(double(y[i]) - exact) / ulp(float(exact));
    if (!(err <= 2.0)) {  // also catches a NaN left unwritten
      std::printf("FAIL: gelu(%.9g) = %.9g, exact %.9g (%.2f ulp)\n", x[i], y[i], exact,
                  err);
      ++failures;
    }
  }

  try {
    gelu::gelu({x.data(), gelu::DType::f32, {rows, cols}},
               {y.data(), gelu::DType::f32, {rows, cols - 1}});
    std::printf("FAIL: a shape mismatch did not throw\n");
    ++failures;
  } catch (const gelu::Error& e) {
    std::printf("gelu::Error as expected: %s\n", e.what());
  }

  std::printf("%s: gelu-fusion %s (%s), %zu values\n", failures ? "FAILED" : "ok",
              gelu::version(), gelu::simd_target().c_str(), x.size());
  return failures ? 1 : 0;
}
