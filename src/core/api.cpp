// Small public helpers: names, parsing, sizes.
#include <cctype>
#include <iterator>
#include <limits>
#include <string>

#include "core/plan.hpp"
#include "cpu/kernels.hpp"
#include "gelu/gelu.hpp"

namespace gelu {

const char* dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::bf16: return "bf16";
    case DType::f16: return "f16";
  }
  return "invalid dtype";
}

const char* approx_name(Approx a) {
  switch (a) {
#define GELU_FORM_NAME_CASE(name) \
  case Approx::name: return #name;
    GELU_FUSION_FORMS(GELU_FORM_NAME_CASE)
#undef GELU_FORM_NAME_CASE
  }
  return "invalid approximate";
}

std::string approx_names_listed() {
  std::string s;
  const std::size_t n = std::size(kAllForms);
  for (std::size_t i = 0; i < n; ++i) {
    if (i > 0) s += i + 1 < n ? ", " : " or ";
    s += std::string("'") + approx_name(kAllForms[i]) + "'";
  }
  return s;
}

Approx parse_approx(std::string_view s) {
  for (Approx a : kAllForms)
    if (s == approx_name(a)) return a;
  throw Error("approximate is '" + std::string(s) + "', expected " +
              approx_names_listed());
}

const char* gelu_half_name(GeluHalf h) {
  switch (h) {
    case GeluHalf::first: return "first";
    case GeluHalf::second: return "second";
  }
  return "invalid gelu_half";
}

GeluHalf parse_gelu_half(std::string_view s) {
  if (s == "first") return GeluHalf::first;
  if (s == "second") return GeluHalf::second;
  throw Error("gelu_half is '" + std::string(s) + "', expected 'first' or 'second'");
}

DType parse_dtype(std::string_view s) {
  if (s == "f32" || s == "float32") return DType::f32;
  if (s == "bf16" || s == "bfloat16") return DType::bf16;
  if (s == "f16" || s == "float16") return DType::f16;
  throw Error("dtype is '" + std::string(s) + "', expected f32, bf16 or f16");
}

std::size_t dtype_size(DType t) { return t == DType::f32 ? 4 : 2; }

int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    if (d < 0) throw Error("numel: negative dimension " + std::to_string(d));
  for (int64_t d : shape)
    if (d == 0) return 0;  // after the sign check: [0, -1] is an error too
  for (int64_t d : shape) {
    if (n > std::numeric_limits<int64_t>::max() / d)
      throw Error("numel: element count overflows int64");
    n *= d;
  }
  return n;
}

std::string simd_target() { return cpu::target_name(); }

std::vector<std::string> simd_targets() {
  std::vector<std::string> out;
  for (const cpu::Target& t : cpu::runnable_targets()) out.emplace_back(t.name);
  return out;
}

void set_simd_target(std::string_view name) {
  const auto lower = [](std::string_view s) {
    std::string out(s);
    for (char& c : out)
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  const std::string want = lower(name);
  if (want.empty() || want == "best") return cpu::pin_target(0);
  std::string choices;
  for (const cpu::Target& t : cpu::runnable_targets()) {
    if (lower(t.name) == want) return cpu::pin_target(t.bit);
    choices += (choices.empty() ? "" : ", ") + std::string(t.name);
  }
  throw Error("set_simd_target: target is '" + std::string(name) +
              "', expected one this CPU runs and this build has: " + choices +
              " (or 'best')");
}

int default_num_threads() { return core::this_machine().cores; }

}  // namespace gelu
