// Whether the current device can run this build's kernels: a device, a
// driver, and code for its architecture (SASS for it, or PTX the driver can
// compile for it). Asked once per device, then remembered.
#include <atomic>

#include "cuda/dispatch.cuh"

#ifndef GELU_CUDA_ARCHITECTURES
#define GELU_CUDA_ARCHITECTURES "unknown"
#endif

namespace gelu::cuda::detail {
namespace {

// Compiled like every kernel of the build: if the device has no code for
// it, it has none for them.
__global__ void probe_kernel() {}

// Devices found able to run the kernels, one bit per device ordinal.
std::atomic<uint64_t> g_usable{0};

}  // namespace

const char* built_architectures() { return GELU_CUDA_ARCHITECTURES; }

std::string device_problem() {
  int device = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e == cudaSuccess) {
    int count = 0;
    e = cudaGetDeviceCount(&count);
    if (e == cudaSuccess && count == 0) e = cudaErrorNoDevice;
  }
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky: leave no error for the caller's next call
    return std::string("no usable CUDA device (") + cudaGetErrorString(e) + ")";
  }
  const uint64_t bit = device < 64 ? uint64_t{1} << device : 0;
  if (bit && (g_usable.load(std::memory_order_relaxed) & bit)) return {};
  cudaFuncAttributes attr{};
  e = cudaFuncGetAttributes(&attr, probe_kernel);
  if (e != cudaSuccess) {
    cudaGetLastError();
    cudaDeviceProp prop{};
    std::string name = "?";
    int major = 0, minor = 0;
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) {
      name = prop.name;
      major = prop.major;
      minor = prop.minor;
    }
    return "no code for CUDA device " + std::to_string(device) + " (" + name + ", sm_" +
           std::to_string(major) + std::to_string(minor) +
           "): this build has code for CUDA architectures " + built_architectures() +
           " (CMAKE_CUDA_ARCHITECTURES); " + cudaGetErrorString(e);
  }
  g_usable.fetch_or(bit, std::memory_order_relaxed);
  return {};
}

}  // namespace gelu::cuda::detail

namespace gelu::cuda::detail {

void* stream_alloc(std::size_t bytes, Stream stream) {
  void* p = nullptr;
  const cudaError_t e = cudaMallocAsync(&p, bytes, stream);
  if (e != cudaSuccess) {
    cudaGetLastError();
    throw Error(std::string("gelu::cuda: no workspace of ") + std::to_string(bytes) +
                " bytes (" + cudaGetErrorString(e) + ")");
  }
  return p;
}

void stream_free(void* p, Stream stream) {
  if (p) cudaFreeAsync(p, stream);
}

}  // namespace gelu::cuda::detail
