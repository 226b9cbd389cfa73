// A backend of the PyTorch adapter: the device its kernels compute on and
// how it runs an op of the table. The kernels, their checks and the
// registrations are shared (kernel.cpp, register.cpp) and take the backend
// as a parameter; a backend adds only this.
#pragma once

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
  // Runs `op` on views of this device's memory, in table order (trailing
  // optional outputs not requested left out); throws gelu::Error on misuse.
  void (*run)(const gelu::core::OpDecl& op, std::span<const gelu::TensorRef> tensors,
              const gelu::Options& options);
};

// The backends this build has.
extern const Backend kCpuBackend;

}  // namespace gelu_torch
