// The public ops: validate through the op table, plan the split, run the
// kernels over the tasks. No math here (src/cpu) and no checks in the
// kernels (here).
#include <algorithm>
#include <memory>
#include <span>
#include <vector>

#include "core/cpu_chunk.hpp"
#include "core/op_table.hpp"
#include "core/plan.hpp"
#include "core/run_op.hpp"
#include "core/validate.hpp"
#include "cpu/kernels.hpp"
#include "gelu/gelu.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gelu {
namespace {

using core::CpuChunk;
using core::OpId;
using core::OpKind;
using core::Plan;
using core::Role;
using core::Task;
using core::TensorArg;

// Byte pointer to element `i` of a tensor of dtype `t`.
const char* at(const void* p, DType t, int64_t i) {
  return static_cast<const char*>(p) + i * static_cast<int64_t>(dtype_size(t));
}

thread_local int g_last_team = 1;

// Runs body(task) over the plan's tasks, on the calling thread when the
// plan says one thread.
template <class Body>
void run_tasks(const Plan& p, Body&& body) {
  const int64_t tasks = p.tasks();
  if (p.threads <= 1 || tasks <= 1) {
    g_last_team = 1;
    for (int64_t t = 0; t < tasks; ++t) body(p.task(t));
    return;
  }
  int team = 1;
#pragma omp parallel num_threads(p.threads)
  {
#ifdef _OPENMP
#pragma omp single nowait
    team = omp_get_num_threads();
#endif
#pragma omp for schedule(static)
    for (int64_t t = 0; t < tasks; ++t) body(p.task(t));
  }
  g_last_team = team;
}

// The plan of op `id` whose primary tensor is `primary`; `with_optional`:
// the call writes the op's optional output too.
Plan plan_for(OpId id, const std::vector<int64_t>& primary, DType t, const Options& o,
              bool with_optional = false) {
  return core::plan_op(id, primary, t, o, core::this_machine(), with_optional);
}

// Room for bias_gelu_backward's partial sums (row_tasks x cols doubles, up
// to kMaxDbiasRowTasks x cols). Allocated per call, that buffer came back
// as fresh pages (glibc maps large blocks and unmaps them on free), and
// their first-touch faults cost more than the traffic they hold
// (docs/notes/kernel-decisions.md, "The kept partial-sum buffer"). So each calling
// thread keeps its buffer for its next call, up to kKeptPartialBytes (8 MiB: 16 rows of
// 64K columns); a larger one is allocated for the call alone, into `owned`.
double* partial_sums(size_t count, std::unique_ptr<double[]>& owned) {
  constexpr size_t kKeptPartialBytes = size_t{8} << 20;
  thread_local std::unique_ptr<double[]> kept;
  thread_local size_t kept_count = 0;
  if (count * sizeof(double) > kKeptPartialBytes) {
    owned.reset(new double[count]);
    return owned.get();
  }
  if (count > kept_count) {
    kept.reset(new double[count]);
    kept_count = count;
  }
  return kept.get();
}

// Whether no output of the call is also one of its inputs. In place, the
// output's lines are in cache already (the kernel has just read them), so
// plain stores cost no extra read and stay there for the next op.
bool outputs_apart(const core::OpDecl& op, std::span<const TensorArg> args) {
  for (size_t i = 0; i < args.size(); ++i) {
    if (!op.tensors[i].output() || args[i].data == nullptr) continue;
    for (size_t j = 0; j < args.size(); ++j)
      if (!op.tensors[j].output() && args[j].data == args[i].data) return false;
  }
  return true;
}

// Element offset of tensor `i` of `op` at a task's first element: per-column
// tensors by the task's first column, the others by its first row too (a
// gated op's x and dx hold two planned elements per planned column).
int64_t offset_of(const core::OpDecl& op, int i, const Task& k, int64_t row_len) {
  if (op.tensors[i].shape == core::ShapeRule::last_dim) return k.col0;
  return k.row0 * row_len * op.elements_per_planned(i) + k.col0;
}

}  // namespace

namespace core {

void run_op(OpId id, std::span<const TensorArg> args, const Options& o) {
  validate(id, args, o);
  const OpDecl& op = op_decl(id);
  const int primary = op.primary();
  const std::vector<int64_t>& shape = *args[primary].shape;
  const DType t = args[primary].dtype;
  const int n_args = static_cast<int>(args.size());
  const int reduce = op.kind == OpKind::rows_reduce ? op.tensor_of(Role::dbias) : -1;
  if (reduce >= 0) {
    const int64_t cols = shape.back();
    if (cols == 0) return;
    if (numel(shape) == 0) {  // the sum over no rows: 0
      const std::vector<double> zeros(static_cast<size_t>(cols), 0.0);
      cpu::sums_to(args[reduce].dtype, cols, 1, zeros.data(),
                   const_cast<void*>(args[reduce].data));
      return;
    }
  } else if (numel(shape) == 0) {
    return;
  }
  // An optional output present is one more stream.
  bool with_optional = false;
  for (int i = op.required_tensors(); i < n_args; ++i)
    with_optional = with_optional || args[i].data != nullptr;
  const Plan p = plan_for(id, shape, t, o, with_optional);
  const bool stream = p.stream_outputs && outputs_apart(op, args);
  // Per row block, per column: the block's sum (rows_reduce). Row blocks do
  // not depend on the thread count and are combined in block order below,
  // so the sums are bit-identical for any number of threads. Every block's
  // row of sums is stored by its kernel call: no initialisation.
  std::unique_ptr<double[]> owned;
  double* const partial = reduce >= 0
                              ? partial_sums(static_cast<size_t>(p.row_tasks * p.cols),
                                             owned)
                              : nullptr;
  run_tasks(p, [&](const Task& k) {
    CpuChunk c{.approx = o.approximate,
               .dtype = t,
               .rows = k.rows,
               .cols = k.cols,
               .row_len = p.cols,
               .tensors = {},
               .partial = nullptr,
               .gelu_second = o.gelu_half == GeluHalf::second,
               .stream = stream};
    for (int i = 0; i < n_args; ++i)
      if (i != reduce && args[i].data != nullptr)
        c.tensors[i] = const_cast<char*>(
            at(args[i].data, args[i].dtype, offset_of(op, i, k, p.cols)));
    if (reduce >= 0) c.partial = partial + k.row_task * p.cols + k.col0;
    op.cpu(c);
  });
  // sums_to adds the blocks in block order per column, rounds once to f32
  // and stores the sum in its dtype, in one vector pass: scalar loops and an
  // allocated f32 buffer cost as much as the kernel on short calls
  // (docs/notes/kernel-decisions.md, "dbias summed in one vector pass"). It
  // is written last: it may be the bias buffer itself (in place).
  if (reduce >= 0)
    cpu::sums_to(args[reduce].dtype, p.cols, p.row_tasks, partial,
                 const_cast<void*>(args[reduce].data));
}

void call_op(const OpDecl& op, std::span<const TensorRef> tensors, const Options& o) {
  TensorArg args[kMaxTensors];
  const size_t n = std::min(tensors.size(), static_cast<size_t>(kMaxTensors));
  for (size_t i = 0; i < n; ++i) args[i] = tensors[i];
  run_op(op.id, std::span<const TensorArg>(args, n), o);
}

int last_run_threads() { return g_last_team; }
}  // namespace core

// The public functions' entry (gelu.hpp: each op is one inline call).
void detail::run_op(OpId id, std::initializer_list<OpArg> tensors, const Options& o) {
  core::run_op(id, std::span<const OpArg>(tensors.begin(), tensors.size()), o);
}

}  // namespace gelu
