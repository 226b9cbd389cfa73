#include "gelu/version.hpp"

namespace gelu {

const char* version() { return GELU_FUSION_VERSION_STRING; }

}  // namespace gelu
