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
  add_link_options(${GELU_SANITIZE_FLAGS})
endif()
if(GELU_FUZZ)
  # Coverage instrumentation for everything; fuzz_api links libFuzzer's main.
  add_compile_options(-fsanitize=fuzzer-no-link)
endif()

# GELU_SANITIZE_KERNELS=OFF: the kernel units (the gelu_kernels_* object
# libraries) compile without the sanitizers and at -O2, the rest as above.
# For a narrower GELU_SANITIZE_MARCH: clang 14 compiles the AVX2 kernel
# units (-march=haswell) for over 5 minutes each under ASan or UBSan, and
# at -O1 even without them, where -O2 alone takes about a minute
# (docs/notes/build-times-log.md). The fuzzer then still drives the
# narrower target's kernels and checks every result against the contract;
# what it no longer sees is a memory error inside kernel code.
option(GELU_SANITIZE_KERNELS "Sanitizer builds: instrument the kernel units too" ON)
function(gelu_kernel_unit_options lib)
  if(GELU_SANITIZE_FLAGS AND NOT GELU_SANITIZE_KERNELS)
    get_target_property(options ${lib} COMPILE_OPTIONS)
    list(REMOVE_ITEM options ${GELU_SANITIZE_FLAGS})
    set_target_properties(${lib} PROPERTIES COMPILE_OPTIONS "${options};-O2")
  endif()
endfunction()
