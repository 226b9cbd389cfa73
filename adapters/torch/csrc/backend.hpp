// A backend of the PyTorch adapter: the device its kernels compute on and
// how it runs an op of the table. The kernels, their checks and the
// registrations are shared (kernel.cpp, register.cpp) and take the backend
// as a parameter; a backend adds only this.
#pragma once

#include <c10/core/Device.h>
#include <c10/core/DeviceType.h>

#include <span>

#include "core/op_table.hpp"
#include "gelu/gelu.hpp"

namespace gelu_torch {

struct Backend {
  c10::DeviceType device;
  // The dispatch key its kernels are registered under ("CPU").
  const char* dispatch_key;
  // What its messages ask for: "a CPU tensor".
  const char* expected;
  // Runs `op` on views of the memory of `device` (of this backend's type,
  // where every tensor of the call is), in table order (trailing optional
  // outputs not requested left out); throws gelu::Error on misuse.
  void (*run)(const gelu::core::OpDecl& op, std::span<const gelu::TensorRef> tensors,
              const gelu::Options& options, c10::Device device);
};

// The backends this build has (cuda_backend.cpp where it is built with the
// CUDA backend).
extern const Backend kCpuBackend;
#ifdef GELU_TORCH_CUDA
extern const Backend kCudaBackend;
#endif
// All of them, for the messages that list the devices with kernels.
std::span<const Backend* const> all_backends();

}  // namespace gelu_torch
