#include <cmath>
// Op facts, buffers and element access for the report.
#include "report_common.hpp"

#include <algorithm>
#include <cstring>

#include "ref/convert.hpp"

namespace gelu::report {

const OpInfo& op_info(Op op) {
  // streams: elements read + written per GELU evaluation.
  static const OpInfo kInfo[] = {
      {"gelu", "gelu", false, 2},                 // x, y
      {"gelu_backward", "gelu", true, 3},         // dy, x, dx
      {"bias_gelu", "bias_gelu", false, 2},       // x, y (+ bias)
      {"bias_gelu_backward", "bias_gelu", true, 3},  // dy, x, dx (+ bias, dbias)
      {"add_gelu", "add_gelu", false, 3},         // a, b, y
      {"add_gelu_backward", "add_gelu", true, 4},  // dy, a, b, dx
      {"geglu", "geglu", false, 3},               // x (2 per y), y
      {"geglu_backward", "geglu", true, 5},       // dy, x (2), dx (2)
  };
  return kInfo[static_cast<int>(op)];
}

std::optional<Op> parse_op(const std::string& s) {
  for (Op op : kAllOps)
    if (s == op_info(op).name) return op;
  return std::nullopt;
}

Shape shape_for(int64_t n) {
  constexpr int64_t kCols = 4096;
  if (n >= kCols && n % kCols == 0) return {n / kCols, kCols};
  return {1, n};
}

int64_t traffic_bytes(Op op, DType t, Shape s) {
  const int64_t e = static_cast<int64_t>(dtype_size(t));
  int64_t bytes = op_info(op).streams * s.n() * e;
  if (op == Op::bias_gelu) bytes += s.cols * e;                // bias
  if (op == Op::bias_gelu_backward) bytes += s.cols * (e + 4);  // bias, dbias f32
  return bytes;
}

Buffer::Buffer(int64_t bytes) : bytes_(bytes) {
  const int64_t rounded = (std::max<int64_t>(bytes, 1) + 63) / 64 * 64;
  p_.reset(std::aligned_alloc(64, static_cast<size_t>(rounded)));
  if (!p_) throw std::bad_alloc();
  std::memset(p_.get(), 0, static_cast<size_t>(rounded));  // first touch
}

float load(DType t, const void* p, int64_t i) {
  switch (t) {
    case DType::f32: return static_cast<const float*>(p)[i];
    case DType::bf16: return bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::f16: return f16_to_f32(static_cast<const uint16_t*>(p)[i]);
  }
  return 0;
}

void store(DType t, void* p, int64_t i, float v) {
  switch (t) {
    case DType::f32: static_cast<float*>(p)[i] = v; return;
    case DType::bf16: static_cast<uint16_t*>(p)[i] = f32_to_bf16(v); return;
    case DType::f16: static_cast<uint16_t*>(p)[i] = f32_to_f16(v); return;
  }
}

void fill_uniform(DType t, void* p, int64_t n, float lo, float hi,
                  uint64_t seed) {
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
    store(t, p, i, static_cast<float>(sigma * r * std::cos(6.283185307179586 * uniform01())));
  }
}

}  // namespace gelu::report
