// oneDNN as a peer: its eltwise GELU (gelu_erf, gelu_tanh; swish with
// alpha = 1.702 is exactly the quick form) for gelu and gelu_backward, and
// its binary add with a GELU post-op (a fused op of its own) for bias_gelu
// and add_gelu. Compiled only when CMake found oneDNN (GELU_HAVE_DNNL);
// otherwise every call says "not installed" and the report goes on.
#pragma once

#include <memory>
#include <string>

#include "report_case.hpp"

namespace gelu::report::onednn {

bool installed();
std::string version();  // "2.6.3 (OpenMP)" or "not installed"

// Threads oneDNN runs with (its OpenMP runtime's omp_set_num_threads).
void set_threads(int threads);

class Peer {
 public:
  virtual ~Peer() = default;
  // Computes the case's op into case.out (for gelu_backward: dx).
  virtual void run() = 0;
};

// The peer for `c` in `form`, or null with *why saying what is missing
// (not installed, no such op in oneDNN, dtype unsupported).
std::unique_ptr<Peer> make_peer(Case& c, Approx form, std::string* why);

}  // namespace gelu::report::onednn
