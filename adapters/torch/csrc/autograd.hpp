// The Autograd and ADInplaceOrView registrations of every operator
// (autograd.cpp), generated from the op table.
#pragma once

#include <torch/library.h>

namespace gelu_torch {

void register_autograd(torch::Library& m);
void register_inplace_or_view(torch::Library& m);

}  // namespace gelu_torch
