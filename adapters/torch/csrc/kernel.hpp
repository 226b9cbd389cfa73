// The one kernel behind every operator of torch.ops.gelu_fusion, for any
// backend: it reads the call's arguments as the op's surface declares them
// (surface.hpp), checks devices and dtypes (PyTorch-style messages), makes
// inputs contiguous, allocates or checks outputs by the table's shape rules
// and runs the backend. Shapes are validated by the library against the
// op table, before anything is written.
#pragma once

#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/core/stack.h>

#include "backend.hpp"
#include "surface.hpp"

namespace gelu_torch {

// The surface an operator handle was registered for.
const Surface& surface_of(const c10::OperatorHandle& op);

// Runs surface `s` on backend `b` with the arguments on `stack`, replacing
// them by the results.
void run_kernel(const Backend& b, const Surface& s, torch::jit::Stack* stack);

// As a boxed kernel for the dispatcher.
template <const Backend& B>
void boxed_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                  torch::jit::Stack* stack) {
  run_kernel(B, surface_of(op), stack);
}

// Registered for every dispatch key without a backend (another device):
// names the argument on the unsupported device and the devices that have
// kernels, instead of the dispatcher's "could not run".
void no_backend_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet,
                       torch::jit::Stack* stack);

// Debug aid for the tests: when on, every output is filled with NaN before
// the kernel runs, so an element the kernel never writes shows up.
bool& poison_outputs();

}  // namespace gelu_torch
