// Helpers of the GPU tests: whether a GPU is there (skip without one, or
// fail where GELU_REQUIRE_GPU is set, as `make gpu-check` sets it), and
// running an op of the table on the GPU on host Buffers (test_support.hpp):
// every tensor is copied to device memory (outputs poisoned, with their
// guard bytes), the op runs on a stream, and the outputs come back.
#pragma once

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "core/op_table.hpp"
#include "cuda/ops.hpp"
#include "gelu/gelu_cuda.hpp"
#include "test_support.hpp"

namespace gelu::testing {

inline bool gpu_present() {
  int n = 0;
  const bool ok = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
  cudaGetLastError();
  return ok;
}

inline bool gpu_required() {
  const char* v = std::getenv("GELU_REQUIRE_GPU");
  return v && *v && std::string(v) != "0";
}

// First in every GPU test: skips it without a GPU, fails it there where one
// is required.
#define GELU_NEED_GPU()                                                   \
  do {                                                                    \
    if (!::gelu::testing::gpu_present()) {                                \
      if (::gelu::testing::gpu_required())                                \
        FAIL() << "GELU_REQUIRE_GPU is set and no CUDA device is usable"; \
      GTEST_SKIP() << "no CUDA device";                                   \
    }                                                                     \
  } while (0)

#define GELU_CUDA_OK(call)                                                 \
  do {                                                                     \
    const cudaError_t e_ = (call);                                         \
    ASSERT_EQ(e_, cudaSuccess) << #call << ": " << cudaGetErrorString(e_); \
  } while (0)

// A device copy of a host Buffer's bytes (elements and guard bytes).
class DeviceCopy {
 public:
  explicit DeviceCopy(const Buffer& b) : bytes_(b.raw().size()) {
    if (cudaMalloc(&p_, bytes_) != cudaSuccess) {
      p_ = nullptr;
      ADD_FAILURE() << "cudaMalloc of " << bytes_ << " bytes failed";
      return;
    }
    if (cudaMemcpy(p_, b.raw().data(), bytes_, cudaMemcpyHostToDevice) != cudaSuccess)
      ADD_FAILURE() << "cudaMemcpy to the device failed";
  }
  ~DeviceCopy() { cudaFree(p_); }
  DeviceCopy(const DeviceCopy&) = delete;
  DeviceCopy& operator=(const DeviceCopy&) = delete;
  void* data() const { return p_; }
  // Back into b (the same size).
  void to(Buffer& b) const {
    if (p_ && cudaMemcpy(b.data(), p_, bytes_, cudaMemcpyDeviceToHost) != cudaSuccess)
      ADD_FAILURE() << "cudaMemcpy to the host failed";
  }

 private:
  void* p_ = nullptr;
  size_t bytes_;
};

// Runs `id` on the GPU with `tensors` in table order (null: an optional
// output not requested; trailing ones may be left out); the outputs'
// contents come back into their Buffers. Throws what the op throws.
inline void run_on_gpu(core::OpId id, const std::vector<Buffer*>& tensors,
                       const Options& o, cuda::Stream stream = nullptr) {
  const core::OpDecl& op = core::op_decl(id);
  std::vector<std::unique_ptr<DeviceCopy>> dev;
  std::vector<TensorRef> refs;
  for (Buffer* b : tensors) {
    if (!b) {
      dev.emplace_back();
      refs.push_back(TensorRef{});
      continue;
    }
    dev.push_back(std::make_unique<DeviceCopy>(*b));
    refs.push_back(TensorRef{dev.back()->data(), b->dtype(), b->shape()});
  }
  cuda::call(op, refs, o, stream);
  const cudaError_t e = cudaStreamSynchronize(stream);
  if (e != cudaSuccess)
    throw std::runtime_error(std::string("cudaStreamSynchronize: ") +
                             cudaGetErrorString(e));
  for (size_t i = 0; i < tensors.size(); ++i)
    if (tensors[i] && op.tensors[i].output()) dev[i]->to(*tensors[i]);
}

}  // namespace gelu::testing
