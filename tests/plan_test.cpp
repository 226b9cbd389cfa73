// The tiling plan as a pure function: tasks tile the shape exactly (tails
// included), blocks do not depend on the thread count (dbias determinism),
// counts above 2^32 plan without allocating, one core stays on the caller.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "core/plan.hpp"

namespace gelu::core {
namespace {

const Machine kDev{48 << 10, 1 << 20, 32 << 20, 2};
const Machine kBig{32 << 10, 2 << 20, 64 << 20, 64};
const Machine kOne{32 << 10, 512 << 10, 0, 1};

struct Shape {
  int64_t rows, cols;
};
const Shape kShapes[] = {{1, 0},       {0, 7},        {1, 1},        {1, 4096},
                         {1, 65537},   {1, 1 << 25},  {3, 1},        {1000, 8},
                         {37, 1},      {4099, 3},     {7, 65536},    {1000, 65536},
                         {8192, 4096}, {1 << 22, 8},  {5, 12345},    {131, 4097}};

// Walks the plan's tasks the way the op layer does and checks that they
// cover [0, rows) x [0, cols) exactly once, each block inside the shape.
void expect_exact_tiling(const Plan& p, int64_t rows, int64_t cols) {
  ASSERT_GE(p.row_block, 1);
  ASSERT_GE(p.col_block, 1);
  if (rows == 0 || cols == 0) {
    EXPECT_EQ(p.tasks(), 0);
    return;
  }
  EXPECT_EQ(p.row_tasks, (rows + p.row_block - 1) / p.row_block);
  EXPECT_EQ(p.col_tasks, (cols + p.col_block - 1) / p.col_block);
  int64_t covered = 0;
  for (int64_t r = 0; r < p.row_tasks; ++r) {
    const int64_t r0 = r * p.row_block, nr = std::min(p.row_block, rows - r0);
    ASSERT_GT(nr, 0);
    for (int64_t c = 0; c < p.col_tasks; ++c) {
      const int64_t c0 = c * p.col_block, nc = std::min(p.col_block, cols - c0);
      ASSERT_GT(nc, 0);
      covered += nr * nc;
    }
  }
  EXPECT_EQ(covered, rows * cols);
}

TEST(Plan, TasksTileEveryShapeExactly) {
  for (const Machine& m : {kDev, kBig, kOne})
    for (const Shape& s : kShapes)
      for (DType t : {DType::f32, DType::bf16})
        for (int streams : {2, 3, 5}) {
          SCOPED_TRACE(::testing::Message() << s.rows << "x" << s.cols << " streams "
                                            << streams << " cores " << m.cores);
          expect_exact_tiling(make_plan(s.rows, s.cols, t, streams, m, 0), s.rows, s.cols);
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
    EXPECT_EQ(make_plan(1, kMinElementsPerThread * 2 - 1, DType::f32, 2, m, 0).threads, 1);
    EXPECT_EQ(make_plan(64, 64, DType::bf16, 3, m, 8).threads, 1);
  }
  EXPECT_EQ(make_plan(1, 1 << 24, DType::f32, 2, kDev, 0).threads, 2);
}

TEST(Plan, OneCoreRunsOneThread) {
  for (const Shape& s : kShapes) EXPECT_EQ(make_plan(s.rows, s.cols, DType::f32, 2, kOne, 0).threads, 1);
}

TEST(Plan, RequestedThreadsAreRespected) {
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kBig, 1).threads, 1);
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kBig, 5).threads, 5);
  EXPECT_EQ(make_plan(1, 1 << 25, DType::f32, 2, kDev, 4).threads, 4);  // above cores: as asked
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
