// The tiling plan: a pure function from (op shape, dtype, machine, requested
// threads) to how the op layer splits the work. Pure so that it can be unit
// tested for any machine and any size (above 2^32 too) without allocating
// (tests/plan_test.cpp); `gelu-fusion plan` prints it.
#pragma once

#include <cstdint>
#include <string>

#include "gelu/gelu.hpp"

namespace gelu::core {

struct Machine {
  int64_t l1d_bytes;
  int64_t l2_bytes;
  int64_t l3_bytes;
  int cores;
};

// This machine, read once (sysconf cache sizes, OpenMP's processor count).
const Machine& this_machine();

struct Plan {
  int threads;         // threads to run; 1 = stay on the calling thread
  int64_t row_block;   // rows per task (element-wise ops: 1 "row" of n)
  int64_t col_block;   // columns per task
  int64_t row_tasks;   // ceil(rows / row_block)
  int64_t col_tasks;   // ceil(cols / col_block)
  int64_t tasks() const { return row_tasks * col_tasks; }
};

// Below this many elements per thread a second thread does not pay for its
// start; see plan.cpp for the measurement behind it.
inline constexpr int64_t kMinElementsPerThread = 64 * 1024;
// Row blocks never exceed max_row_tasks (below): kMaxRowTasks for every op
// but bias_gelu_backward, whose row blocks are also its rows of dbias
// partial sums (doubles, stored by the kernels and summed by the op layer).
// For it kMaxDbiasRowTasks: 16 rows of partials at 1024 x 4096 f32 took
// 0.43-0.47 ns/element against 0.47-0.51 with 64 (1 thread, same runs; the
// partials' traffic is 1/16 of the tensor's with 64 rows), at the price of
// using at most 16 threads for that op.
inline constexpr int64_t kMaxRowTasks = 64;
inline constexpr int64_t kMaxDbiasRowTasks = 16;
// bias_gelu_backward's row blocks hold at least kMinDbiasRowBlock rows where
// there are that many: with few wide rows (64 x 65536 f32) 16 blocks of 4
// rows wrote 8 MiB of partial sums and read them back, a third of the
// tensors' own traffic (bench/shapes/shape_cliffs.cpp, docs/performance.md).
inline constexpr int64_t kMinDbiasRowBlock = 16;
// The max_row_tasks for bias_gelu_backward over `rows` rows.
constexpr int64_t dbias_max_row_tasks(int64_t rows) {
  const int64_t by_rows = rows / kMinDbiasRowBlock;
  return by_rows < 1 ? 1 : by_rows < kMaxDbiasRowTasks ? by_rows : kMaxDbiasRowTasks;
}

// Element-wise ops over n elements are planned as rows = 1, cols = n.
// `streams` is the number of tensors the kernel reads or writes per element
// (gelu 2, gelu_backward 3, ...). row_block and col_block never depend on
// the thread count, so a reduction over row blocks (dbias) is the same for
// any threads.
Plan make_plan(int64_t rows, int64_t cols, DType dtype, int streams,
               const Machine& machine, int requested_threads,
               int64_t max_row_tasks = kMaxRowTasks);

std::string describe_plan(const Plan& plan);
std::string describe_machine(const Machine& machine);

}  // namespace gelu::core
