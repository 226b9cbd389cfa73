# The CUDA backend (src/cuda, include/gelu/gelu_cuda.hpp): the library
# gelu_fusion_cuda (alias gelu::gelu_fusion_cuda), linked by the tests, the
# tools and the PyTorch adapter when it is built. On by default for the
# top-level build where CMake finds nvcc (check_language); off in the
# sanitizer and fuzz builds (their flags are host-compiler flags) and where
# gelu-fusion is a subproject. Not installed (cmake/install.cmake): the
# installed package is the CPU library.
#
# Architectures: SASS for sm_80 (A100) and sm_90 (H100/H200) and PTX for
# compute_90, which newer GPUs' drivers compile at load time. Override with
# -DCMAKE_CUDA_ARCHITECTURES=... (kept in GELU_CUDA_ARCHITECTURES: the
# PyTorch adapter's configuration drops CMake's own cache entry).
include(CheckLanguage)
set(gelu_cuda_default OFF)
if(PROJECT_IS_TOP_LEVEL AND NOT GELU_SANITIZE AND NOT GELU_FUZZ)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(gelu_cuda_default ON)
  endif()
endif()
option(GELU_WITH_CUDA "Build the CUDA backend (needs nvcc; cmake/cuda.cmake)"
  ${gelu_cuda_default})
if(NOT GELU_WITH_CUDA)
  return()
endif()
if(GELU_SANITIZE)
  message(FATAL_ERROR "GELU_WITH_CUDA: the sanitizer builds are CPU-only")
endif()

if(DEFINED CMAKE_CUDA_ARCHITECTURES AND NOT CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(GELU_CUDA_ARCHITECTURES "${CMAKE_CUDA_ARCHITECTURES}" CACHE STRING
    "CUDA architectures of the CUDA backend" FORCE)
endif()
set(GELU_CUDA_ARCHITECTURES "80-real;90" CACHE STRING
  "CUDA architectures of the CUDA backend")
set(CMAKE_CUDA_ARCHITECTURES ${GELU_CUDA_ARCHITECTURES})
# CMake 3.25 cannot ask nvcc for C++20; the .cu units need C++17 only.
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(NOT CMAKE_CUDA_COMPILER_LAUNCHER AND CMAKE_CXX_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER ${CMAKE_CXX_COMPILER_LAUNCHER})
endif()
enable_language(CUDA)
find_package(CUDAToolkit REQUIRED)

# Each .cu unit is one op family, compiled for every architecture above;
# scripts/compile-meter.sh measures them as it does the C++ units.
add_library(gelu_fusion_cuda STATIC
  src/cuda/ops.cpp
  src/cuda/device.cu
  src/cuda/eltwise_forward.cu
  src/cuda/eltwise_backward.cu
  src/cuda/bias_backward.cu
  src/cuda/geglu.cu)
target_include_directories(gelu_fusion_cuda
  PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  PRIVATE ${PROJECT_SOURCE_DIR}/src)
# The CUDA runtime is linked statically (CMake's default for CUDA), so the
# library needs no libcudart at run time, only the driver.
target_link_libraries(gelu_fusion_cuda PUBLIC gelu_fusion PRIVATE CUDA::cudart_static)
string(REPLACE ";" " " gelu_archs "${GELU_CUDA_ARCHITECTURES}")
target_compile_definitions(gelu_fusion_cuda PRIVATE
  GELU_CUDA_ARCHITECTURES="${gelu_archs}")
# No fast math and no flush to zero (subnormal results are part of the
# contract); nvcc's defaults, stated. Warnings as in the C++ units.
target_compile_options(gelu_fusion_cuda PRIVATE
  $<$<COMPILE_LANGUAGE:CUDA>:-ftz=false -prec-div=true -prec-sqrt=true
    -Xcompiler=-Wall,-Wextra
    $<$<BOOL:${GELU_WERROR}>:-Werror=all-warnings -Xcompiler=-Werror>>)
set_target_properties(gelu_fusion_cuda PROPERTIES CUDA_RUNTIME_LIBRARY Static)
add_library(gelu::gelu_fusion_cuda ALIAS gelu_fusion_cuda)
