# Kernel sources of the library (owned by the kernels; included by the top
# CMakeLists.txt).
set(GELU_CPU_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/kernels_scalar.cpp)
