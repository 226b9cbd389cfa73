// The host emulation of a kernel launch: every block of the grid, and in
// each block every thread through phase 0, then (the barrier) every thread
// through phase 1, with the block's shared memory as a host array. Runs the
// bodies the GPU runs (eltwise.hpp, dbias.hpp) over the same geometry, so
// the CPU tests check their indexing, tails, aliasing and sum order.
// `only(block)` may skip blocks (to test huge index arithmetic on small
// buffers, running only the blocks that touch them).
#pragma once

#include <vector>

#include "cuda/body/grid.hpp"

namespace gelu::cuda::body {

template <class Body, class Args, class Only>
void emulate(const Launch& l, const Args& args, size_t shared_doubles, Only only) {
  std::vector<double> shared(shared_doubles > 0 ? shared_doubles : 1);
  Where w;
  w.grid = l.grid;
  w.size = l.block;
  for (unsigned by = 0; by < l.grid.y; ++by) {
    for (unsigned bx = 0; bx < l.grid.x; ++bx) {
      w.block = Dim{bx, by};
      if (!only(w.block)) continue;
      for (unsigned ty = 0; ty < l.block.y; ++ty)
        for (unsigned tx = 0; tx < l.block.x; ++tx) {
          w.thread = Dim{tx, ty};
          Body::phase0(w, args, shared.data());
        }
      for (unsigned ty = 0; ty < l.block.y; ++ty)
        for (unsigned tx = 0; tx < l.block.x; ++tx) {
          w.thread = Dim{tx, ty};
          Body::phase1(w, args, shared.data());
        }
    }
  }
}

template <class Body, class Args>
void emulate(const Launch& l, const Args& args, size_t shared_doubles) {
  emulate<Body>(l, args, shared_doubles, [](Dim) { return true; });
}

}  // namespace gelu::cuda::body
