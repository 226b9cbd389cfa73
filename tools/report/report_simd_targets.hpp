// The report's "SIMD targets" table: our speed on each SIMD target this CPU
// runs and this build has, against oneDNN limited to the same instruction
// set. oneDNN reads its limit (ONEDNN_MAX_CPU_ISA) once per process, so each
// target is timed in a child process of this program (`gelu-fusion report
// --target-rows`, with GELU_SIMD_TARGET and ONEDNN_MAX_CPU_ISA set: see
// tools/simd_override.hpp), which prints one line per op.
#pragma once

#include <string>

namespace gelu::report {

// The child's part: times each op with a oneDNN counterpart on the target
// in use and prints "row <op> <ours ns/elem> <oneDNN ns/elem, or nan>".
int print_target_rows();

// The parent's: runs the child per target, returns the section (markdown).
std::string run_simd_targets();

}  // namespace gelu::report
