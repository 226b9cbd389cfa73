// The CPU backend: the library's public functions, through the op table.
#include "backend.hpp"
#include "core/run_op.hpp"

namespace gelu_torch {

const Backend kCpuBackend{
    c10::DeviceType::CPU, "CPU", "a CPU tensor",
    [](const gelu::core::OpDecl& op, std::span<const gelu::TensorRef> tensors,
       const gelu::Options& options,
       c10::Device) { gelu::core::call_op(op, tensors, options); }};

namespace {
constexpr const Backend* kBackends[] = {
    &kCpuBackend,
#ifdef GELU_TORCH_CUDA
    &kCudaBackend,
#endif
};
}  // namespace

std::span<const Backend* const> all_backends() { return kBackends; }

}  // namespace gelu_torch
