// Storage conversions on the kernels' vector path (kernels.hpp: to_f32,
// from_f32, sums_to, round_results_to_bf16) and the target's name, compiled
// per SIMD target (kernel_unit.h); kernels_dispatch.cpp picks the target per
// call.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cpu/kernel_unit.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_convert.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/driver-inl.h"
#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
HWY_BEFORE_NAMESPACE();
namespace gelu::cpu {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// A storage's exact load: F16 has a faster one for the kernels.
template <class S, class DF>
HWY_INLINE hn::Vec<DF> LoadExact(DF df, const typename S::T* p) {
  if constexpr (std::is_same_v<S, F16>) return S::LoadExact(df, p);
  else return S::Load(df, p);
}

// Storage conversions through the kernels' own load/store path (tests check
// them bit for bit against src/ref/convert.hpp).
template <class From, class To>
void Convert(size_t n, const typename From::T* in, typename To::T* out) {
  const hn::ScalableTag<float> df;
  const size_t N = hn::Lanes(df);
  size_t i = 0;
  if (n >= N) {
    for (; i <= n - N; i += N) To::Store(df, LoadExact<From>(df, in + i), out + i);
  }
  if (i < n) {
    HWY_ALIGN typename From::T a[detail::kMaxStep];
    HWY_ALIGN typename To::T b[detail::kMaxStep];
    To::Store(df, LoadExact<From>(df, detail::Stage(in + i, a, n - i)), b);
    std::memcpy(out + i, b, (n - i) * sizeof(b[0]));
  }
}

void ToF32(DType t, int64_t n, const void* in, float* out) {
  WithDType(t, [&](auto s) {
    using S = decltype(s);
    Convert<S, F32>(n, CP<S>(in), out);
  });
}

// A double sum to be stored as S (bf16/f16) at the format's overflow
// boundary: rounded to f32 first, a sum just below the boundary would land
// on it and round on to inf. Sums below the boundary, and up to 2^-20 above
// it (the group sums' f32 error, within dbias's 2^-20 bound), are stored as
// the largest finite value at most; sums further up stay as they are (inf).
inline constexpr double kSumOverflowBand = 1.0 + 0x1p-20;
template <class S>
double FiniteBelowBoundary(double sum) {
  if constexpr (sizeof(typename S::T) == 2) {
    const double largest = S::kLargestFinite;
    if (std::fabs(sum) < S::kOverflowBoundary * kSumOverflowBand)
      return sum > largest ? largest : sum < -largest ? -largest : sum;
  }
  return sum;
}
template <class S, class DD>
HWY_INLINE hn::Vec<DD> FiniteBelowBoundary(DD dd, hn::Vec<DD> sum) {
  if constexpr (sizeof(typename S::T) == 2) {
    const auto largest = hn::Set(dd, S::kLargestFinite);
    const auto clamped = hn::Min(hn::Max(sum, hn::Neg(largest)), largest);
    const auto band = hn::Set(dd, S::kOverflowBoundary * kSumOverflowBand);
    return hn::IfThenElse(hn::Lt(hn::Abs(sum), band), clamped, sum);
  }
  return sum;
}

// out[j] = sum over b of in[b * n + j], added in b order in double, rounded
// to f32 (as a cast), then to t (FiniteBelowBoundary: no double rounding
// into inf).
void SumsTo(DType t, int64_t n, int64_t blocks, const double* in, void* out) {
  WithDType(t, [&](auto s) {
    using S = decltype(s);
    typename S::T* const o = P<S>(out);
    int64_t i = 0;
#if HWY_TARGET != HWY_SCALAR
    const hn::ScalableTag<float> df;
    const hn::Half<decltype(df)> dh;
    const hn::Rebind<double, decltype(dh)> dd;
    const int64_t N = static_cast<int64_t>(hn::Lanes(df)), H = N / 2;
    for (; i + N <= n; i += N) {
      auto lo = hn::LoadU(dd, in + i), hi = hn::LoadU(dd, in + i + H);
      for (int64_t b = 1; b < blocks; ++b) {
        lo = hn::Add(lo, hn::LoadU(dd, in + b * n + i));
        hi = hn::Add(hi, hn::LoadU(dd, in + b * n + i + H));
      }
      lo = FiniteBelowBoundary<S>(dd, lo);
      hi = FiniteBelowBoundary<S>(dd, hi);
      S::Store(df, hn::Combine(df, hn::DemoteTo(dh, hi), hn::DemoteTo(dh, lo)), o + i);
    }
#endif
    // The remainder (everything on SCALAR) through a small f32 buffer.
    constexpr int64_t kRest = static_cast<int64_t>(detail::kMaxF32Lanes);
    float rest[kRest];
    for (; i < n; i += kRest) {
      const int64_t r = n - i < kRest ? n - i : kRest;
      for (int64_t j = 0; j < r; ++j) {
        double sum = in[i + j];
        for (int64_t b = 1; b < blocks; ++b) sum += in[b * n + i + j];
        rest[j] = static_cast<float>(FiniteBelowBoundary<S>(sum));
      }
      Convert<F32, S>(static_cast<size_t>(r), rest, o + i);
    }
  });
}

void FromF32(DType t, int64_t n, const float* in, void* out) {
  WithDType(t, [&](auto s) {
    using S = decltype(s);
    Convert<F32, S>(n, in, P<S>(out));
  });
}

void RoundResultsToBf16(int64_t n, const float* in, uint16_t* out) {
  WithDType(DType::bf16, [&](auto s) {
    using S = decltype(s);
    const hn::ScalableTag<float> df;
    const size_t N = hn::Lanes(df);
    HWY_ALIGN float even[detail::kMaxF32Lanes], odd[detail::kMaxF32Lanes];
    HWY_ALIGN uint16_t buf[detail::kMaxStep];
    for (size_t i = 0; i < static_cast<size_t>(n); i += 2 * N) {
      const size_t m = std::min(2 * N, static_cast<size_t>(n) - i);
      for (size_t j = 0; j < N; ++j) {  // zero-padded past n
        even[j] = 2 * j < m ? in[i + 2 * j] : 0.0f;
        odd[j] = 2 * j + 1 < m ? in[i + 2 * j + 1] : 0.0f;
      }
      if constexpr (std::is_base_of_v<BF16Pairs, S>)
        S::Store2(df, hn::Load(df, even), hn::Load(df, odd), buf);
      std::memcpy(out + i, buf, m * sizeof(uint16_t));
    }
  });
}

int64_t Target() { return HWY_TARGET; }

// NOLINTNEXTLINE(google-readability-namespace-comments)
}  // namespace HWY_NAMESPACE
}  // namespace gelu::cpu
HWY_AFTER_NAMESPACE();
#endif  // GELU_KERNEL_UNIT_COMPILES(HWY_TARGET)
