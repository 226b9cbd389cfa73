// Huge tensors, without allocating them: the tiling plan and the
// task index arithmetic for counts above 2^32, validation of shapes that big
// (accepted when consistent, rejected before any memory is touched when not),
// and the empty-but-huge shapes that are valid and touch nothing.
//
// Pointers for the huge tensors point into a PROT_NONE reservation, so a
// call that wrongly went past validation faults instead of scribbling.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/plan.hpp"
#include "core/validate.hpp"
#include "gelu/gelu.hpp"

namespace {

using gelu::DType;
using gelu::core::Machine;
using gelu::core::Plan;
using i128 = __int128;

constexpr int64_t kTwo31 = int64_t(1) << 31, kTwo32 = int64_t(1) << 32;

// Address space that exists but can never be read or written.
struct NoAccess {
  static constexpr size_t kBytes = size_t(1) << 36;  // 64 GiB, virtual only
  unsigned char* base;
  NoAccess() {
    void* p = mmap(nullptr, kBytes, PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    base = p == MAP_FAILED ? nullptr : static_cast<unsigned char*>(p);
  }
  ~NoAccess() {
    if (base) munmap(base, kBytes);
  }
};

const Machine kMachines[] = {
    {32 << 10, 256 << 10, 8 << 20, 1},
    {48 << 10, 1 << 20, 512 << 20, 2},
    {48 << 10, 2 << 20, 32 << 20, 64},
    {64 << 10, 32 << 20, 256 << 20, 384},
};

// Checks every property the op layer relies on for one plan; walks the tasks
// through Plan::task as run_tasks does (all of them when few enough, else a
// sample).
void check_plan(const Plan& p, int want_threads, const Machine& m,
                int64_t max_row_tasks) {
  const int64_t rows = p.rows, cols = p.cols;
  SCOPED_TRACE(::testing::Message() << "rows " << rows << " cols " << cols << " "
                                    << gelu::core::describe_plan(p));
  ASSERT_GE(p.threads, 1);
  ASSERT_LE(p.threads, want_threads > 0 ? want_threads : m.cores);
  ASSERT_GE(p.row_block, 1);
  ASSERT_GE(p.col_block, 1);
  ASSERT_EQ(i128(p.row_tasks), (i128(rows) + p.row_block - 1) / p.row_block);
  ASSERT_EQ(i128(p.col_tasks), (i128(cols) + p.col_block - 1) / p.col_block);
  ASSERT_EQ(i128(p.tasks()), i128(p.row_tasks) * p.col_tasks);
  // bias_gelu_backward keeps row_tasks * cols partial sums of dbias.
  ASSERT_LE(p.row_tasks, max_row_tasks);
  auto task = [&](int64_t t, i128& elems) {
    const gelu::core::Task k = p.task(t);
    const int64_t r0 = k.row0, c0 = k.col0, nr = k.rows, nc = k.cols;
    ASSERT_EQ(k.row_task, r0 / p.row_block);
    ASSERT_GT(nr, 0);
    ASSERT_GT(nc, 0);
    // First and last element of the task, and their byte offsets in f32.
    const i128 first = i128(r0) * cols + c0;
    const i128 last = i128(r0 + nr - 1) * cols + c0 + nc - 1;
    ASSERT_LT(last, i128(rows) * cols);
    ASSERT_LE(last * 4, i128(INT64_MAX));
    ASSERT_EQ(int64_t(first), r0 * cols + c0);  // what ops.cpp computes
    elems += i128(nr) * nc;
  };
  i128 elems = 0;
  if (p.tasks() <= (1 << 16)) {
    for (int64_t t = 0; t < p.tasks(); ++t) task(t, elems);
    EXPECT_EQ(elems, i128(rows) * cols) << "tasks do not tile the tensor";
  } else {
    for (int64_t t :
         {int64_t(0), int64_t(1), p.tasks() / 3, p.tasks() - 2, p.tasks() - 1})
      task(t, elems);
  }
}

TEST(ReliabilityHuge, PlanTilesCountsAbove2To32) {
  const std::pair<int64_t, int64_t> shapes[] = {
      {1, kTwo32 + 1},
      {1, int64_t(1) << 33},
      {1, (int64_t(1) << 61) - 1},
      {kTwo32 + 3, 1},
      {3, kTwo31 + 7},
      {kTwo31 + 1, 3},
      {int64_t(1) << 20, int64_t(1) << 13},
      {8193, 524289},
      {(int64_t(1) << 40) + 1, 2048},
      {7, (int64_t(1) << 58) + 5},
  };
  for (const gelu::core::OpDecl& op : gelu::core::all_ops())
    for (const Machine& m : kMachines)
      for (auto [rows, cols] : shapes)
        for (DType t : {DType::f32, DType::bf16})
          for (int threads : {0, 1, 2, 7, 1000}) {
            SCOPED_TRACE(op.name);
            // Gated ops: the primary's last dimension is [value | gate].
            const std::vector<int64_t> shape{
                rows, op.kind == gelu::core::OpKind::gated ? 2 * cols : cols};
            const Plan p = gelu::core::plan_op(op.id, shape, t,
                                               {gelu::Approx::none, threads}, m);
            const int64_t cap = op.kind == gelu::core::OpKind::rows_reduce
                                    ? gelu::core::kMaxDbiasRowTasks
                                    : gelu::core::kMaxRowTasks;
            check_plan(p, threads, m, cap);
            if (HasFatalFailure()) return;
            // dbias sums over row blocks: they must not depend on threads.
            const Plan one = gelu::core::plan_op(op.id, shape, t,
                                                 {gelu::Approx::none, 1}, m);
            EXPECT_EQ(p.row_block, one.row_block);
            EXPECT_EQ(p.col_block, one.col_block);
          }
}

gelu::core::TensorArg targ(const void* p, DType t, const std::vector<int64_t>& s) {
  return {p, t, &s};
}

TEST(ReliabilityHuge, ValidationAcceptsConsistentHugeShapes) {
  using gelu::core::OpId;
  using gelu::core::validate;
  // Addresses only: validate() never dereferences them.
  const auto* a = reinterpret_cast<const unsigned char*>(uintptr_t(1) << 44);
  const std::vector<int64_t> big{int64_t(1) << 33}, rows_cols{kTwo31 + 1, 4}, last{4},
      half{kTwo31 + 1, 2};
  const int64_t bytes = (int64_t(1) << 33) * 4;
  const gelu::core::TensorArg gelu_ok[] = {targ(a, DType::f32, big),
                                           targ(a + bytes, DType::f32, big)};
  EXPECT_NO_THROW(validate(OpId::gelu, gelu_ok, {}));
  const gelu::core::TensorArg gelu_inplace[] = {targ(a, DType::f32, big),
                                                targ(a, DType::f32, big)};
  EXPECT_NO_THROW(validate(OpId::gelu, gelu_inplace, {}));
  // One element of overlap at the far end of a 32 GiB tensor.
  const gelu::core::TensorArg gelu_overlap[] = {targ(a, DType::f32, big),
                                                targ(a + bytes - 4, DType::f32, big)};
  EXPECT_THROW(validate(OpId::gelu, gelu_overlap, {}), gelu::Error);

  const int64_t xb = (kTwo31 + 1) * 4 * 2;  // bf16 [2^31 + 1, 4]
  const gelu::core::TensorArg bias_bwd[] = {
      targ(a, DType::bf16, rows_cols), targ(a + xb, DType::bf16, rows_cols),
      targ(a + 2 * xb, DType::bf16, last), targ(a + 3 * xb, DType::bf16, rows_cols),
      targ(a + 4 * xb, DType::f32, last)};
  EXPECT_NO_THROW(validate(OpId::bias_gelu_backward, bias_bwd, {}));
  const gelu::core::TensorArg geglu_ok[] = {targ(a, DType::f16, rows_cols),
                                            targ(a + xb, DType::f16, half)};
  EXPECT_NO_THROW(validate(OpId::geglu, geglu_ok, {}));
}

TEST(ReliabilityHuge, PublicApiRejectsBeforeTouchingMemory) {
  NoAccess na;
  ASSERT_NE(na.base, nullptr);
  void* p = na.base;
  void* q = na.base + (size_t(1) << 35);
  const std::vector<int64_t> big{int64_t(1) << 33}, other{(int64_t(1) << 33) - 1};
  const auto f32 = DType::f32;
  // Each call is valid but for one unrelated detail; a wrongly accepted one
  // would fault on the PROT_NONE pages.
  EXPECT_THROW(gelu::gelu({p, f32, big}, {q, f32, other}), gelu::Error);
  EXPECT_THROW(gelu::gelu({p, f32, big}, {nullptr, f32, big}), gelu::Error);
  EXPECT_THROW(gelu::gelu({p, f32, big}, {q, DType::bf16, big}), gelu::Error);
  EXPECT_THROW(gelu::gelu({p, f32, big}, {q, f32, big}, {gelu::Approx::none, -1}),
               gelu::Error);
  EXPECT_THROW(gelu::gelu({p, f32, big}, {static_cast<char*>(p) + 4, f32, big}),
               gelu::Error);
  EXPECT_THROW(gelu::gelu_backward({p, f32, big}, {p, f32, big}, {q, f32, other}),
               gelu::Error);
  EXPECT_THROW(gelu::geglu({p, f32, {3, kTwo31 + 1}}, {q, f32, {3, kTwo31}}),
               gelu::Error);  // odd last dimension
  // Element counts past what int64 bytes can address, and past int64.
  const std::vector<int64_t> too_big{int64_t(1) << 62},
      overflow{kTwo31, kTwo31, kTwo31}, negative{kTwo32, -1};
  for (const auto& s : {too_big, overflow, negative})
    EXPECT_THROW(gelu::gelu({p, f32, s}, {q, f32, s}), gelu::Error);
  EXPECT_THROW(gelu::numel(overflow), gelu::Error);
  EXPECT_EQ(gelu::numel({kTwo32, 3}), 3 * kTwo32);
}

TEST(ReliabilityHuge, EmptyButHugeShapesTouchNothing) {
  NoAccess na;
  ASSERT_NE(na.base, nullptr);
  void* p = na.base;
  const std::vector<int64_t> empty{0, int64_t(1) << 62}, empty2{int64_t(1) << 40, 0};
  EXPECT_NO_THROW(gelu::gelu({p, DType::f32, empty}, {p, DType::f32, empty}));
  EXPECT_NO_THROW(gelu::gelu({nullptr, DType::bf16, empty2}, {p, DType::bf16, empty2}));
  EXPECT_NO_THROW(gelu::geglu({p, DType::f32, {int64_t(1) << 40, 0}},
                              {p, DType::f32, {int64_t(1) << 40, 0}}));
  // No rows but 2^20 columns: dbias is all zeros (and the only write).
  const int64_t cols = int64_t(1) << 20;
  std::vector<float> dbias(cols, 1.0f), bias(cols, 0.5f);
  EXPECT_NO_THROW(gelu::bias_gelu_backward(
      {p, DType::f32, {0, cols}}, {p, DType::f32, {0, cols}},
      {bias.data(), DType::f32, {cols}}, {p, DType::f32, {0, cols}},
      {dbias.data(), DType::f32, {cols}}));
  EXPECT_EQ(std::count(dbias.begin(), dbias.end(), 0.0f), cols);
}

}  // namespace
