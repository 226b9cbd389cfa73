// The report's kernel-cliff section (ratio targets), each ratio
// from contenders timed side by side in interleaved rounds:
//  - storage: elements/s of bf16 and f16 over f32 (gelu, gelu_backward; the
//    largest size, 1 thread and all threads; target >= 1.6),
//  - input scales: elements/s on x ~ N(0, 2), N(0, 3) and tail-only over
//    N(0, 1) (report_scales.hpp; f32). The throughput section's forms come
//    from its input-scale rows (every thread count, gelu, gelu_backward,
//    bias_gelu, bias_gelu_backward); the other forms are timed here for
//    gelu and gelu_backward, in cache at 256K, where the arithmetic shows,
//    and at the largest size, 1 thread. Targets: report_scales.hpp.
#pragma once

#include "report_output.hpp"
#include "report_sections.hpp"

namespace gelu::report {

void run_cliffs(const Settings&, Report&);

}  // namespace gelu::report
