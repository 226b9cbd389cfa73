// One side of the driver A/B benchmark (main.cpp): the f32 gelu forward and
// backward Row of each form from the driver-inl.h found first on the include
// path, and (VARIANT_RUN16) the erf form's 16-bit rows whose results the
// overflow-boundary rule covers, compiled for one static target (run.sh's MARCH).
// run.sh compiles it twice with the namespace `gelu` renamed (-Dgelu=gelu_a / gelu_b)
// so the two drivers' templates do not merge at link time.
#include <cstddef>
#include <cstdint>

#include "cpu/driver-inl.h"
#include "hwy/cache_control.h"
#include "hwy/targets.h"

using namespace gelu::cpu::HWY_NAMESPACE;

// The Highway target both sides were compiled for (the same flags).
extern "C" const char* variant_target() { return hwy::TargetName(HWY_STATIC_TARGET); }

extern "C" void VARIANT_RUN(int op, size_t n, const float* dy, const float* x,
                            float* out) {
  const Streams<F32> s{dy, x, nullptr, out, nullptr, nullptr};
  // Ops 6-11 stream (Streams::stream; older drivers took a kStream flag).
  Streams<F32> st = s;
  st.stream = true;
  switch (op) {
    case 0: return Row<GeluErfMath, F32, 0>(n, s);
    case 1: return Row<GeluTanhMath, F32, 0>(n, s);
    case 2: return Row<GeluQuickMath, F32, 0>(n, s);
    case 3: return Row<GeluErfMath, F32, kBackward>(n, s);
    case 4: return Row<GeluTanhMath, F32, kBackward>(n, s);
    case 5: return Row<GeluQuickMath, F32, kBackward>(n, s);
    default: break;
  }
  switch (op) {  // 6-11: the same with non-temporal stores (main.cpp: STREAM=1)
    case 6: Row<GeluErfMath, F32, 0>(n, st); break;
    case 7: Row<GeluTanhMath, F32, 0>(n, st); break;
    case 8: Row<GeluQuickMath, F32, 0>(n, st); break;
    case 9: Row<GeluErfMath, F32, kBackward>(n, st); break;
    case 10: Row<GeluTanhMath, F32, kBackward>(n, st); break;
    case 11: Row<GeluQuickMath, F32, kBackward>(n, st); break;
    default: return;
  }
  hwy::FlushStream();
}

// Ops 0-3: gelu_backward, geglu, add_gelu_backward, geglu_backward in bf16
// (the AVX512_BF16 rounding where the CPU has it); 4-7: the same in f16. x2
// is the gate (geglu) or b (add_gelu); out2 the gate's gradient.
extern "C" void VARIANT_RUN16(int op, size_t n, const uint16_t* dy, const uint16_t* x,
                              const uint16_t* x2, uint16_t* out, uint16_t* out2) {
  const auto run = [&](auto storage) {
    using S = decltype(storage);
    const Streams<S> s{dy, x, x2, out, out2, nullptr};
    switch (op % 4) {
      case 0: return Row<GeluErfMath, S, kBackward>(n, s);
      case 1: return Row<GeluErfMath, S, kGated>(n, s);
      case 2: return Row<GeluErfMath, S, kSum | kBackward>(n, s);
      default: return Row<GeluErfMath, S, kGated | kBackward>(n, s);
    }
  };
  if (op >= 4) return run(F16());
#ifdef GELU_CPU_HAVE_BF16_ROUNDING_INSN
  if (gelu::cpu::cpu_has_avx512_bf16()) return run(BF16PairsAvx512Bf16());
#endif
  run(BF16Pairs());
}
