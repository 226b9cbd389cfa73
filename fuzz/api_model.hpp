// An independent model of which calls the public API must accept, written
// from include/gelu/gelu.hpp (and the op table's documented shape rules), not
// from src/core/validate.cpp. The fuzzer checks the library against it in
// both directions: a call the model accepts must succeed, one it rejects must
// throw gelu::Error with nothing written.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "gelu/gelu.hpp"

namespace gelu::fuzz {

enum class Op {
  gelu,
  gelu_backward,
  bias_gelu,
  bias_gelu_backward,
  add_gelu,
  add_gelu_backward,
  geglu,
  geglu_backward,
};
inline constexpr int kNumOps = 8;

enum class Shape { primary, same, last_dim, half_last };

struct Role {
  bool output;
  Shape shape;
  bool f32_allowed = false;  // dtype may be f32 instead of the primary's
  // The header's optional output: TensorRef{} (null data and no shape)
  // means "not requested", and no rule applies to it.
  bool optional = false;
};

struct OpModel {
  const char* name;
  int n;
  Role roles[6];
  bool rank_ge_1;
  bool even_last;
};

// Parameters in the order of the public function's arguments.
inline const OpModel& op_model(Op op) {
  static const OpModel kModels[kNumOps] = {
      {"gelu", 2, {{false, Shape::primary}, {true, Shape::same}}, false, false},
      {"gelu_backward",
       4,
       {{false, Shape::same},
        {false, Shape::primary},
        {true, Shape::same},
        {true, Shape::same, false, true}},
       false,
       false},
      {"bias_gelu",
       3,
       {{false, Shape::primary}, {false, Shape::last_dim}, {true, Shape::same}},
       true,
       false},
      {"bias_gelu_backward",
       6,
       {{false, Shape::same},
        {false, Shape::primary},
        {false, Shape::last_dim},
        {true, Shape::same},
        {true, Shape::last_dim, true},
        {true, Shape::same, false, true}},
       true,
       false},
      {"add_gelu",
       3,
       {{false, Shape::primary}, {false, Shape::same}, {true, Shape::same}},
       false,
       false},
      {"add_gelu_backward",
       4,
       {{false, Shape::same},
        {false, Shape::primary},
        {false, Shape::same},
        {true, Shape::same}},
       false,
       false},
      {"geglu", 2, {{false, Shape::primary}, {true, Shape::half_last}}, true, true},
      {"geglu_backward",
       4,
       {{false, Shape::half_last},
        {false, Shape::primary},
        {true, Shape::same},
        {true, Shape::half_last, false, true}},
       true,
       true},
  };
  return kModels[static_cast<int>(op)];
}

inline int primary_of(const OpModel& m) {
  for (int i = 0; i < m.n; ++i)
    if (m.roles[i].shape == Shape::primary) return i;
  return 0;
}

// Elements in `shape`, or nullopt where the API must reject it: a negative
// dimension, or more than 2^61 - 1 elements (bytes of f32 past int64).
inline std::optional<int64_t> model_numel(const std::vector<int64_t>& shape) {
  for (int64_t d : shape)
    if (d < 0) return std::nullopt;
  for (int64_t d : shape)
    if (d == 0) return 0;
  constexpr __int128 kMax = (__int128(1) << 61) - 1;
  __int128 n = 1;
  for (int64_t d : shape) {
    n *= d;
    if (n > kMax) return std::nullopt;
  }
  return static_cast<int64_t>(n);
}

// The shape a tensor must have, given the primary's (valid rank assumed).
inline std::vector<int64_t> expected_shape(Shape rule, const std::vector<int64_t>& p) {
  switch (rule) {
    case Shape::primary:
    case Shape::same: return p;
    case Shape::last_dim: return {p.back()};
    case Shape::half_last: {
      std::vector<int64_t> s = p;
      s.back() /= 2;
      return s;
    }
  }
  return p;
}

struct Arg {
  void* data;
  int dtype;  // raw: may be out of the enum's range
  std::vector<int64_t> shape;
};

inline bool valid_dtype(int t) { return t >= 0 && t <= 2; }

// An optional output left out: null data and no shape.
inline bool absent(const OpModel& m, const std::vector<Arg>& args, int i) {
  return m.roles[i].optional && args[i].data == nullptr && args[i].shape.empty();
}

// True when the API must accept the call.
inline bool model_accepts(Op op, const std::vector<Arg>& args, int threads,
                          int approx) {
  const OpModel& m = op_model(op);
  if (threads < 0 || approx < 0 || approx > 2) return false;
  std::vector<int64_t> n(m.n);  // an absent tensor: 0, overlapping nothing
  for (int i = 0; i < m.n; ++i) {
    if (absent(m, args, i)) continue;
    if (!valid_dtype(args[i].dtype)) return false;
    const auto k = model_numel(args[i].shape);
    if (!k) return false;
    n[i] = *k;
  }
  const int p = primary_of(m);
  const std::vector<int64_t>& ps = args[p].shape;
  if ((m.rank_ge_1 || m.even_last) && ps.empty()) return false;
  if (m.even_last && ps.back() % 2 != 0) return false;
  for (int i = 0; i < m.n; ++i) {
    if (i == p || absent(m, args, i)) continue;
    if (args[i].shape != expected_shape(m.roles[i].shape, ps)) return false;
    if (args[i].dtype != args[p].dtype &&
        !(m.roles[i].f32_allowed && args[i].dtype == 0))
      return false;
  }
  for (int i = 0; i < m.n; ++i)
    if (args[i].data == nullptr && n[i] != 0) return false;
  // Aliasing: an output may be the very same buffer as an input of its dtype
  // and shape (in place); any other overlap of an output with anything else
  // is an error. Empty tensors overlap nothing.
  auto size = [&](int i) {
    return static_cast<uintptr_t>(n[i]) * (args[i].dtype == 0 ? 4u : 2u);
  };
  for (int o = 0; o < m.n; ++o) {
    if (!m.roles[o].output || n[o] == 0) continue;
    const uintptr_t ob = reinterpret_cast<uintptr_t>(args[o].data);
    for (int i = 0; i < m.n; ++i) {
      if (i == o || n[i] == 0) continue;
      const uintptr_t ib = reinterpret_cast<uintptr_t>(args[i].data);
      if (ob + size(o) <= ib || ib + size(i) <= ob) continue;
      const bool in_place = !m.roles[i].output && ib == ob &&
                            args[i].dtype == args[o].dtype &&
                            args[i].shape == args[o].shape;
      if (!in_place) return false;
    }
  }
  return true;
}

}  // namespace gelu::fuzz
