// The public ops: validate through the op table, plan the split, run the
// kernels over the tasks. No math here (src/cpu) and no checks in the
// kernels (here).
#include <algorithm>
#include <memory>
#include <vector>

#include "core/op_table.hpp"
#include "core/plan.hpp"
#include "core/validate.hpp"
#include "cpu/kernels.hpp"
#include "gelu/gelu.hpp"

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gelu {
namespace {

using core::OpId;
using core::Plan;
using core::Task;
using core::TensorArg;

TensorArg arg(const ConstTensorRef& t) { return {t.data, t.dtype, &t.shape}; }
TensorArg arg(const TensorRef& t) { return {t.data, t.dtype, &t.shape}; }

// Byte pointer to element `i` of a tensor of dtype `t`.
const char* at(const void* p, DType t, int64_t i) {
  return static_cast<const char*>(p) + i * static_cast<int64_t>(dtype_size(t));
}
char* at(void* p, DType t, int64_t i) {
  return static_cast<char*>(p) + i * static_cast<int64_t>(dtype_size(t));
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

int64_t last_dim(const std::vector<int64_t>& s) { return s.back(); }

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
template <size_t K>
bool outputs_apart(OpId id, const TensorArg (&args)[K]) {
  const core::OpDecl& op = core::op_decl(id);
  for (size_t i = 0; i < K; ++i) {
    if (!op.tensors[i].output() || args[i].data == nullptr) continue;
    for (size_t j = 0; j < K; ++j)
      if (!op.tensors[j].output() && args[j].data == args[i].data) return false;
  }
  return true;
}

// An element-wise op: validate, then run kernel(dtype, first, count, stream)
// over the plan's chunks (stream: non-temporal stores, Plan::stream_outputs).
template <size_t K, class Kernel>
void eltwise(OpId id, const TensorArg (&args)[K], const Options& o, Kernel&& kernel) {
  core::validate(id, args, o);
  const int64_t n = numel(*args[0].shape);
  if (n == 0) return;
  const DType t = args[0].dtype;
  // An optional output present is one more stream (the last argument).
  const bool with_optional = K > static_cast<size_t>(
                                     core::op_decl(id).required_tensors()) &&
                             args[K - 1].data != nullptr;
  const Plan p = plan_for(id, *args[0].shape, t, o, with_optional);
  const bool stream = p.stream_outputs && outputs_apart(id, args);
  run_tasks(p, [&](const Task& k) { kernel(t, k.col0, k.cols, stream); });
}

// Element `i` of an optional output, or null where it is absent.
char* at_or_null(void* p, DType t, int64_t i) { return p ? at(p, t, i) : nullptr; }

}  // namespace

namespace core {
int last_run_threads() { return g_last_team; }
}  // namespace core

void gelu(ConstTensorRef x, TensorRef y, const Options& o) {
  eltwise(OpId::gelu, {arg(x), arg(y)}, o,
          [&](DType t, int64_t c0, int64_t nc, bool stream) {
            cpu::gelu_fwd(o.approximate, t, nc, at(x.data, t, c0), at(y.data, t, c0),
                          stream);
          });
}

void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                   const Options& o) {
  gelu_backward(dy, x, dx, TensorRef{}, o);
}

void gelu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, TensorRef y,
                   const Options& o) {
  eltwise(OpId::gelu_backward, {arg(dy), arg(x), arg(dx), arg(y)}, o,
          [&](DType t, int64_t c0, int64_t nc, bool stream) {
            cpu::gelu_bwd(o.approximate, t, nc, at(dy.data, t, c0), at(x.data, t, c0),
                          at(dx.data, t, c0), at_or_null(y.data, t, c0), stream);
          });
}

void add_gelu(ConstTensorRef a, ConstTensorRef b, TensorRef y, const Options& o) {
  eltwise(OpId::add_gelu, {arg(a), arg(b), arg(y)}, o,
          [&](DType t, int64_t c0, int64_t nc, bool stream) {
            cpu::add_fwd(o.approximate, t, nc, at(a.data, t, c0), at(b.data, t, c0),
                         at(y.data, t, c0), stream);
          });
}

void add_gelu_backward(ConstTensorRef dy, ConstTensorRef a, ConstTensorRef b,
                       TensorRef dx, const Options& o) {
  eltwise(OpId::add_gelu_backward, {arg(dy), arg(a), arg(b), arg(dx)}, o,
          [&](DType t, int64_t c0, int64_t nc, bool stream) {
            cpu::add_bwd(o.approximate, t, nc, at(dy.data, t, c0), at(a.data, t, c0),
                         at(b.data, t, c0), at(dx.data, t, c0), stream);
          });
}

void bias_gelu(ConstTensorRef x, ConstTensorRef bias, TensorRef y, const Options& o) {
  const TensorArg args[] = {arg(x), arg(bias), arg(y)};
  core::validate(OpId::bias_gelu, args, o);
  const int64_t n = numel(x.shape);
  if (n == 0) return;
  const DType t = x.dtype;
  const int64_t cols = last_dim(x.shape);
  const Plan p = plan_for(OpId::bias_gelu, x.shape, t, o);
  const bool stream = p.stream_outputs && outputs_apart(OpId::bias_gelu, args);
  run_tasks(p, [&](const Task& k) {
    const int64_t i0 = k.row0 * cols + k.col0;
    cpu::bias_fwd(o.approximate, t, k.rows, k.cols, cols, at(x.data, t, i0),
                  at(bias.data, t, k.col0), at(y.data, t, i0), stream);
  });
}

void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                        TensorRef dx, TensorRef dbias, const Options& o) {
  bias_gelu_backward(dy, x, bias, dx, dbias, TensorRef{}, o);
}

void bias_gelu_backward(ConstTensorRef dy, ConstTensorRef x, ConstTensorRef bias,
                        TensorRef dx, TensorRef dbias, TensorRef y, const Options& o) {
  const TensorArg args[] = {arg(dy), arg(x), arg(bias), arg(dx), arg(dbias), arg(y)};
  core::validate(OpId::bias_gelu_backward, args, o);
  const DType t = x.dtype;
  const int64_t cols = last_dim(x.shape);
  if (cols == 0) return;
  const int64_t rows = numel(x.shape) / cols;
  if (rows == 0) {  // the sum over no rows: dbias = 0
    const std::vector<double> zeros(static_cast<size_t>(cols), 0.0);
    cpu::sums_to(dbias.dtype, cols, 1, zeros.data(), dbias.data);
    return;
  }
  // Per row block, per column: the block's sum of dx. Row blocks do not
  // depend on the thread count and are combined in block order below, so
  // dbias is bit-identical for any number of threads.
  const Plan p = plan_for(OpId::bias_gelu_backward, x.shape, t, o, y.data != nullptr);
  // Every block's row of sums is stored by its kernel call, so the buffer
  // needs no initialisation.
  std::unique_ptr<double[]> owned;
  double* const partial = partial_sums(static_cast<size_t>(p.row_tasks * cols), owned);
  const bool stream = p.stream_outputs && outputs_apart(OpId::bias_gelu_backward, args);
  run_tasks(p, [&](const Task& k) {
    const int64_t i0 = k.row0 * cols + k.col0;
    cpu::bias_bwd(o.approximate, t, k.rows, k.cols, cols, at(dy.data, t, i0),
                  at(x.data, t, i0), at(bias.data, t, k.col0), at(dx.data, t, i0),
                  partial + k.row_task * cols + k.col0, at_or_null(y.data, t, i0),
                  stream);
  });
  // sums_to adds the blocks in block order per column, rounds once to f32
  // and stores dbias in its dtype, in one vector pass: scalar loops and an
  // allocated f32 buffer cost as much as the kernel on short calls
  // (docs/notes/kernel-decisions.md, "dbias summed in one vector pass"). dbias is
  // written last: it may be the bias buffer itself (in place).
  cpu::sums_to(dbias.dtype, cols, p.row_tasks, partial, dbias.data);
}

void geglu(ConstTensorRef x, TensorRef y, const Options& o) {
  const TensorArg args[] = {arg(x), arg(y)};
  core::validate(OpId::geglu, args, o);
  const int64_t n = numel(x.shape);
  if (n == 0) return;
  const DType t = x.dtype;
  const int64_t h = last_dim(x.shape) / 2;
  const Plan p = plan_for(OpId::geglu, x.shape, t, o);
  const bool stream = p.stream_outputs && outputs_apart(OpId::geglu, args);
  run_tasks(p, [&](const Task& k) {
    cpu::geglu_fwd(
        o.approximate, t, k.rows, k.cols, h, at(x.data, t, k.row0 * 2 * h + k.col0),
        at(y.data, t, k.row0 * h + k.col0), o.gelu_half == GeluHalf::second, stream);
  });
}

void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx,
                    const Options& o) {
  geglu_backward(dy, x, dx, TensorRef{}, o);
}

void geglu_backward(ConstTensorRef dy, ConstTensorRef x, TensorRef dx, TensorRef y,
                    const Options& o) {
  const TensorArg args[] = {arg(dy), arg(x), arg(dx), arg(y)};
  core::validate(OpId::geglu_backward, args, o);
  const int64_t n = numel(x.shape);
  if (n == 0) return;
  const DType t = x.dtype;
  const int64_t h = last_dim(x.shape) / 2;
  const Plan p = plan_for(OpId::geglu_backward, x.shape, t, o, y.data != nullptr);
  const bool stream = p.stream_outputs && outputs_apart(OpId::geglu_backward, args);
  run_tasks(p, [&](const Task& k) {
    cpu::geglu_bwd(
        o.approximate, t, k.rows, k.cols, h, at(dy.data, t, k.row0 * h + k.col0),
        at(x.data, t, k.row0 * 2 * h + k.col0), at(dx.data, t, k.row0 * 2 * h + k.col0),
        o.gelu_half == GeluHalf::second, at_or_null(y.data, t, k.row0 * h + k.col0),
        stream);
  });
}

}  // namespace gelu
