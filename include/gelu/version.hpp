// gelu-fusion's version: the header's (macros, for the preprocessor) and the
// library's (gelu::version(), what the linked library was built as). They
// differ only when a program runs against another library than it was
// compiled with. CMake checks at configure time that these macros match
// project(gelu_fusion VERSION ...) in CMakeLists.txt.
#pragma once

#define GELU_FUSION_VERSION_MAJOR 0
#define GELU_FUSION_VERSION_MINOR 1
#define GELU_FUSION_VERSION_PATCH 0
// "MAJOR.MINOR.PATCH"
#define GELU_FUSION_VERSION_STRING "0.1.0"
// MAJOR * 10000 + MINOR * 100 + PATCH, for #if comparisons.
#define GELU_FUSION_VERSION                                              \
  (GELU_FUSION_VERSION_MAJOR * 10000 + GELU_FUSION_VERSION_MINOR * 100 + \
   GELU_FUSION_VERSION_PATCH)

namespace gelu {

// The version of the library in use, "MAJOR.MINOR.PATCH".
const char* version();

}  // namespace gelu
