// The report's input-scale and shape rows of the throughput section.
//  - Input scales: gelu, gelu_backward, bias_gelu and bias_gelu_backward, f32,
//    in cache (256K) and at the largest size, every thread count, on each
//    kInputScales entry (x ~ N(0, 1), N(0, 2), N(0, 3) with a N(0, 1) bias,
//    and tail-only). All scales of a case run in the same interleaved rounds
//    (ours and oneDNN on each scale, then the copy), so a scale's ratio to
//    N(0, 1) is side by side; those ratios go to the cliff table.
//  - Shapes: bias_gelu, bias_gelu_backward and geglu at 4M elements (the
//    largest size when smaller) with a narrow (8) and a wide (65536) last
//    dimension.
// PyTorch's figures for both are queued on the TorchPeer like the sweep's.
#pragma once

#include <functional>
#include <vector>

#include "report_output.hpp"
#include "report_sections.hpp"

namespace gelu::report {

// Cliff targets of an input scale's elements/s over N(0, 1)'s: N(0, 2) and
// N(0, 3) at least 0.7 (0.6 for tanh), tail-only at least 0.5.
double scale_target(const InputScale&, Approx);

// One case of `op` per kInputScales entry, f32, [n/4096, 4096] (shape_for),
// filled by fill_inputs (x of every scale from the same N(0, 1) draw).
std::vector<Case> scale_cases(OpId, int64_t n);

void run_input_scales(const Settings&, TorchPeer*, Report&);
void run_shapes(const Settings&, TorchPeer*, Report&);

}  // namespace gelu::report
