// Where a kernel body runs: its block and thread, and the launch's
// dimensions. On the GPU from CUDA's built-ins (here()); on the host from
// the emulator's loops (emulate.hpp), which run the same bodies over the
// same launch geometry, one phase of every thread of a block at a time.
#pragma once

#include <stdint.h>

#include "math/host_device.hpp"

namespace gelu::cuda::body {

struct Dim {
  unsigned x = 1, y = 1;
};

// A 2-D launch: grid of blocks, block of threads.
struct Launch {
  Dim grid, block;
};

struct Where {
  Dim block, thread;  // indices
  Dim grid, size;     // gridDim, blockDim
  GELU_HD unsigned flat_thread() const { return thread.y * size.x + thread.x; }
  GELU_HD unsigned threads() const { return size.x * size.y; }
};

#if defined(__CUDACC__)
__device__ __forceinline__ Where here() {
  return Where{{blockIdx.x, blockIdx.y},
               {threadIdx.x, threadIdx.y},
               {gridDim.x, gridDim.y},
               {blockDim.x, blockDim.y}};
}
#endif

}  // namespace gelu::cuda::body
