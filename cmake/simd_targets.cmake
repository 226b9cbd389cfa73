# GELU_SIMD_TARGETS: the SIMD targets the CPU kernels are compiled for
# (src/cpu/sources.cmake includes this file).
#
#   all     every target Highway reaches on the architecture (on x86: AVX3,
#           AVX2, SSE4 and the scalar fallback). The default, and what
#           `make build`, `make test`, CI, the install and pip build.
#   native  the target that Highway's run-time dispatch picks on the CPU that
#           configures (its best one), plus the scalar fallback: the kernels
#           the library runs on this machine, in about half the compile
#           time on x86. `make run` builds the report this way, in its own
#           build directory (build-run). Dispatch never calls a target below
#           the CPU's best, so the others would be dead code there; the
#           scalar fallback keeps the library working (slowly) on a CPU
#           without that target, should the binary be copied elsewhere.
#
# Sanitizer and fuzz builds (GELU_SANITIZE, GELU_FUZZ) ignore it: they
# compile the CPU's best target alone (cmake/sanitizers.cmake), and
# GELU_CPU_HOST_ONLY does the same for a GPU machine's build.
set(GELU_SIMD_TARGETS all CACHE STRING
  "SIMD targets of the CPU kernels: all (every target) or native (this CPU's best plus scalar)")
set_property(CACHE GELU_SIMD_TARGETS PROPERTY STRINGS all native)
if(NOT GELU_SIMD_TARGETS MATCHES "^(all|native)$")
  message(FATAL_ERROR "GELU_SIMD_TARGETS is all or native, not '${GELU_SIMD_TARGETS}'")
endif()

# The best of `candidates` (Highway target names without HWY_, best first)
# that this CPU runs, in `out`; empty where it cannot be told (cross
# compiling, the probe failed) or the CPU runs none of them. Asked once per
# build directory (cmake/simd_probe.cpp); the answer is cached.
function(gelu_native_simd_target out candidates)
  if(NOT DEFINED CACHE{GELU_NATIVE_SIMD_TARGETS})
    set(found)
    if(NOT CMAKE_CROSSCOMPILING)
      try_run(probe_ran probe_compiled ${CMAKE_BINARY_DIR}/simd_probe
        ${PROJECT_SOURCE_DIR}/cmake/simd_probe.cpp
        LINK_LIBRARIES hwy::hwy
        CMAKE_FLAGS -DCMAKE_CXX_STANDARD=17
        COMPILE_OUTPUT_VARIABLE probe_log
        RUN_OUTPUT_VARIABLE probe_out)
      if(probe_compiled AND probe_ran EQUAL 0)
        string(REGEX MATCHALL "[A-Z0-9_]+" found "${probe_out}")
      else()
        message(WARNING "gelu_fusion: the SIMD probe failed; GELU_SIMD_TARGETS=native "
          "falls back to every target.\n${probe_log}")
      endif()
    endif()
    set(GELU_NATIVE_SIMD_TARGETS "${found}" CACHE INTERNAL
      "SIMD targets this CPU runs (cmake/simd_probe.cpp), best first")
  endif()
  set(best)
  foreach(target ${candidates})
    if(target IN_LIST GELU_NATIVE_SIMD_TARGETS)
      set(best ${target})
      break()
    endif()
  endforeach()
  set(${out} "${best}" PARENT_SCOPE)
endfunction()
