# Sanitized and fuzzing builds, each in its own build directory
# (scripts/sanitize.sh makes them: build-asan, build-tsan, build-fuzz):
#
#   GELU_SANITIZE=address   ASan + UBSan, every unit test (clang in
#                           scripts/sanitize.sh; g++ works, but slowly)
#   GELU_SANITIZE=thread    TSan, the threaded tests only (gelu_tsan_tests;
#                           clang, whose LLVM libomp has the Archer tool)
#   GELU_FUZZ=ON            the libFuzzer API fuzzer fuzz_api (clang), with
#                           ASan + UBSan
#
# Included by the top CMakeLists.txt before any target, so the flags reach
# the library and everything linked with it.
set(GELU_SANITIZE "" CACHE STRING "Sanitizer build: address (ASan+UBSan), thread (TSan) or empty")
set_property(CACHE GELU_SANITIZE PROPERTY STRINGS "" address thread)
option(GELU_FUZZ "Build the libFuzzer API fuzzer fuzz/fuzz_api.cpp (clang; ASan+UBSan)" OFF)
# The one SIMD target these builds compile is the best of -march's: native
# (this CPU's, the default), or another to check a narrower target under the
# sanitizers and the fuzzer, e.g. haswell for AVX2 or nehalem for SSE4
# (scripts/sanitize.sh: GELU_SANITIZE_MARCH).
set(GELU_SANITIZE_MARCH native CACHE STRING
  "-march of the sanitizer and fuzz builds, whose best target is the one they compile")

if(GELU_FUZZ)
  if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    message(FATAL_ERROR "GELU_FUZZ needs clang (libFuzzer); configure with CXX=clang++")
  endif()
  if(GELU_SANITIZE STREQUAL "")
    set(GELU_SANITIZE address CACHE STRING "" FORCE)
  elseif(NOT GELU_SANITIZE STREQUAL "address")
    message(FATAL_ERROR "GELU_FUZZ runs under GELU_SANITIZE=address, not ${GELU_SANITIZE}")
  endif()
endif()

if(GELU_SANITIZE STREQUAL "address")
  set(GELU_SANITIZE_FLAGS -fsanitize=address,undefined -fno-sanitize-recover=all)
elseif(GELU_SANITIZE STREQUAL "thread")
  set(GELU_SANITIZE_FLAGS -fsanitize=thread)
elseif(NOT GELU_SANITIZE STREQUAL "")
  message(FATAL_ERROR "GELU_SANITIZE is address, thread or empty, not '${GELU_SANITIZE}'")
endif()

if(GELU_SANITIZE_FLAGS)
  # The Highway kernels are compiled for one SIMD target only: the best this
  # machine has (-march=native; HWY_COMPILE_ONLY_STATIC trumps the kernels'
  # HWY_COMPILE_ALL_ATTAINABLE), i.e. the code dynamic dispatch runs here,
  # or the best of GELU_SANITIZE_MARCH.
  # Every target under sanitizers costs ~4x the build time; the plain build
  # still tests every target.
  add_compile_options(${GELU_SANITIZE_FLAGS} -fno-omit-frame-pointer
    -march=${GELU_SANITIZE_MARCH} -DHWY_COMPILE_ONLY_STATIC=1)
  if(NOT GELU_SANITIZE_MARCH STREQUAL "native"
     AND CMAKE_SYSTEM_PROCESSOR MATCHES "x86_64|AMD64")
    # Highway's x86 targets from SSE4 up require AES and CLMUL, which
    # clang's -march=haswell leaves out: without them the static target
    # falls to EMU128, not the AVX2 asked for (docs/notes/build-times-log.md).
    add_compile_options(-maes -mpclmul)
  endif()
  add_link_options(${GELU_SANITIZE_FLAGS})
endif()
if(GELU_FUZZ)
  # Coverage instrumentation for everything; fuzz_api links libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()
