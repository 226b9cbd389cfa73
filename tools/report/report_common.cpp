// Shapes, buffers and element access for the report.
#include "report_common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace gelu::report {

Shape shape_for(int64_t n) {
  constexpr int64_t kCols = 4096;
  if (n >= kCols && n % kCols == 0) return {n / kCols, kCols};
  return {1, n};
}

std::string report_script(const std::string& name) {
  const char* dir = std::getenv("GELU_REPORT_DIR");
  return std::string(dir && *dir ? dir : GELU_REPORT_DIR) + "/" + name;
}

Buffer::Buffer(int64_t bytes) : bytes_(bytes) {
  const int64_t rounded = (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  p_.reset(std::aligned_alloc(64, static_cast<size_t>(rounded)));
  if (!p_) throw std::bad_alloc();
  std::memset(p_.get(), 0, static_cast<size_t>(rounded));  // first touch
}

void fill_uniform(DType t, void* p, int64_t n, float lo, float hi, uint64_t seed) {
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  const float scale = (hi - lo) / 16777216.0f;
  for (int64_t i = 0; i < n; ++i) {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;  // xorshift64
    store(t, p, i, lo + static_cast<float>(s >> 40) * scale);
  }
}

void fill_normal(DType t, void* p, int64_t n, float sigma, uint64_t seed) {
  // Box-Muller on the same xorshift64 stream: deterministic, no <random>
  // state to carry between calls.
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  auto uniform01 = [&s] {
    s ^= s << 13, s ^= s >> 7, s ^= s << 17;
    return (static_cast<double>(s >> 11) + 0.5) * 0x1p-53;
  };
  for (int64_t i = 0; i < n; ++i) {
    const double r = std::sqrt(-2.0 * std::log(uniform01()));
    store(t, p, i,
          static_cast<float>(sigma * r * std::cos(6.283185307179586 * uniform01())));
  }
}

}  // namespace gelu::report
