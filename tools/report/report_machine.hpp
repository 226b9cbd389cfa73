// The machine section: what the figures were measured on.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace gelu::report {

// (field, value) pairs: CPU model, SIMD target, caches, threads, compiler.
std::vector<std::pair<std::string, std::string>> machine_facts();

}  // namespace gelu::report
