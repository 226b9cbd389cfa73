// The tiling plan: a pure function from (op, primary shape, dtype, options,
// machine) to how the op layer splits the work, plan_op. Pure so that it can
// be unit tested for any op, machine and size (above 2^32 too) without
// allocating (tests/plan_test.cpp); `gelu-fusion plan` prints it. The op
// layer, the tests and the tools walk a plan's tasks through Plan::task.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/op_table.hpp"
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

// One task: rows [row0, row0 + rows) x columns [col0, col0 + cols) of the
// planned shape; `row_task` is its row block's index (dbias partial sums).
struct Task {
  int64_t row0, rows, col0, cols;
  int64_t row_task;
};

struct Plan {
  int threads;        // threads to run; 1 = stay on the calling thread
  int64_t rows;       // the planned shape (element-wise ops: 1 x numel;
  int64_t cols;       // gated ops: rows x half the last dimension)
  int64_t row_block;  // rows per task
  int64_t col_block;  // columns per task
  int64_t row_tasks;  // ceil(rows / row_block)
  int64_t col_tasks;  // ceil(cols / col_block)
  // Whether the kernels may write the outputs with non-temporal stores
  // (kernels that support them; see stream_outputs below).
  bool stream_outputs;
  int64_t tasks() const { return row_tasks * col_tasks; }
  // Task t of tasks(), row blocks outer: the last row and column blocks
  // are the tails.
  Task task(int64_t t) const {
    const int64_t r = t / col_tasks, c = t % col_tasks;
    const int64_t row0 = r * row_block, col0 = c * col_block;
    return {row0, row_block < rows - row0 ? row_block : rows - row0, col0,
            col_block < cols - col0 ? col_block : cols - col0, r};
  }
};

// Below this many elements per thread a second thread does not pay for its
// start; see plan.cpp for the measurement behind it.
inline constexpr int64_t kMinElementsPerThread = 64 * 1024;
// Row blocks never exceed max_row_tasks (below): kMaxRowTasks for every op
// but bias_gelu_backward, whose row blocks are also its rows of dbias
// partial sums (doubles, stored by the kernels and summed by the op layer).
// For it kMaxDbiasRowTasks: fewer rows of partials, whose traffic grows
// with the count (1/16 of the tensor's with 64 rows at 4096 columns), were
// faster (docs/notes/kernel-decisions.md, "kMaxDbiasRowTasks"), at the price of using
// at most 16 threads for that op.
inline constexpr int64_t kMaxRowTasks = 64;
inline constexpr int64_t kMaxDbiasRowTasks = 16;
// bias_gelu_backward's row blocks hold at least kMinDbiasRowBlock rows where
// there are that many: with few wide rows (64 x 65536 f32) 16 blocks of 4
// rows wrote 8 MiB of partial sums and read them back, a third of the
// tensors' own traffic (bench/shapes/shape_cliffs.cpp, docs/notes/cpu-kernels-log.md).
inline constexpr int64_t kMinDbiasRowBlock = 16;
// The max_row_tasks for bias_gelu_backward over `rows` rows.
constexpr int64_t dbias_max_row_tasks(int64_t rows) {
  const int64_t by_rows = rows / kMinDbiasRowBlock;
  return by_rows < 1 ? 1 : by_rows < kMaxDbiasRowTasks ? by_rows : kMaxDbiasRowTasks;
}

// Non-temporal stores for a call whose tensors (bytes read and written,
// all streams) exceed three quarters of what the threads it runs on can
// keep in cache, (l3_bytes / cores + l2_bytes) * threads: about the rule
// glibc's memcpy applies to its own non-temporal threshold (3/4 of the L3
// share), with the L2 added for caches that do not hold L2's lines in L3
// and for machines without an L3. Such a call cannot leave its
// outputs in cache for the next op, and plain stores first read every
// output line (the write-allocate), which roughly halves a memory-bound
// op's speed (docs/notes/kernel-decisions.md, "Non-temporal stores above the cache").
bool stream_outputs(int64_t bytes, int threads, const Machine& machine);

// The plan op `id` runs when its primary tensor (op_table: OpDecl::primary)
// has `primary_shape` and `dtype`, with `options.num_threads` requested:
// the planned shape follows the op's kind, the tile size its streams, and
// a rows_reduce op caps its row blocks at dbias_max_row_tasks(rows). row_block and
// col_block never depend on the thread count, so a reduction over row
// blocks (dbias) is the same for any threads. `with_optional`: the call
// also writes the op's optional outputs (one more stream each).
Plan plan_op(OpId id, const std::vector<int64_t>& primary_shape, DType dtype,
             const Options& options, const Machine& machine = this_machine(),
             bool with_optional = false);

// The tiling arithmetic plan_op applies to its planned shape (rows x cols,
// `streams` tensors read or written per element). Exposed for the plan's
// own unit tests; the op layer and tools call plan_op.
Plan make_plan(int64_t rows, int64_t cols, DType dtype, int streams,
               const Machine& machine, int requested_threads,
               int64_t max_row_tasks = kMaxRowTasks);

// How many threads ran the calling thread's last op call (the OpenMP team
// its tasks ran on; 1 when they stayed on the caller). For the tests, which
// check that a plan with several threads really ran on several.
int last_run_threads();

std::string describe_plan(const Plan& plan);
std::string describe_machine(const Machine& machine);

}  // namespace gelu::core
