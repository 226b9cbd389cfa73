// The CPU kernels' public entry points (src/cpu/kernels.hpp): each exports
// its per-target functions (the list in kernel_list.h, declared by
// kernel_entries-inl.h, defined by the kernel units kernels_*.cpp) and
// dispatches once per call to the best target this CPU runs.
#include <cstdint>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "cpu/kernels_dispatch.cpp"
#include "hwy/foreach_target.h"  // IWYU pragma: keep

#include "cpu/kernel_entries-inl.h"
#include "hwy/highway.h"

#if HWY_ONCE
#include "cpu/kernels.hpp"

// GELU_KERNEL_UNITS: the targets the build compiled kernel units for
// (src/cpu/sources.cmake), 0 for one unit of every target.
#if GELU_KERNEL_UNITS != 0
static_assert((HWY_TARGETS & ~static_cast<int64_t>(GELU_KERNEL_UNITS)) == 0,
              "a Highway target has no kernel unit: add it to "
              "GELU_CPU_UNIT_TARGETS in src/cpu/sources.cmake");
#endif

namespace gelu::cpu {

// One export and one dispatching function per entry point (kernel_list.h).
#define GELU_EXPORT_ENTRY(Name, name, R, params, args) HWY_EXPORT(Name);
GELU_CPU_KERNEL_ENTRIES(GELU_EXPORT_ENTRY)
#undef GELU_EXPORT_ENTRY

#define GELU_DISPATCH_ENTRY(Name, name, R, params, args) \
  R name params { return HWY_DYNAMIC_DISPATCH(Name) args; }
GELU_CPU_KERNEL_ENTRIES(GELU_DISPATCH_ENTRY)
#undef GELU_DISPATCH_ENTRY

const char* target_name() { return hwy::TargetName(dispatch_target()); }
int64_t compiled_targets() { return HWY_TARGETS; }

std::vector<Target> runnable_targets() {
  // Read once, before any pin_target: SupportedTargets() then reports the
  // pinned mask.
  static const std::vector<Target> targets = [] {
    std::vector<Target> out;
    const int64_t runs = HWY_TARGETS & hwy::SupportedTargets();
    for (int64_t bits = runs; bits != 0; bits &= bits - 1) {
      const int64_t bit = bits & -bits;  // lowest bit first: the best target
      out.push_back({bit, hwy::TargetName(bit)});
    }
    return out;
  }();
  return targets;
}

void pin_target(int64_t bit) {
  runnable_targets();  // the CPU's own list, read before the mask changes
  hwy::SetSupportedTargetsForTest(bit);
}

}  // namespace gelu::cpu
#endif  // HWY_ONCE
