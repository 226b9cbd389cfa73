// bias_gelu_backward on the GPU: dx = dy * gelu'(x + bias) and optionally
// y = gelu(x + bias), each element in double and rounded once, and dbias,
// the column sums of dx, in an order that depends only on the shape:
//
//   1. the rows are cut into dbias_row_blocks(rows) blocks of consecutive
//      rows; a thread block owns kCols columns of one row block, its
//      kLanes row lanes each sum every kLanes-th row of it in double, and
//      the lanes' sums are added in lane order into partial[block][column];
//   2. one thread per column adds the blocks' sums in block order, in
//      double, and rounds once to dbias's dtype.
//
// Neither the GPU's SM count nor the grid changes which numbers are added
// in which order, so dbias is bit-identical run to run and GPU to GPU.
// dbias is written by the second kernel, after every read of bias: it may
// be the bias buffer itself (in place).
#include "cuda/dispatch.cuh"

namespace gelu::cuda::detail {
namespace {

inline constexpr int kCols = 32;  // columns per thread block (a warp)
inline constexpr int kLanes = 8;  // row lanes per thread block
// Row blocks: at least kMinBlockRows rows each, at most kMaxRowBlocks of
// them (the partial sums are rows x cols doubles of workspace).
inline constexpr int64_t kMinBlockRows = 64;
inline constexpr int64_t kMaxRowBlocks = 128;

template <Approx F, DType D, bool kValue>
__global__ void __launch_bounds__(kCols* kLanes)
    bias_backward_kernel(int64_t rows, int64_t cols, int64_t block_rows,
                         const typename storage::Storage<D>::T* dy,
                         const typename storage::Storage<D>::T* x,
                         const typename storage::Storage<D>::T* bias,
                         typename storage::Storage<D>::T* dx,
                         typename storage::Storage<D>::T* y, double* partial) {
  using S = storage::Storage<D>;
  __shared__ double lane_sums[kLanes][kCols];
  const int64_t c = static_cast<int64_t>(blockIdx.x) * kCols + threadIdx.x;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * block_rows;
  const int64_t r1 = r0 + block_rows < rows ? r0 + block_rows : rows;
  double sum = 0.0;
  if (c < cols) {
    const float b = S::load(bias, c);
    for (int64_t r = r0 + threadIdx.y; r < r1; r += kLanes) {
      const int64_t i = r * cols + c;
      const double s = static_cast<double>(__fadd_rn(S::load(x, i), b));
      const double d = static_cast<double>(S::load(dy, i)) * math::grad<F>(s);
      S::store(dx, i, d);
      if constexpr (kValue) S::store(y, i, math::value<F>(s));
      sum += d;
    }
  }
  lane_sums[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && c < cols) {
    double total = lane_sums[0][threadIdx.x];
    for (int k = 1; k < kLanes; ++k) total += lane_sums[k][threadIdx.x];
    partial[static_cast<int64_t>(blockIdx.y) * cols + c] = total;
  }
}

template <DType D>
__global__ void dbias_kernel(int64_t cols, int64_t blocks, const double* partial,
                             typename storage::Storage<D>::T* dbias) {
  for (int64_t c = first_index(); c < cols; c += grid_stride()) {
    double sum = 0.0;
    for (int64_t b = 0; b < blocks; ++b) sum += partial[b * cols + c];
    storage::Storage<D>::store(dbias, c, sum, storage::kSumBand);
  }
}

int64_t block_rows_of(int64_t rows, int64_t blocks) {
  return blocks == 0 ? 0 : (rows + blocks - 1) / blocks;
}

}  // namespace

int64_t dbias_row_blocks(int64_t rows) {
  const int64_t b = (rows + kMinBlockRows - 1) / kMinBlockRows;
  return b < kMaxRowBlocks ? b : kMaxRowBlocks;
}

void bias_backward(Approx form, DType t, DType dbias_t, int64_t rows, int64_t cols,
                   const void* dy, const void* x, const void* bias, void* dx, void* y,
                   double* partial, void* dbias, Stream stream) {
  if (cols == 0) return;
  const int64_t blocks = dbias_row_blocks(rows);
  if (blocks > 0) {
    const int64_t block_rows = block_rows_of(rows, blocks);
    const dim3 grid(static_cast<unsigned>((cols + kCols - 1) / kCols),
                    static_cast<unsigned>(blocks));
    const dim3 block(kCols, kLanes);
    with_form_dtype(form, t, [&](auto f, auto d) {
      constexpr Approx F = decltype(f)::value;
      constexpr DType D = decltype(d)::value;
      using T = typename storage::Storage<D>::T;
      const auto* dyp = static_cast<const T*>(dy);
      const auto* xp = static_cast<const T*>(x);
      const auto* bp = static_cast<const T*>(bias);
      if (y)
        bias_backward_kernel<F, D, true><<<grid, block, 0, stream>>>(
            rows, cols, block_rows, dyp, xp, bp, static_cast<T*>(dx),
            static_cast<T*>(y), partial);
      else
        bias_backward_kernel<F, D, false><<<grid, block, 0, stream>>>(
            rows, cols, block_rows, dyp, xp, bp, static_cast<T*>(dx), nullptr, partial);
    });
    check_launch("the bias backward kernel");
  }
  // No rows: no blocks, and dbias is the empty sum, 0.
  switch (dbias_t) {
    case DType::f32:
      dbias_kernel<DType::f32><<<blocks_for(cols), kThreads, 0, stream>>>(
          cols, blocks, partial, static_cast<float*>(dbias));
      break;
    case DType::bf16:
      dbias_kernel<DType::bf16><<<blocks_for(cols), kThreads, 0, stream>>>(
          cols, blocks, partial, static_cast<uint16_t*>(dbias));
      break;
    case DType::f16:
      dbias_kernel<DType::f16><<<blocks_for(cols), kThreads, 0, stream>>>(
          cols, blocks, partial, static_cast<uint16_t*>(dbias));
      break;
  }
  check_launch("the dbias kernel");
}

}  // namespace gelu::cuda::detail
