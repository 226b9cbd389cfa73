#include "core/validate.hpp"

#include <cstdint>
#include <limits>
#include <sstream>
#include <string>

namespace gelu::core {
namespace {

[[noreturn]] void fail(const OpDecl& op, const std::string& what) {
  throw Error(std::string(op.name) + ": " + what);
}

bool valid_dtype(DType t) {
  return t == DType::f32 || t == DType::bf16 || t == DType::f16;
}

// Number of elements, or fails on a negative dimension or an element/byte
// count that does not fit int64.
int64_t checked_numel(const OpDecl& op, const TensorDecl& decl,
                      const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] < 0)
      fail(op, std::string(decl.name) + " has shape " + shape_text(shape) +
                   ", expected non-negative dimensions (dimension " +
                   std::to_string(i) + " is " + std::to_string(shape[i]) + ")");
  }
  for (int64_t d : shape) {
    if (d == 0) return 0;
  }
  constexpr int64_t kMaxBytes = std::numeric_limits<int64_t>::max();
  for (int64_t d : shape) {
    if (n > kMaxBytes / 4 / d)  // 4 = widest element, f32
      fail(op, std::string(decl.name) + " has shape " + shape_text(shape) +
                   ", expected at most 2^61 elements in all");
    n *= d;
  }
  return n;
}

const char* rule_reason(ShapeRule rule) {
  switch (rule) {
    case ShapeRule::last_dim: return "the last dimension of ";
    case ShapeRule::half_last: return "the shape of ";
    default: return "the shape of ";
  }
}

struct Extent {
  uintptr_t begin, end;  // byte range [begin, end)
};

}  // namespace

std::string shape_text(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

void validate(OpId id, std::span<const TensorArg> args, const Options& opts) {
  const OpDecl& op = op_decl(id);
  // Trailing optional outputs may be left out of `args` (absent).
  if (static_cast<int>(args.size()) < op.required_tensors() ||
      static_cast<int>(args.size()) > op.num_tensors)
    fail(op, "internal: wrong number of tensor arguments");

  if (opts.num_threads < 0)
    fail(op, "num_threads is " + std::to_string(opts.num_threads) +
                 ", expected >= 0 (0 = library default)");
  if (opts.gelu_half != GeluHalf::first &&
      (opts.gelu_half != GeluHalf::second || op.kind != OpKind::gated))
    fail(op, std::string("gelu_half is ") + gelu_half_name(opts.gelu_half) +
                 (opts.gelu_half == GeluHalf::second
                      ? ", expected the default 'first' (it applies to geglu only)"
                      : ", expected GeluHalf::first or GeluHalf::second"));
  bool known_form = false;
  for (Approx a : kAllForms) known_form = known_form || a == opts.approximate;
  if (!known_form)
    fail(op, "approximate is " + std::to_string(static_cast<int>(opts.approximate)) +
                 ", expected a form: " + approx_names_listed());

  // The primary tensor fixes every other shape and the dtype.
  const int primary = op.primary();
  const TensorDecl& pdecl = op.tensors[primary];
  const std::vector<int64_t>& pshape = *args[primary].shape;

  // An optional output given as TensorRef{} (null data, no shape) is not
  // requested: no rule applies to it, and it counts as empty below.
  auto absent = [&](size_t i) {
    return op.tensors[i].optional && args[i].data == nullptr && args[i].shape->empty();
  };

  std::vector<int64_t> numels(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    if (absent(i)) continue;  // numels[i] = 0: skipped by the checks below
    if (!valid_dtype(args[i].dtype))
      fail(op, std::string(op.tensors[i].name) + " has dtype " +
                   std::to_string(static_cast<int>(args[i].dtype)) +
                   ", expected f32, bf16 or f16");
    numels[i] = checked_numel(op, op.tensors[i], *args[i].shape);
  }

  if (op.primary_rule != PrimaryRule::any && pshape.empty())
    fail(op,
         std::string(pdecl.name) + " has shape [], expected at least one dimension");
  if (op.primary_rule == PrimaryRule::rank_ge_1_even_last && pshape.back() % 2 != 0)
    fail(op, std::string(pdecl.name) + " has shape " + shape_text(pshape) +
                 ", expected an even last dimension (value and gate halves)");

  const DType pdtype = args[primary].dtype;
  for (size_t i = 0; i < args.size(); ++i) {
    const TensorDecl& decl = op.tensors[i];
    if (static_cast<int>(i) == primary || absent(i)) continue;
    const std::vector<int64_t> want = tensor_shape(op, static_cast<int>(i), pshape);
    if (*args[i].shape != want)
      fail(op, std::string(decl.name) + " has shape " + shape_text(*args[i].shape) +
                   ", expected " + shape_text(want) + " (" + rule_reason(decl.shape) +
                   pdecl.name + ")");
    const DType t = args[i].dtype;
    if (decl.dtype == DTypeRule::same && t != pdtype)
      fail(op, std::string(decl.name) + " has dtype " + dtype_name(t) + ", expected " +
                   dtype_name(pdtype) + " (the dtype of " + pdecl.name + ")");
    if (decl.dtype == DTypeRule::same_or_f32 && t != pdtype && t != DType::f32)
      fail(op, std::string(decl.name) + " has dtype " + dtype_name(t) + ", expected " +
                   dtype_name(pdtype) + " or f32");
  }

  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i].data == nullptr && numels[i] != 0)
      fail(op, std::string(op.tensors[i].name) + " is null, expected data for " +
                   std::to_string(numels[i]) + " elements");
  }

  // Aliasing: an output may be the very same buffer as an input of its
  // dtype and shape (in place); any other overlap with an input or another
  // output is an error. Empty tensors overlap nothing.
  auto extent = [&](size_t i) {
    const auto b = reinterpret_cast<uintptr_t>(args[i].data);
    return Extent{b, b + static_cast<uintptr_t>(numels[i]) * dtype_size(args[i].dtype)};
  };
  for (size_t o = 0; o < args.size(); ++o) {
    if (!op.tensors[o].output() || numels[o] == 0) continue;
    const Extent eo = extent(o);
    for (size_t i = 0; i < args.size(); ++i) {
      if (i == o || numels[i] == 0) continue;
      if (op.tensors[i].output() && i < o) continue;  // pair checked already
      const Extent ei = extent(i);
      if (eo.end <= ei.begin || ei.end <= eo.begin) continue;
      const bool same_buffer = !op.tensors[i].output() &&
                               args[i].data == args[o].data &&
                               args[i].dtype == args[o].dtype &&
                               *args[i].shape == *args[o].shape;
      if (same_buffer) continue;
      fail(op, std::string(op.tensors[o].name) + " overlaps " + op.tensors[i].name +
                   ", expected separate memory or the very same buffer as an "
                   "input of the same shape and dtype (in place)");
    }
  }
}

}  // namespace gelu::core
