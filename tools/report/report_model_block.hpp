// The report's "Model block" section: a GPT-2 small MLP block trained a few
// steps as PyTorch runs it, after fuse(save_memory=False), after fuse and
// under torch.utils.checkpoint (step time and activation bytes side by
// side), measured by report_model_block.py in a python subprocess.
#pragma once

#include <string>

namespace gelu::report {

// The section as markdown; a one-line note when the script cannot run.
// `quick`: fewer steps and 1 thread only. `out_file` is the script's output.
std::string run_model_block(bool quick, const std::string& out_file);

}  // namespace gelu::report
