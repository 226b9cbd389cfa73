# The version lives in two places: project(gelu_fusion VERSION ...) in
# CMakeLists.txt (for the CMake package, pkg-config, the SONAME and Python's
# gelu_fusion.__version__) and include/gelu/version.hpp (for C++ code, which
# may build without CMake). Configuring fails when they differ.
file(READ ${PROJECT_SOURCE_DIR}/include/gelu/version.hpp _gelu_version_hpp)
foreach(part MAJOR MINOR PATCH)
  string(REGEX MATCH "#define GELU_FUSION_VERSION_${part} ([0-9]+)" _ "${_gelu_version_hpp}")
  set(_gelu_header_${part} "${CMAKE_MATCH_1}")
endforeach()
string(REGEX MATCH "#define GELU_FUSION_VERSION_STRING \"([^\"]*)\"" _ "${_gelu_version_hpp}")
set(_gelu_header_string "${CMAKE_MATCH_1}")
set(_gelu_header_version "${_gelu_header_MAJOR}.${_gelu_header_MINOR}.${_gelu_header_PATCH}")
if(NOT _gelu_header_version STREQUAL PROJECT_VERSION OR
   NOT _gelu_header_string STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR
    "include/gelu/version.hpp says ${_gelu_header_version} (string \"${_gelu_header_string}\"), "
    "CMakeLists.txt says project(gelu_fusion VERSION ${PROJECT_VERSION}): make them agree")
endif()
