// Typed element access for tests, tools and the fuzzer: element i of a
// buffer of any storage dtype as float, and a float stored into one (round
// to nearest even, as the kernels store). Not part of the shipped library.
#pragma once

#include <cstdint>
#include <cstring>

#include "gelu/gelu.hpp"
#include "ref/convert.hpp"

namespace gelu::ref {

// Element i of `p` (dtype t) as float; memcpy, so p needs no alignment.
inline float load(DType t, const void* p, int64_t i) {
  const char* b = static_cast<const char*>(p);
  if (t == DType::f32) {
    float f;
    std::memcpy(&f, b + 4 * i, 4);
    return f;
  }
  uint16_t h;
  std::memcpy(&h, b + 2 * i, 2);
  return t == DType::bf16 ? bf16_to_f32(h) : f16_to_f32(h);
}

// Stores v rounded to dtype t as element i of `p`; load() then returns the
// stored value.
inline void store(DType t, void* p, int64_t i, float v) {
  char* b = static_cast<char*>(p);
  if (t == DType::f32) {
    std::memcpy(b + 4 * i, &v, 4);
    return;
  }
  const uint16_t h = t == DType::bf16 ? f32_to_bf16(v) : f32_to_f16(v);
  std::memcpy(b + 2 * i, &h, 2);
}

// The value `v` takes once stored in dtype t (through f32, as the kernels
// do).
inline float stored(DType t, double v) {
  const float f = static_cast<float>(v);
  switch (t) {
    case DType::f32: return f;
    case DType::bf16: return bf16_to_f32(f32_to_bf16(f));
    case DType::f16: return f16_to_f32(f32_to_f16(f));
  }
  return f;
}

}  // namespace gelu::ref
