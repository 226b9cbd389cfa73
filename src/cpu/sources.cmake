# Kernel sources of the library (owned by the kernels; included by the top
# CMakeLists.txt, which adds GELU_CPU_SOURCES and GELU_CPU_OBJECTS to the
# library).
#
# By default (GELU_SIMD_TARGETS=all) every SIMD target Highway can reach on
# the architecture is compiled (and the tests run each one the CPU supports): on x86 AVX-512 (AVX3), AVX2, SSE4 and
# the portable EMU128 fallback. SSSE3 is left out: SSE4 machines supersede it
# and each target costs build time.
#
# Each kernel unit (one op family, kernels_*.cpp) is compiled once per target,
# an object library per target (kernel_unit.h): small compiler processes that
# build in parallel. kernels_dispatch.cpp, compiled once, exports them all.
# GELU_CPU_UNIT_TARGETS names the targets by Highway's macro without HWY_
# (BASELINE_SCALAR: EMU128, or SCALAR where EMU128 is broken); ALL compiles
# every target in one object per unit, as sanitizer builds do (they compile
# only the static target, -march=native) and as other architectures do.
# A subset (GELU_SIMD_TARGETS=native, cmake/simd_targets.cmake, or a list of
# its own) disables the other targets in Highway (HWY_DISABLED_TARGETS), so
# that HWY_TARGETS is the same subset in every object.
include(${PROJECT_SOURCE_DIR}/cmake/simd_targets.cmake)
set(GELU_CPU_UNITS
  kernels_gelu.cpp
  kernels_add.cpp
  kernels_bias_fwd.cpp
  kernels_bias_bwd.cpp
  kernels_bias_bwd_value.cpp
  kernels_geglu_fwd.cpp
  kernels_geglu_bwd.cpp
  kernels_geglu_bwd_value.cpp
  kernels_convert.cpp)

set(gelu_x86 OFF)
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64|i.86)$")
  set(gelu_x86 ON)
endif()
if(gelu_x86 AND NOT GELU_SANITIZE)
  set(GELU_CPU_UNIT_TARGETS_DEFAULT AVX3 AVX2 SSE4 BASELINE_SCALAR)
else()
  set(GELU_CPU_UNIT_TARGETS_DEFAULT ALL)
endif()
set(GELU_CPU_UNIT_TARGETS "${GELU_CPU_UNIT_TARGETS_DEFAULT}" CACHE STRING
  "Highway targets with a kernel object each (AVX3;AVX2;...), or ALL for one object")
# The kernels for this machine's CPU only (-march=native, Highway's static
# target), as the sanitizer builds compile them: a quarter of the build, for
# a machine that builds to test its GPU (scripts/gpu-check.sh). The C++
# units of every target get the flags, so that all agree on the target.
option(GELU_CPU_HOST_ONLY "Compile the CPU kernels for this machine's CPU only" OFF)
if(GELU_CPU_HOST_ONLY AND NOT GELU_SANITIZE)
  set(GELU_CPU_UNIT_TARGETS ALL)
  add_compile_options($<$<COMPILE_LANGUAGE:CXX>:-march=native>
    $<$<COMPILE_LANGUAGE:CXX>:-DHWY_COMPILE_ONLY_STATIC=1>)
endif()

if(GELU_SIMD_TARGETS STREQUAL "native" AND gelu_x86 AND NOT GELU_SANITIZE
   AND NOT GELU_CPU_HOST_ONLY)
  gelu_native_simd_target(gelu_best "AVX3;AVX2;SSE4")
  if(gelu_best)
    set(GELU_CPU_UNIT_TARGETS ${gelu_best} BASELINE_SCALAR)
  endif()
elseif(GELU_SIMD_TARGETS STREQUAL "native" AND NOT gelu_x86)
  message(STATUS "gelu_fusion: GELU_SIMD_TARGETS=native splits x86 targets only; "
    "every target is compiled")
endif()
# Highway's x86 targets without a unit are disabled (SSSE3 always), so that
# the static_assert in kernels_dispatch.cpp holds.
set(gelu_disabled HWY_SSSE3)
if(gelu_x86 AND NOT GELU_CPU_UNIT_TARGETS STREQUAL "ALL" AND NOT GELU_SANITIZE)
  if(NOT "BASELINE_SCALAR" IN_LIST GELU_CPU_UNIT_TARGETS)
    message(FATAL_ERROR "GELU_CPU_UNIT_TARGETS (${GELU_CPU_UNIT_TARGETS}) needs "
      "BASELINE_SCALAR: Highway's static target cannot be disabled")
  endif()
  foreach(target SSE4 AVX2 AVX3)
    if(NOT target IN_LIST GELU_CPU_UNIT_TARGETS)
      list(APPEND gelu_disabled HWY_${target})
    endif()
  endforeach()
endif()
if(NOT GELU_SANITIZE AND NOT GELU_CPU_HOST_ONLY)
  message(STATUS "gelu_fusion: CPU kernels for ${GELU_CPU_UNIT_TARGETS} "
    "(GELU_SIMD_TARGETS=${GELU_SIMD_TARGETS})")
endif()
list(JOIN gelu_disabled "|" gelu_disabled)
set(GELU_CPU_DEFINITIONS HWY_COMPILE_ALL_ATTAINABLE HWY_DISABLED_TARGETS=${gelu_disabled})
if(GELU_SANITIZE)  # one static target: one object per unit
  set(GELU_CPU_UNIT_TARGETS ALL)
endif()
set(GELU_CPU_SOURCES ${CMAKE_CURRENT_LIST_DIR}/kernels_dispatch.cpp)
set(GELU_CPU_OBJECTS)
set(gelu_units_mask)
foreach(target ${GELU_CPU_UNIT_TARGETS})
  string(TOLOWER ${target} lower)
  if(target STREQUAL "ALL")
    set(bit 0)
  else()
    set(bit HWY_${target})
    list(APPEND gelu_units_mask ${bit})
  endif()
  set(lib gelu_kernels_${lower})
  list(TRANSFORM GELU_CPU_UNITS PREPEND ${CMAKE_CURRENT_LIST_DIR}/ OUTPUT_VARIABLE units)
  add_library(${lib} OBJECT ${units})
  target_compile_definitions(${lib} PRIVATE ${GELU_CPU_DEFINITIONS}
    GELU_KERNEL_TARGET=${bit})
  target_include_directories(${lib} PRIVATE
    ${PROJECT_SOURCE_DIR}/include ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR})
  target_link_libraries(${lib} PRIVATE hwy::hwy)
  list(APPEND GELU_CPU_OBJECTS $<TARGET_OBJECTS:${lib}>)
endforeach()
if(gelu_units_mask)
  list(JOIN gelu_units_mask "|" gelu_units_mask)
else()
  set(gelu_units_mask 0)
endif()
set_source_files_properties(${GELU_CPU_SOURCES} PROPERTIES
  COMPILE_DEFINITIONS "${GELU_CPU_DEFINITIONS};GELU_KERNEL_UNITS=${gelu_units_mask}")
