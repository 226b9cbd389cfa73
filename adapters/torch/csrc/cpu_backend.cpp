// The CPU backend: the library's public functions, through the op table.
#include "backend.hpp"

namespace gelu_torch {

const Backend kCpuBackend{
    c10::DeviceType::CPU, "CPU", "a CPU tensor",
    [](const gelu::core::OpDecl& op, std::span<const gelu::TensorRef> tensors,
       const gelu::Options& options) { op.call(tensors, options); }};

}  // namespace gelu_torch
