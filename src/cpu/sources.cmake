# Kernel sources of the library (owned by the kernels; included by the top
# CMakeLists.txt).
#
# Every SIMD target Highway can reach on the architecture is compiled (and the
# tests run each one the CPU supports): on x86 AVX-512 (AVX3), AVX2, SSE4 and
# the portable EMU128 fallback. SSSE3 is left out: SSE4 machines supersede it
# and each target costs build time.
set(GELU_CPU_SOURCES
  ${CMAKE_CURRENT_LIST_DIR}/kernels_eltwise.cpp
  ${CMAKE_CURRENT_LIST_DIR}/kernels_rows.cpp)
set(GELU_CPU_DEFINITIONS HWY_COMPILE_ALL_ATTAINABLE HWY_DISABLED_TARGETS=HWY_SSSE3)
set_source_files_properties(${GELU_CPU_SOURCES} PROPERTIES
  COMPILE_DEFINITIONS "${GELU_CPU_DEFINITIONS}")
