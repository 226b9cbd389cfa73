#include "core/plan.hpp"

#include <unistd.h>

#include <algorithm>
#include <sstream>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace gelu::core {
namespace {

// Below this many elements per thread a second thread does not pay for its
// start (an OpenMP fork/join costs ~3 us here; the kernels stream a few
// elements per ns). Revisit with `make bench` when the kernels change.
constexpr int64_t kMinElementsPerThread = 64 * 1024;

int64_t cache_or(long value, int64_t fallback) {
  return value > 0 ? static_cast<int64_t>(value) : fallback;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

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

Plan make_plan(int64_t rows, int64_t cols, DType dtype, int streams,
               const Machine& machine, int requested_threads) {
  Plan p{};
  const int64_t total = rows * cols;
  const int64_t want = requested_threads > 0 ? requested_threads : machine.cores;
  const int64_t useful = std::max<int64_t>(1, total / kMinElementsPerThread);
  p.threads = static_cast<int>(std::clamp<int64_t>(want, 1, useful));

  // A task's working set (all its streams) should sit in half of L2, so that
  // a task's tensors stay cached between its loads and stores.
  const int64_t bytes_per_elem =
      static_cast<int64_t>(dtype_size(dtype)) * std::max(1, streams);
  const int64_t tile = std::max<int64_t>(
      1024, (machine.l2_bytes / 2) / bytes_per_elem / 64 * 64);

  p.col_block = cols <= tile ? std::max<int64_t>(cols, 1) : tile;
  p.row_block = std::max<int64_t>(1, tile / p.col_block);
  p.row_tasks = rows > 0 ? ceil_div(rows, p.row_block) : 0;
  p.col_tasks = cols > 0 ? ceil_div(cols, p.col_block) : 0;
  return p;
}

std::string describe_plan(const Plan& p) {
  std::ostringstream s;
  s << "threads=" << p.threads << " row_block=" << p.row_block
    << " col_block=" << p.col_block << " tasks=" << p.tasks() << " ("
    << p.row_tasks << " x " << p.col_tasks << ")";
  return s.str();
}

}  // namespace gelu::core
