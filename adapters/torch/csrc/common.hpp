// Helpers shared by the kernels of every backend and the autograd layer of
// the PyTorch adapter: torch tensors -> gelu tensor views, argument checks
// with messages in PyTorch's style, and gelu::Error -> c10::Error (a Python
// RuntimeError). Which device a backend computes on is its own
// (backend.hpp); nothing here assumes one.
#pragma once

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/native/Resize.h>

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "backend.hpp"
#include "gelu/gelu.hpp"

namespace gelu_torch {

// Checks that the elements of a strided CPU tensor `t` lie inside its
// storage. A tensor keeps its sizes when its storage is resized under it
// (`t.untyped_storage().resize_(0)`, as FSDP frees parameters): then its
// data is null (the library reports that) or shorter than its elements, and
// a kernel would read or write past it. PyTorch's own kernels do not check
// this and crash; a few integer operations per tensor here.
inline void check_storage(const char* op, const char* name, const at::Tensor& t) {
  if (!t.has_storage()) return;
  const int64_t n = t.numel();
  if (n == 0) return;
  // The last element's index in the storage (strides are never negative).
  int64_t last = t.storage_offset();
  if (t.is_contiguous()) {
    last += n - 1;
  } else {
    for (int64_t d = 0; d < t.dim(); ++d) last += (t.size(d) - 1) * t.stride(d);
  }
  const uint64_t need = static_cast<uint64_t>(last + 1) * t.itemsize();
  const uint64_t have = t.storage().nbytes();
  TORCH_CHECK(need <= have, "gelu_fusion::", op, ": ", name, " has shape ", t.sizes(),
              " and needs ", need, " bytes of its storage, which holds ", have,
              " (was the storage resized after the tensor was made?)");
}

// Checks that `t` is a strided tensor on the backend's device, of a dtype
// the library computes, its elements inside its storage.
inline gelu::DType dtype_of(const Backend& b, const char* op, const char* name,
                            const at::Tensor& t) {
  TORCH_CHECK(t.defined(), "gelu_fusion::", op, ": ", name,
              " is an undefined tensor, expected ", b.expected);
  TORCH_CHECK(t.device().type() == b.device, "gelu_fusion::", op, ": ", name, " is on ",
              t.device(), ", expected ", b.expected);
  TORCH_CHECK(t.layout() == at::kStrided, "gelu_fusion::", op, ": ", name,
              " has layout ", t.layout(), ", expected a strided (dense) tensor");
  check_storage(op, name, t);
  switch (t.scalar_type()) {
    case at::kFloat: return gelu::DType::f32;
    case at::kBFloat16: return gelu::DType::bf16;
    case at::kHalf: return gelu::DType::f16;
    default:
      TORCH_CHECK(false, "gelu_fusion::", op, ": ", name, " has dtype ",
                  t.scalar_type(), ", expected Float, BFloat16 or Half");
  }
}

inline gelu::ConstTensorRef cref(const at::Tensor& contiguous, gelu::DType t) {
  return {contiguous.data_ptr(), t,
          std::vector<int64_t>(contiguous.sizes().begin(), contiguous.sizes().end())};
}

inline gelu::TensorRef ref(at::Tensor& contiguous, gelu::DType t) {
  return {contiguous.data_ptr(), t,
          std::vector<int64_t>(contiguous.sizes().begin(), contiguous.sizes().end())};
}

// Runs `f` (a call into the library), turning gelu::Error into c10::Error
// with the library's text after the op's qualified name.
template <class F>
void call(F&& f) {
  try {
    std::forward<F>(f)();
  } catch (const gelu::Error& e) {
    TORCH_CHECK(false, "gelu_fusion::", e.what());
  }
}

// Options for one call: the form, which half of x the GELU applies to
// (gated ops; null for the others), and PyTorch's intra-op thread count so
// that torch.set_num_threads governs our kernels too.
inline gelu::Options options(const char* op, std::string_view approximate,
                             const std::string_view* gelu_half = nullptr) {
  gelu::Options o;
  try {
    o.approximate = gelu::parse_approx(approximate);
    if (gelu_half) o.gelu_half = gelu::parse_gelu_half(*gelu_half);
  } catch (const gelu::Error& e) {
    TORCH_CHECK(false, "gelu_fusion::", op, ": ", e.what());
  }
  o.num_threads = at::get_num_threads();
  return o;
}

// Output layout as F.gelu's (empty_like): a dense, non-overlapping input
// that is not contiguous (transposed, channels_last) is computed through its
// permuted view, which is contiguous without a copy, and the result is
// permuted back, so it has the input's strides. Other inputs are copied
// contiguous and give contiguous results.
struct Layout {
  std::vector<int64_t> perm;  // empty: plain contiguous

  // The dimensions of `t` by decreasing stride, when that view of a dense
  // `t` is contiguous and differs from `t`; else empty. With keep_last, only
  // permutations that leave the last dimension last (bias_gelu's bias runs
  // along it).
  static Layout of(const at::Tensor& t, bool keep_last = false) {
    Layout l;
    if (t.dim() < 2 || t.is_contiguous() || !t.is_non_overlapping_and_dense()) return l;
    std::vector<int64_t> p(t.dim());
    std::iota(p.begin(), p.end(), int64_t{0});
    const auto st = t.strides();
    std::stable_sort(p.begin(), p.end(),
                     [&](int64_t a, int64_t b) { return st[a] > st[b]; });
    if (keep_last && p.back() != t.dim() - 1) return l;
    if (!t.permute(p).is_contiguous()) return l;
    l.perm = std::move(p);
    return l;
  }
  // `t` (of the input's shape) in the computing order, contiguous.
  at::Tensor in(const at::Tensor& t) const {
    return perm.empty() ? t.contiguous() : t.permute(perm).contiguous();
  }
  // A result computed in that order, in the input's dimension order.
  at::Tensor out(const at::Tensor& t) const {
    if (perm.empty()) return t;
    std::vector<int64_t> inv(perm.size());
    for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
    return t.permute(inv);
  }
};

bool& poison_outputs();  // kernel.hpp
inline at::Tensor new_output(at::IntArrayRef sizes, const at::TensorOptions& like) {
  at::Tensor out = at::empty(sizes, like.memory_format(at::MemoryFormat::Contiguous));
  if (poison_outputs()) out.fill_(std::numeric_limits<double>::quiet_NaN());
  return out;
}

// An out= argument must be a tensor on the backend's device, of the dtype
// the op writes there.
inline void check_out(const Backend& b, const char* op, const char* name,
                      const at::Tensor& out, at::ScalarType dtype) {
  TORCH_CHECK(out.device().type() == b.device, "gelu_fusion::", op, ": ", name,
              " is on ", out.device(), ", expected ", b.expected);
  TORCH_CHECK(out.layout() == at::kStrided, "gelu_fusion::", op, ": ", name,
              " has layout ", out.layout(), ", expected a strided (dense) tensor");
  TORCH_CHECK(out.scalar_type() == dtype, "gelu_fusion::", op, ": ", name,
              " has dtype ", out.scalar_type(), ", expected ", dtype,
              " (the dtype this op writes there)");
  check_storage(op, name, out);
}

// The tensor a kernel writes for the out= argument `out` of `sizes`: out
// itself when it is contiguous and of that shape (the library then checks
// its aliasing with the inputs), else a fresh one that commit_out copies in.
// So a call that fails leaves out untouched, as the library's own calls do.
inline at::Tensor direct_or_temp(const at::Tensor& out, at::IntArrayRef sizes) {
  if (out.sizes() == sizes && out.is_contiguous()) return out;
  return new_output(sizes, out.options());
}

// After a successful call: out gets `result` (resized first, as PyTorch's
// out= variants do, with their warning when a non-empty out changes shape).
inline void commit_out(const at::Tensor& out, const at::Tensor& result) {
  if (result.is_same(out)) return;
  at::native::resize_output(out, result.sizes());
  out.copy_(result);
}

}  // namespace gelu_torch
