// The second step of bias_gelu_backward's dbias (eltwise.hpp): each
// column's partial sums added in grid-row order, in double, and rounded
// once to dbias's dtype (storage.hpp: the 16-bit formats' boundary band of
// a sum). Threads of a 1-D grid take columns; the order of a column's sum
// does not depend on them.
#pragma once

#include <stdint.h>

#include "cuda/body/grid.hpp"
#include "cuda/storage.hpp"

namespace gelu::cuda::body {

struct DbiasArgs {
  const double* partial = nullptr;  // [partial_rows][cols]
  int64_t partial_rows = 0, cols = 0;
  void* dbias = nullptr;
};

inline Launch plan_dbias_sum(int64_t cols) {
  const int64_t blocks = (cols + 255) / 256;
  return Launch{Dim{unsigned(blocks < 65535 ? (blocks > 0 ? blocks : 1) : 65535), 1},
                Dim{256, 1}};
}

template <DType D>
struct DbiasSum {
  static constexpr int kSharedDoubles = 0;
  static constexpr bool kPhase1 = false;
  GELU_HD static void phase0(const Where& w, const DbiasArgs& g, double*) {
    using S = storage::Storage<D>;
    const int64_t step = int64_t(w.grid.x) * w.size.x;
    for (int64_t c = int64_t(w.block.x) * w.size.x + w.thread.x; c < g.cols;
         c += step) {
      double s = 0.0;
      for (int64_t b = 0; b < g.partial_rows; ++b) s += g.partial[b * g.cols + c];
      S::store(static_cast<typename S::T*>(g.dbias), c, s, storage::kSumBand);
    }
  }
  GELU_HD static void phase1(const Where&, const DbiasArgs&, const double*) {}
};

}  // namespace gelu::cuda::body
