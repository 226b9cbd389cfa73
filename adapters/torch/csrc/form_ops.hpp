// The private per-form entry points of the Python functions (form_ops.cpp),
// generated from the op table, and _composed_gelu(x, approximate): the GELU
// of any form composed of PyTorch ops (differentiable any number of times),
// for tensors without a kernel.
#pragma once

#include <torch/library.h>

namespace gelu_torch {

void define_form_ops(torch::Library& m);
// Their CompositeImplicitAutograd kernels.
void register_form_ops(torch::Library& m);

}  // namespace gelu_torch
