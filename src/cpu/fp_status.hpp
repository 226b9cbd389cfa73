// The x86 floating-point status flags (MXCSR) as a detector the kernels
// read once per block of steps instead of testing every result.
//
// A 16-bit storage's rounding can report the results that need the
// overflow-boundary rule (driver-inl.h, BoundaryToFinite) through these
// flags: vcvtps2ph raises overflow for a finite value that rounds to inf, and
// a multiply probe raises overflow near bf16's boundary and denormal-operand
// for a subnormal result (storage-inl.h, Store2Flagged). The driver clears
// the flags, runs a block with plain stores, and reruns the block with the
// exact checks when a flag came up (Row, Recheck).
//
// The flags are the calling thread's. The caller's own flags are taken at the
// start of a row and put back at its end, so that a row never clears a flag
// it found set. Where the flags cannot serve (their exceptions unmasked: a
// probe would trap), or off x86, FpFlagsUsable says no and the driver tests
// every result. Under DAZ a subnormal result raises no denormal flag, and
// the per-result test (vfpclassps) does not see it either: both round it
// as zero, as DAZ asks, so the two ways agree there too.
#pragma once

#if defined(__x86_64__) || defined(__i386__) || defined(_M_X64)
#include <xmmintrin.h>
#define GELU_CPU_HAVE_FP_STATUS 1
#endif

namespace gelu::cpu {

// MXCSR bits.
inline constexpr unsigned kFpDenormal = 0x0002;  // DE: a denormal operand
inline constexpr unsigned kFpOverflow = 0x0008;  // OE: a result rounded to inf
inline constexpr unsigned kFpMaskShift = 7;      // flag bit b is masked by bit b << 7

#ifdef GELU_CPU_HAVE_FP_STATUS

// Whether `flags` can detect: their exceptions masked (raising them traps
// nothing).
inline bool FpFlagsUsable(unsigned flags) {
  return (_mm_getcsr() & (flags << kFpMaskShift)) == (flags << kFpMaskShift);
}

// Returns which of `flags` are set and clears them. The empty asm keeps the
// compiler from moving the stores before it past the read: the block's
// results are all in memory (or in a volatile asm's operands) before.
inline unsigned TakeFpFlags(unsigned flags) {
  asm volatile("" ::: "memory");
  const unsigned csr = _mm_getcsr();
  if ((csr & flags) != 0) _mm_setcsr(csr & ~flags);
  asm volatile("" ::: "memory");
  return csr & flags;
}

// Sets `flags` again (the caller's, after a row).
inline void PutBackFpFlags(unsigned flags) {
  if (flags != 0) _mm_setcsr(_mm_getcsr() | flags);
}

#else

inline bool FpFlagsUsable(unsigned) { return false; }
inline unsigned TakeFpFlags(unsigned) { return 0; }
inline void PutBackFpFlags(unsigned) {}

#endif

}  // namespace gelu::cpu
