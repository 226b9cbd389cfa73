// The tiling plan as a pure function: every op of the table plans through
// plan_op and its tasks tile the shape exactly once (tails included), blocks
// do not depend on the thread count (dbias determinism), counts above 2^32
// plan without allocating, one core stays on the caller.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/op_table.hpp"
#include "core/plan.hpp"

namespace gelu::core {
namespace {

const Machine kDev{48 << 10, 1 << 20, 32 << 20, 2};
const Machine kBig{32 << 10, 2 << 20, 64 << 20, 64};
const Machine kOne{32 << 10, 512 << 10, 0, 1};

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1, 0},       {0, 7},       {1, 1},     {1, 4096},
                         {1, 65537},   {1, 1 << 25}, {3, 1},     {1000, 8},
                         {37, 1},      {4099, 3},    {7, 65536}, {1000, 65536},
                         {8192, 4096}, {1 << 22, 8}, {5, 12345}, {131, 4097}};

// Walks the plan's tasks (Plan::task, as the op layer does) and checks that
// they cover [0, rows) x [0, cols) exactly once, each block inside the
// shape, with row_task the index of its row block.
void expect_exact_tiling(const Plan& p, int64_t rows, int64_t cols) {
  ASSERT_GE(p.row_block, 1);
  ASSERT_GE(p.col_block, 1);
  EXPECT_EQ(p.rows, rows);
  EXPECT_EQ(p.cols, cols);
  if (rows == 0 || cols == 0) {
    EXPECT_EQ(p.tasks(), 0);
    return;
  }
  EXPECT_EQ(p.row_tasks, (rows + p.row_block - 1) / p.row_block);
  EXPECT_EQ(p.col_tasks, (cols + p.col_block - 1) / p.col_block);
  // Small shapes: count every element's visits. Large ones: the areas add
  // up and every task lies inside the shape (blocks are a grid).
  const bool small = rows * cols <= (1 << 20);
  std::vector<uint8_t> seen(small ? static_cast<size_t>(rows * cols) : 0, 0);
  int64_t covered = 0;
  for (int64_t t = 0; t < p.tasks(); ++t) {
    const Task k = p.task(t);
    ASSERT_GT(k.rows, 0);
    ASSERT_GT(k.cols, 0);
    ASSERT_LE(k.row0 + k.rows, rows);
    ASSERT_LE(k.col0 + k.cols, cols);
    ASSERT_EQ(k.row0, k.row_task * p.row_block);
    covered += k.rows * k.cols;
    if (small) {
      for (int64_t r = k.row0; r < k.row0 + k.rows; ++r)
        for (int64_t c = k.col0; c < k.col0 + k.cols; ++c)
          ASSERT_EQ(seen[r * cols + c]++, 0) << "element " << r << "," << c << " twice";
    }
  }
  EXPECT_EQ(covered, rows * cols);
}

// Every op of the table through the planning function: the planned shape
// follows the op's kind, the tasks tile it exactly once, the threads
// respect the request, the cores and the threshold, and the op that keeps
// dbias partial sums per row block stays within their cap.
TEST(Plan, EveryOpOfTheTablePlansAndTiles) {
  const std::vector<std::vector<int64_t>> shapes = {
      {0},          {2},          {4096},       {7, 10},    {1000, 8},   {37, 2},
      {4099, 6},    {7, 65536},   {8192, 4096}, {5, 12346}, {131, 4098}, {3, 5, 64},
      {1 << 20, 2}, {1, 1 << 24}, {64, 0},      {0, 64}};
  for (const OpDecl& op : all_ops())
    for (const Machine& m : {kDev, kBig, kOne})
      for (const std::vector<int64_t>& shape : shapes)
        for (DType t : {DType::f32, DType::bf16})
          for (int threads : {0, 1, 3}) {
            SCOPED_TRACE(::testing::Message()
                         << op.name << " shape " << shape.size() << "-d ["
                         << shape.front() << ".." << shape.back() << "] threads "
                         << threads << " cores " << m.cores);
            const Plan p = plan_op(op.id, shape, t, {Approx::none, threads}, m);
            int64_t n = 1;
            for (int64_t d : shape) n *= d;
            const int64_t last = shape.back();
            int64_t rows = 1, cols = n;
            if (op.kind == OpKind::rows || op.kind == OpKind::rows_reduce)
              cols = last, rows = last ? n / last : 0;
            if (op.kind == OpKind::gated) cols = last / 2, rows = last ? n / last : 0;
            expect_exact_tiling(p, rows, cols);
            if (HasFatalFailure()) return;
            EXPECT_GE(p.threads, 1);
            EXPECT_LE(p.threads, threads > 0 ? threads : m.cores);
            EXPECT_LE(p.threads,
                      std::max<int64_t>(1, rows * cols / kMinElementsPerThread));
            const int64_t cap = op.kind == OpKind::rows_reduce
                                    ? dbias_max_row_tasks(rows)
                                    : kMaxRowTasks;
            EXPECT_LE(p.row_tasks, cap);
            // The same plan as the tiling arithmetic over the op's streams.
            const Plan q = make_plan(rows, cols, t, op.streams(), m, threads, cap);
            EXPECT_EQ(p.row_block, q.row_block);
            EXPECT_EQ(p.col_block, q.col_block);
            EXPECT_EQ(p.threads, q.threads);
          }
}

// Streams are what each op's kernel reads and writes per planned element;
// the table derives them from the tensors' shape rules.
TEST(Plan, StreamsFollowTheTensors) {
  for (const OpDecl& op : all_ops()) {
    int in = 0, out = 0;
    for (int i = 0; i < op.num_tensors; ++i)
      (op.tensors[i].output() ? out : in) += op.elements_per_planned(i);
    EXPECT_GE(in, 1) << op.name;
    EXPECT_GE(out, 1) << op.name;
  }
  // A per-column tensor is not a stream; geglu's x is two per planned element.
  EXPECT_EQ(op_decl(OpId::bias_gelu).streams(), 2);
  EXPECT_EQ(op_decl(OpId::geglu_backward).streams(), 5);
}

TEST(Plan, TasksTileEveryShapeExactly) {
  for (const Machine& m : {kDev, kBig, kOne})
    for (const Shape& s : kShapes)
      for (DType t : {DType::f32, DType::bf16})
        for (int streams : {2, 3, 5}) {
          SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " streams "
                                            << streams << " cores " << m.cores);
          expect_exact_tiling(make_plan(s.rows, s.cols, t, streams, m, 0), s.rows,
                              s.cols);
        }
}

TEST(Plan, BlocksDoNotDependOnThreads) {
  for (const Machine& m : {kDev, kBig})
    for (const Shape& s : kShapes) {
      const Plan one = make_plan(s.rows, s.cols, DType::f32, 3, m, 1);
      for (int threads : {0, 2, 3, 7, 64, 1000}) {
        const Plan p = make_plan(s.rows, s.cols, DType::f32, 3, m, threads);
        EXPECT_EQ(p.row_block, one.row_block) << s.rows << "x" << s.cols;
        EXPECT_EQ(p.col_block, one.col_block) << s.rows << "x" << s.cols;
      }
    }
}

TEST(Plan, SmallCallsStayOnTheCaller) {
  for (const Machine& m : {kDev, kBig}) {
    EXPECT_EQ(make_plan(1, 4096, DType::f32, 2, m, 0).threads, 1);
    EXPECT_EQ(make_plan(1, kMinElementsPerThread * 2 - 1, DType::f32, 2, m, 0).threads,
              1);
    EXPECT_EQ(make_plan(64, 64, DType::bf16, 3, m, 8).threads, 1);
  }
  EXPECT_EQ(make_plan(1, 1 << 24, DType::f32, 2, kDev, 0).threads, 2);
}

TEST(Plan, OneCoreRunsOneThread) {
  for (const Shape& s : kShapes)
    EXPECT_EQ(make_plan(s.rows, s.cols, DType::f32, 2, kOne, 0).threads, 1);
}

TEST(Plan, RequestedThreadsAreRespected) {
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kBig, 1).threads, 1);
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kBig, 5).threads, 5);
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kDev, 4).threads,
            4);  // above cores: as asked
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kBig, 0).threads, 64);
}

TEST(Plan, CountsAboveTwoToThe32) {
  const int64_t n = (int64_t{1} << 33) + 12345;  // planned, never allocated
  const Plan p = make_plan(1, n, DType::f32, 3, kBig, 0);
  EXPECT_EQ(p.threads, 64);
  expect_exact_tiling(p, 1, n);
  const Plan q = make_plan(int64_t{1} << 24, 1031, DType::bf16, 3, kBig, 0);
  expect_exact_tiling(q, int64_t{1} << 24, 1031);
  EXPECT_LE(q.row_tasks, kMaxRowTasks);
}

TEST(Plan, RowBlocksBoundedForDbias) {
  for (const Shape& s : kShapes) {
    const Plan p = make_plan(s.rows, s.cols, DType::f32, 3, kDev, 0);
    EXPECT_LE(p.row_tasks, kMaxRowTasks) << s.rows << "x" << s.cols;
    const Plan d = make_plan(s.rows, s.cols, DType::f32, 3, kDev, 0, kMaxDbiasRowTasks);
    EXPECT_LE(d.row_tasks, kMaxDbiasRowTasks) << s.rows << "x" << s.cols;
  }
  // 8192 x 4096 f32 tiles into 10-row blocks; the cap makes them 512 rows.
  EXPECT_EQ(make_plan(8192, 4096, DType::f32, 3, kDev, 0, kMaxDbiasRowTasks).row_tasks,
            kMaxDbiasRowTasks);
}

TEST(Plan, DbiasRowBlocksHoldAtLeastMinRowsWherePossible) {
  for (const Shape& s : kShapes) {
    const Plan d = make_plan(s.rows, s.cols, DType::f32, 3, kDev, 0,
                             dbias_max_row_tasks(s.rows));
    EXPECT_LE(d.row_tasks, kMaxDbiasRowTasks) << s.rows << "x" << s.cols;
    EXPECT_GE(d.row_block, std::min(s.rows, kMinDbiasRowBlock))
        << s.rows << "x" << s.cols;
    expect_exact_tiling(d, s.rows, s.cols);
  }
  // 64 rows of 64K f32 columns: 4 blocks of 16 rows, not 16 of 4.
  EXPECT_EQ(
      make_plan(64, 65536, DType::f32, 3, kDev, 0, dbias_max_row_tasks(64)).row_tasks,
      4);
  EXPECT_EQ(dbias_max_row_tasks(0), 1);
  EXPECT_EQ(dbias_max_row_tasks(15), 1);
  EXPECT_EQ(dbias_max_row_tasks(int64_t{1} << 40), kMaxDbiasRowTasks);
}

// Non-temporal stores past 3/4 of the cache the threads can keep: kDev
// keeps 32 MiB / 2 + 1 MiB = 17 MiB a thread (12.75 MiB the threshold), kOne
// (no L3) its 512 KiB of L2 (384 KiB).
TEST(Plan, StreamedStoresPastThreeQuartersOfTheCacheShare) {
  const int64_t dev = (17 << 20) / 4 * 3, one = (512 << 10) / 4 * 3;
  EXPECT_FALSE(stream_outputs(dev, 1, kDev));
  EXPECT_TRUE(stream_outputs(dev + 3, 1, kDev));
  EXPECT_FALSE(stream_outputs(2 * dev, 2, kDev));
  EXPECT_TRUE(stream_outputs(2 * dev + 3, 2, kDev));
  EXPECT_FALSE(stream_outputs(one, 1, kOne));
  EXPECT_TRUE(stream_outputs(one + 3, 1, kOne));
  // Through make_plan: 2 f32 streams of 32M elements (256 MiB) stream on any
  // thread count; 256K elements (2 MiB) never; 2M (16 MiB) on 1 thread only.
  for (int threads : {1, 2})
    EXPECT_TRUE(make_plan(1, 1 << 25, DType::f32, 2, kDev, threads).stream_outputs);
  EXPECT_FALSE(make_plan(1, 1 << 18, DType::f32, 2, kDev, 1).stream_outputs);
  EXPECT_TRUE(make_plan(1, 1 << 21, DType::f32, 2, kDev, 1).stream_outputs);
  EXPECT_FALSE(make_plan(1, 1 << 21, DType::f32, 2, kDev, 2).stream_outputs);
  // Bytes past int64 (planned, never allocated) saturate, not wrap.
  EXPECT_TRUE(make_plan(1, int64_t{1} << 61, DType::f32, 3, kBig, 0).stream_outputs);
}

TEST(Plan, WorkingSetFitsHalfOfL2) {
  for (const Shape& s : kShapes) {
    const Plan p = make_plan(s.rows, s.cols, DType::f32, 3, kDev, 0);
    // Unless the row-block cap (kMaxRowTasks) forced taller blocks.
    if (s.rows <= kMaxRowTasks) {
      EXPECT_LE(p.row_block * p.col_block * 12, kDev.l2_bytes / 2 + 64 * 12)
          << s.rows << "x" << s.cols;
    }
  }
}

}  // namespace
}  // namespace gelu::core
