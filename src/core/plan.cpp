#include "core/plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <limits>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gelu::core {
namespace {

int64_t cache_or(long value, int64_t fallback) {
  return value > 0 ? static_cast<int64_t>(value) : fallback;
}

int64_t ceil_div(int64_t a, int64_t b) { return a / b + (a % b != 0); }

// Column blocks shorter than a row are multiples of this many elements
// (a cache line of f32, and every target's vector length divides it).
constexpr int64_t kColAlign = 64;

int64_t align_down(int64_t v) { return std::max(kColAlign, v / kColAlign * kColAlign); }

}  // namespace

// kMinElementsPerThread (plan.hpp): an OpenMP fork/join costs about as much
// as the f32 kernels take for tens of thousands of elements in cache, so
// below that a second thread cannot win its start back; the threshold keeps
// a 2x margin (docs/notes/kernel-decisions.md, "kMinElementsPerThread"). `gelu_bench
// --benchmark_filter=threads` (bench/kernels_bench.cpp) compares 1 and 2
// threads through the public API side by side; rerun it on an idle machine
// to move the threshold (on a loaded one the 2-thread rows are dominated by
// descheduled OpenMP workers).

const Machine& this_machine() {
  static const Machine m = [] {
    Machine r;
    r.l1d_bytes = cache_or(sysconf(_SC_LEVEL1_DCACHE_SIZE), 32 << 10);
    r.l2_bytes = cache_or(sysconf(_SC_LEVEL2_CACHE_SIZE), 1 << 20);
    r.l3_bytes = cache_or(sysconf(_SC_LEVEL3_CACHE_SIZE), 8 << 20);
#ifdef _OPENMP
    r.cores = std::max(1, omp_get_num_procs());
#else
    r.cores = 1;
#endif
    return r;
  }();
  return m;
}

bool stream_outputs(int64_t bytes, int threads, const Machine& machine) {
  const int64_t share = (machine.l3_bytes / std::max(machine.cores, 1) +
                         machine.l2_bytes) *
                        std::max(threads, 1);
  return bytes / 3 > share / 4;
}

Plan make_plan(int64_t rows, int64_t cols, DType dtype, int streams,
               const Machine& machine, int requested_threads, int64_t max_row_tasks) {
  Plan p{};
  rows = std::max<int64_t>(rows, 0);
  cols = std::max<int64_t>(cols, 0);
  p.rows = rows;
  p.cols = cols;

  // A task's working set (all its streams) should sit in half of L2, so that
  // a task's tensors stay cached between its loads and stores.
  const int64_t bytes_per_elem = static_cast<int64_t>(dtype_size(dtype)) *
                                 std::max(1, streams);
  int64_t tile = align_down(std::max<int64_t>(
      1024, (std::max<int64_t>(machine.l2_bytes, 1 << 16) / 2) / bytes_per_elem));
  // And small enough to give each core a task where the call is worth a
  // thread a core (kMinElementsPerThread each): a 256K-element bf16 gelu
  // is a single tile of a 2 MiB L2 and ran on one thread of two. From the
  // machine's cores, never the requested threads: the blocks (dbias's
  // summation order) do not depend on those.
  const int64_t total = rows > 0 && cols > 0 ? rows * cols : 0;
  const int64_t spread = std::min<int64_t>(
      std::max(machine.cores, 1), std::max<int64_t>(1, total / kMinElementsPerThread));
  if (spread > 1)
    tile = std::min(tile, align_down(std::max<int64_t>(1024, ceil_div(total, spread))));

  // Whole rows when they fit the tile: every task then streams contiguous
  // memory (narrow column blocks of long rows are strided, which defeats
  // the prefetchers: docs/notes/kernel-decisions.md, "Whole rows a task").
  p.col_block = cols <= tile ? std::max<int64_t>(cols, 1) : tile;
  p.row_block = std::max<int64_t>(1, tile / p.col_block);
  // Bound the number of row blocks: the op layer keeps one row of dbias
  // partial sums per row block (plan.hpp).
  p.row_block = std::max(p.row_block, ceil_div(std::max<int64_t>(rows, 1),
                                               std::max<int64_t>(max_row_tasks, 1)));
  p.row_block = std::min(p.row_block, std::max<int64_t>(rows, 1));
  p.row_tasks = rows > 0 ? ceil_div(rows, p.row_block) : 0;
  p.col_tasks = cols > 0 ? ceil_div(cols, p.col_block) : 0;

  // Threads: as requested (or every core), but no more than the tasks and
  // not below kMinElementsPerThread each; small calls stay on the caller.
  const int64_t want = requested_threads > 0 ? requested_threads : machine.cores;
  const int64_t useful = std::max<int64_t>(1, total / kMinElementsPerThread);
  p.threads = static_cast<int>(
      std::clamp<int64_t>(std::min({want, useful, p.tasks()}), 1, 1 << 16));
  // Saturated: counts above 2^60 (never allocated, but planned) overflow.
  const int64_t bytes = total > std::numeric_limits<int64_t>::max() / bytes_per_elem
                            ? std::numeric_limits<int64_t>::max()
                            : total * bytes_per_elem;
  p.stream_outputs = stream_outputs(bytes, p.threads, machine);
  return p;
}

Plan plan_op(OpId id, const std::vector<int64_t>& primary_shape, DType dtype,
             const Options& options, const Machine& machine, bool with_optional) {
  const OpDecl& op = op_decl(id);
  int64_t n = 1;
  for (int64_t d : primary_shape) n *= std::max<int64_t>(d, 0);
  const int64_t last = primary_shape.empty() ? 1 : primary_shape.back();
  int64_t rows = 1, cols = n;
  switch (op.kind) {
    case OpKind::eltwise: break;
    case OpKind::rows:
    case OpKind::rows_reduce:
      cols = last;
      rows = cols > 0 ? n / cols : 0;
      break;
    case OpKind::gated:
      cols = last / 2;
      rows = last > 0 ? n / last : 0;
      break;
  }
  return make_plan(
      rows, cols, dtype, op.streams(with_optional), machine, options.num_threads,
      op.kind == OpKind::rows_reduce ? dbias_max_row_tasks(rows) : kMaxRowTasks);
}

std::string describe_plan(const Plan& p) {
  std::ostringstream s;
  s << "threads=" << p.threads << " row_block=" << p.row_block
    << " col_block=" << p.col_block << " tasks=" << p.tasks() << " (" << p.row_tasks
    << " x " << p.col_tasks << ")" << (p.stream_outputs ? " stream" : "");
  return s.str();
}

std::string describe_machine(const Machine& m) {
  std::ostringstream s;
  s << "L1d=" << (m.l1d_bytes >> 10) << "K L2=" << (m.l2_bytes >> 10)
    << "K L3=" << (m.l3_bytes >> 10) << "K cores=" << m.cores;
  return s.str();
}

}  // namespace gelu::core
