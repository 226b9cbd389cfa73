// The CUDA backend (built with the library's CUDA backend): the library's
// CUDA ops through the op table, on the tensors' device (a device guard),
// on PyTorch's current stream of that device, with workspace from PyTorch's
// caching allocator. Nothing waits for the GPU: a call can be captured in a
// CUDA graph.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "backend.hpp"
#include "cuda/ops.hpp"

namespace gelu_torch {

namespace {

void run_cuda(const gelu::core::OpDecl& op, std::span<const gelu::TensorRef> tensors,
              const gelu::Options& options, c10::Device device) {
  const c10::cuda::CUDAGuard guard(device);
  const cudaStream_t stream = c10::cuda::getCurrentCUDAStream(device.index()).stream();
  const std::size_t bytes = gelu::cuda::workspace_bytes(op,
                                                        tensors[op.primary()].shape);
  at::Tensor workspace;
  if (bytes > 0)
    workspace = at::empty({static_cast<int64_t>(bytes)},
                          at::TensorOptions().dtype(at::kByte).device(device));
  gelu::cuda::call(op, tensors, options, stream,
                   {bytes > 0 ? workspace.data_ptr() : nullptr, bytes});
}

}  // namespace

const Backend kCudaBackend{c10::DeviceType::CUDA, "CUDA", "a CUDA tensor", run_cuda};

}  // namespace gelu_torch
