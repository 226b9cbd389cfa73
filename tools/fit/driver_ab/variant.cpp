// One side of the driver A/B benchmark (main.cpp): the f32 gelu forward and
// backward Row of each form from the driver-inl.h found first on the include
// path, compiled for one static AVX-512 target. run.sh compiles it twice
// with the namespace `gelu` renamed (-Dgelu=gelu_a / gelu_b) so the two
// drivers' templates do not merge at link time.
#include <cstddef>

#include "cpu/driver-inl.h"
#include "hwy/cache_control.h"

using namespace gelu::cpu::HWY_NAMESPACE;

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
