// The two sides of a driver A/B program (run.sh and same_outputs.sh build
// each from variant.cpp, with the namespace and these names renamed).
#pragma once
#include <cstddef>
#include <cstdint>

extern "C" void run_a(int, size_t, const float*, const float*, float*);
extern "C" void run_b(int, size_t, const float*, const float*, float*);
using Run16 = void(int, size_t, const uint16_t*, const uint16_t*, const uint16_t*,
                   uint16_t*, uint16_t*);
extern "C" Run16 run16_a, run16_b;
extern "C" const char* variant_target();
