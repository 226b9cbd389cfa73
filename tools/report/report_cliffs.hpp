// The report's kernel-cliff section (ratio targets), each ratio
// from contenders timed side by side in interleaved rounds:
//  - storage: elements/s of bf16 and f16 over f32 (gelu, gelu_backward; the
//    largest size, 1 thread and all threads; target >= 1.6),
//  - inputs: elements/s on tail-only inputs U[-14, -4] over N(0, 1) (each
//    form, f32; in cache at 256K, where the arithmetic shows, and at the
//    largest size, 1 thread; target >= 0.5).
#pragma once

#include "report_output.hpp"
#include "report_sections.hpp"

namespace gelu::report {

void run_cliffs(const Settings&, Report&);

}  // namespace gelu::report
