// libFuzzer target for the whole public API (include/gelu/gelu.hpp).
//
// From the fuzzed bytes it builds one op call: shapes (rank 0..4, zero, huge,
// negative, mismatched), dtypes (mixed, out-of-range values), forms (also
// invalid), thread counts (also negative), buffer placement (own buffer, null,
// in place, overlapping, carved from a shared arena) and values (NaN payloads,
// infinities, subnormals, raw bit patterns). Every tensor lives in an mmap'd
// slot between PROT_NONE guard pages; outputs end exactly at the guard page,
// so any overrun faults. The call must either
//   - succeed, where the API model (api_model.hpp) accepts it: every output
//     within the accuracy contract (contract.hpp) and no byte outside the
//     outputs changed; or
//   - throw gelu::Error, where the model rejects it: no byte changed at all.
// Anything else aborts with a description (a finding).
//
// Also calls every helper (names, parsing, numel, dtype_size, simd_target,
// default_num_threads) and checks them against their documented behaviour.
#include <fuzzer/FuzzedDataProvider.h>
#include <sys/mman.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "api_model.hpp"
#include "check_values.hpp"

namespace {

using namespace gelu::fuzz;
using gelu::ConstTensorRef;
using gelu::DType;
using gelu::TensorRef;

constexpr size_t kPage = 4096;
constexpr size_t kSlotBytes = 16 * 1024;  // 4096 f32 elements
constexpr int kSlots = 7;                 // one per tensor + a shared arena
constexpr int kArena = 6;

// [guard][slot 0][guard][slot 1] ... [slot 5][guard]
struct Memory {
  unsigned char* base;
  size_t total;
  Memory() {
    total = kPage + kSlots * (kSlotBytes + kPage);
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
    if (p == MAP_FAILED) std::abort();
    base = static_cast<unsigned char*>(p);
    for (int i = 0; i <= kSlots; ++i)
      if (mprotect(base + i * (kSlotBytes + kPage), kPage, PROT_NONE) != 0)
        std::abort();
  }
  unsigned char* begin(int s) const { return base + kPage + s * (kSlotBytes + kPage); }
  unsigned char* end(int s) const { return begin(s) + kSlotBytes; }
  // Which slot holds address p (or -1); a slot's end counts (an empty
  // tensor may sit right at the guard page).
  int slot_of(const void* p) const {
    for (int s = 0; s < kSlots; ++s)
      if (p >= begin(s) && p <= end(s)) return s;
    return -1;
  }
};

Memory& memory() {
  static Memory m;
  return m;
}

uint64_t splitmix(uint64_t& s) {
  uint64_t z = (s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t fuzz_dim(FuzzedDataProvider& fdp) {
  static const int64_t kOdd[] = {0,
                                 1,
                                 2,
                                 3,
                                 7,
                                 8,
                                 15,
                                 16,
                                 17,
                                 31,
                                 32,
                                 33,
                                 63,
                                 64,
                                 65,
                                 127,
                                 128,
                                 255,
                                 1023,
                                 1024,
                                 1025,
                                 4096,
                                 int64_t(1) << 31,
                                 (int64_t(1) << 31) - 1,
                                 (int64_t(1) << 32) + 1,
                                 int64_t(1) << 33,
                                 (int64_t(1) << 61) - 1,
                                 int64_t(1) << 61,
                                 int64_t(1) << 62,
                                 INT64_MAX,
                                 -1,
                                 -2,
                                 INT64_MIN};
  switch (fdp.ConsumeIntegralInRange(0, 7)) {
    case 0: return fdp.PickValueInArray(kOdd);
    case 1: return fdp.ConsumeIntegral<int64_t>();
    case 2: return fdp.ConsumeIntegralInRange<int64_t>(0, 64);
    default: return fdp.ConsumeIntegralInRange<int64_t>(0, 9);
  }
}

std::vector<int64_t> fuzz_shape(FuzzedDataProvider& fdp) {
  std::vector<int64_t> s(fdp.ConsumeIntegralInRange(0, 4));
  for (auto& d : s) d = fuzz_dim(fdp);
  return s;
}

int fuzz_dtype(FuzzedDataProvider& fdp) {
  const int v = fdp.ConsumeIntegralInRange(0, 7);
  return v < 3 ? v : v == 7 ? fdp.ConsumeIntegral<int>() : v % 3;
}

float special(uint64_t r) {
  static const float kSpecial[] = {0.0f,
                                   -0.0f,
                                   1.0f,
                                   -1.0f,
                                   0.5f,
                                   -0.75179f,
                                   -0.7517916f,
                                   3.0f,
                                   -3.0f,
                                   5.5f,
                                   -5.5f,
                                   10.0f,
                                   -10.0f,
                                   -13.5f,
                                   -20.0f,
                                   -40.0f,
                                   88.7f,
                                   -88.7f,
                                   1e-30f,
                                   -1e-30f,
                                   1e-40f,
                                   -1e-42f,
                                   1.17549435e-38f,
                                   65504.0f,
                                   65520.0f,
                                   -65520.0f,
                                   6e-8f,
                                   3.4028235e38f,
                                   -3.4028235e38f,
                                   1e20f,
                                   -1e20f,
                                   __builtin_inff(),
                                   -__builtin_inff(),
                                   __builtin_nanf(""),
                                   -__builtin_nanf("0x123")};
  return kSpecial[r % (sizeof kSpecial / sizeof kSpecial[0])];
}

void store_value(DType t, void* p, int64_t i, float f, uint64_t raw, bool use_raw) {
  if (!use_raw) return gelu::ref::store(t, p, i, f);
  unsigned char* b = static_cast<unsigned char*>(p);
  if (t == DType::f32) {
    const uint32_t u = uint32_t(raw);
    std::memcpy(b + 4 * i, &u, 4);
  } else {
    const uint16_t h = uint16_t(raw);
    std::memcpy(b + 2 * i, &h, 2);
  }
}

// Fills n elements of an input with values of a fuzzed kind.
void fill(FuzzedDataProvider& fdp, DType t, void* p, int64_t n) {
  const int mode = fdp.ConsumeIntegralInRange(0, 4);
  static const float kRange[] = {1.0f, 4.0f, 10.0f, 100.0f, 1e4f, 1e30f};
  const float range = fdp.PickValueInArray(kRange);
  uint64_t seed = fdp.ConsumeIntegral<uint64_t>();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = splitmix(seed);
    int m = mode == 4 ? int(r >> 61) % 4 : mode;
    if (m == 3) m = fdp.remaining_bytes() >= 4 ? 3 : 0;
    switch (m) {
      case 0: {  // uniform in [-range, range]
        const float u = float(int64_t(r >> 11)) * 0x1.0p-53f;
        store_value(t, p, i, (2 * u - 1) * range, 0, false);
        break;
      }
      case 1: store_value(t, p, i, 0, r, true); break;
      case 2: store_value(t, p, i, special(r), 0, false); break;
      case 3: store_value(t, p, i, 0, fdp.ConsumeIntegral<uint32_t>(), true);
    }
  }
}

[[noreturn]] void finding(const char* what, Op op, const std::vector<Arg>& a,
                          int threads, int approx, const std::string& detail) {
  std::fprintf(stderr, "FINDING: %s: %s (approx %d, threads %d)\n", what,
               op_model(op).name, approx, threads);
  for (size_t i = 0; i < a.size(); ++i) {
    std::fprintf(stderr, "  %s[%zu]: dtype %d slot %d data %p shape [",
                 op_model(op).roles[i].output ? "out" : "in", i, a[i].dtype,
                 memory().slot_of(a[i].data), a[i].data);
    for (int64_t d : a[i].shape) std::fprintf(stderr, "%lld ", (long long)d);
    std::fprintf(stderr, "]\n");
  }
  std::fprintf(stderr, "  %s\n", detail.c_str());
  std::abort();
}

[[noreturn]] void helper_finding(const char* what, const std::string& arg) {
  std::fprintf(stderr, "FINDING: %s (argument '%s')\n", what, arg.c_str());
  std::abort();
}

std::string shape_text(const std::vector<int64_t>& s) {
  std::string t;
  for (int64_t d : s) t += std::to_string(d) + " ";
  return t;
}

void check_helpers(FuzzedDataProvider& fdp) {
  const int raw = fdp.ConsumeIntegral<int>();
  if (!gelu::dtype_name(static_cast<DType>(raw)) ||
      !gelu::approx_name(static_cast<gelu::Approx>(raw)))
    std::abort();
  const std::string s = fdp.ConsumeRandomLengthString(10);
  static const char* kDtypes[] = {"f32",      "float32", "bf16",
                                  "bfloat16", "f16",     "float16"};
  static const char* kForms[] = {"none", "tanh", "quick"};
  bool known = false;
  for (int i = 0; i < 6; ++i) known |= s == kDtypes[i];
  try {
    const DType t = gelu::parse_dtype(s);
    if (!known || gelu::parse_dtype(gelu::dtype_name(t)) != t)
      helper_finding("parse_dtype accepted an unknown name", s);
    if (gelu::dtype_size(t) != (t == DType::f32 ? 4u : 2u))
      helper_finding("dtype_size", s);
  } catch (const gelu::Error&) {
    if (known) helper_finding("parse_dtype rejected a dtype name", s);
  }
  known = false;
  for (int i = 0; i < 3; ++i) known |= s == kForms[i];
  try {
    const gelu::Approx a = gelu::parse_approx(s);
    if (!known || gelu::approx_name(a) != s)
      helper_finding("parse_approx accepted an unknown name", s);
  } catch (const gelu::Error&) {
    if (known) helper_finding("parse_approx rejected a form name", s);
  }
  // numel: throws on a negative dimension or an int64 overflow.
  const std::vector<int64_t> shape = fuzz_shape(fdp);
  bool neg = false, zero = false;
  for (int64_t d : shape) neg |= d < 0, zero |= d == 0;
  __int128 n = 1;
  bool over = false;
  for (int64_t d : shape)
    if (!zero && !neg && (n *= d) > INT64_MAX) over = true, n = 1;
  try {
    const int64_t got = gelu::numel(shape);
    if (neg || over)
      helper_finding("numel accepted a negative or overflowing shape",
                     shape_text(shape));
    if (got != (zero ? 0 : int64_t(n)))
      helper_finding("numel miscounted", shape_text(shape));
  } catch (const gelu::Error&) {
    if (!neg && !over)
      helper_finding("numel rejected a valid shape", shape_text(shape));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Memory& mem = memory();
  static const bool once = [] {
    if (gelu::simd_target().empty() || gelu::default_num_threads() < 1) std::abort();
    return true;
  }();
  (void)once;
  FuzzedDataProvider fdp(data, size);
  check_helpers(fdp);

  const Op op = static_cast<Op>(fdp.ConsumeIntegralInRange(0, kNumOps - 1));
  const OpModel& m = op_model(op);
  const int p = primary_of(m);
  int approx = fdp.ConsumeIntegralInRange(0, 3);
  if (approx == 3) approx = fdp.ConsumeIntegral<int>();
  int threads = fdp.ConsumeIntegralInRange(0, 4);
  if (threads == 4) threads = fdp.ConsumeIntegral<int>();

  // Shapes and dtypes: mostly following the primary's (a valid call), some
  // fuzzed independently (mismatches, invalid values).
  std::vector<Arg> args(m.n);
  args[p].shape = fuzz_shape(fdp);
  args[p].dtype = fuzz_dtype(fdp);
  for (int i = 0; i < m.n; ++i) {
    if (i == p) continue;
    const bool rankless = args[p].shape.empty() && m.roles[i].shape != Shape::same;
    args[i].shape = fdp.ConsumeIntegralInRange(0, 15) == 0 || rankless
                        ? fuzz_shape(fdp)
                        : expected_shape(m.roles[i].shape, args[p].shape);
    const int d = fdp.ConsumeIntegralInRange(0, 15);
    args[i].dtype = d == 0                             ? fuzz_dtype(fdp)
                    : d == 1 && m.roles[i].f32_allowed ? 0
                                                       : args[p].dtype;
  }
  // An optional output is left out (TensorRef{}) in about half the calls.
  std::vector<char> leave_out(m.n, 0);
  for (int i = 0; i < m.n; ++i)
    if (m.roles[i].optional && fdp.ConsumeBool()) {
      leave_out[i] = 1;
      args[i].shape.clear();
    }

  // Placement. `room` is the bytes available from data to its slot's end.
  for (int s = 0; s < kSlots; ++s) std::memset(mem.begin(s), 0xA5, kSlotBytes);
  std::vector<int64_t> bytes(m.n, -1);
  std::vector<char> fits(m.n, 1);
  bool backed = true;
  for (int i = 0; i < m.n; ++i) {
    const auto n = model_numel(args[i].shape);
    const int64_t es = args[i].dtype == 0 ? 4 : 2;
    if (n && valid_dtype(args[i].dtype) && *n <= int64_t(kSlotBytes) / es)
      bytes[i] = *n * es;
    const size_t elem = bytes[i] >= 0 ? size_t(es) : 4;
    const size_t b = bytes[i] >= 0 ? size_t(bytes[i]) : kSlotBytes;
    unsigned char* at = mem.end(i) - b;  // own slot, ending at the guard page
    switch (fdp.ConsumeIntegralInRange(0, 9)) {
      case 0: at = nullptr; break;
      case 1:  // in place: the very same buffer as an earlier tensor
        if (i > 0)
          at = static_cast<unsigned char*>(
              args[fdp.ConsumeIntegralInRange(0, i - 1)].data);
        break;
      case 2:  // an earlier tensor's buffer shifted: a partial overlap
        if (i > 0) {
          auto* q = static_cast<unsigned char*>(
              args[fdp.ConsumeIntegralInRange(0, i - 1)].data);
          if (q) at = q + ptrdiff_t(elem) * fdp.ConsumeIntegralInRange(-8, 8);
        }
        break;
      case 3:  // carved from the shared arena
        at = mem.begin(kArena) +
             elem * fdp.ConsumeIntegralInRange<size_t>(0, kSlotBytes / elem - 1);
        break;
      case 4:  // own slot, not at its end
        at = mem.begin(i) +
             elem * fdp.ConsumeIntegralInRange<size_t>(0, (kSlotBytes - b) / elem);
        break;
      default: break;
    }
    if (leave_out[i]) at = nullptr;
    const int s = at ? mem.slot_of(at) : -1;
    if (at && s < 0) at = mem.end(i) - b;  // shifted out of its slot
    args[i].data = at;
    fits[i] = !at || (bytes[i] >= 0 && at + bytes[i] <= mem.end(mem.slot_of(at)));
    backed &= fits[i];
  }
  for (int i = 0; i < m.n; ++i)
    if (!m.roles[i].output && args[i].data && bytes[i] > 0 && fits[i])
      fill(fdp, static_cast<DType>(args[i].dtype), args[i].data,
           bytes[i] / (args[i].dtype == 0 ? 4 : 2));

  const bool accept = model_accepts(op, args, threads, approx);
  if (accept && !backed) return 0;  // valid, but larger than our buffers
  // A wrongly accepted call with a short buffer should fault at the guard
  // page, not run off into other memory on a second thread.
  if (!backed && threads > 1) threads = 1;

  static std::vector<unsigned char> snap(mem.total), after(mem.total);
  for (int s = 0; s < kSlots; ++s)
    std::memcpy(&snap[mem.begin(s) - mem.base], mem.begin(s), kSlotBytes);

  const gelu::Options o{static_cast<gelu::Approx>(approx), threads};
  auto in = [&](int i) {
    return ConstTensorRef{args[i].data, static_cast<DType>(args[i].dtype),
                          args[i].shape};
  };
  auto out = [&](int i) {
    return TensorRef{args[i].data, static_cast<DType>(args[i].dtype), args[i].shape};
  };
  std::string error;
  bool threw = false;
  try {
    switch (op) {
      case Op::gelu: gelu::gelu(in(0), out(1), o); break;
      case Op::gelu_backward:
        gelu::gelu_backward(in(0), in(1), out(2), out(3), o);
        break;
      case Op::bias_gelu: gelu::bias_gelu(in(0), in(1), out(2), o); break;
      case Op::bias_gelu_backward:
        gelu::bias_gelu_backward(in(0), in(1), in(2), out(3), out(4), out(5), o);
        break;
      case Op::add_gelu: gelu::add_gelu(in(0), in(1), out(2), o); break;
      case Op::add_gelu_backward:
        gelu::add_gelu_backward(in(0), in(1), in(2), out(3), o);
        break;
      case Op::geglu: gelu::geglu(in(0), out(1), o); break;
      case Op::geglu_backward:
        gelu::geglu_backward(in(0), in(1), out(2), out(3), o);
        break;
    }
  } catch (const gelu::Error& e) {
    threw = true;
    error = e.what();
  } catch (const std::exception& e) {
    finding("threw something other than gelu::Error", op, args, threads, approx,
            e.what());
  }

  for (int s = 0; s < kSlots; ++s)
    std::memcpy(&after[mem.begin(s) - mem.base], mem.begin(s), kSlotBytes);
  if (threw) {
    if (accept) finding("rejected a valid call", op, args, threads, approx, error);
    if (error.rfind(m.name, 0) != 0)
      finding("error does not name the op", op, args, threads, approx, error);
    if (after != snap)
      finding("wrote memory before throwing", op, args, threads, approx, error);
    return 0;
  }
  if (!accept) finding("accepted an invalid call", op, args, threads, approx, "");
  // Nothing outside the outputs may change.
  for (int i = 0; i < m.n; ++i)
    if (m.roles[i].output && args[i].data && bytes[i] > 0) {
      const size_t off = static_cast<unsigned char*>(args[i].data) - mem.base;
      std::memcpy(&after[off], &snap[off], size_t(bytes[i]));
    }
  if (after != snap)
    finding("wrote outside its outputs", op, args, threads, approx, "");
  // Inputs as they were before the call (an in-place output overwrote its
  // input), outputs as the call left them.
  std::vector<const void*> before(m.n);
  for (int i = 0; i < m.n; ++i)
    before[i] = args[i].data
                    ? &snap[static_cast<unsigned char*>(args[i].data) - mem.base]
                    : nullptr;
  std::string why;
  if (!check_values(op, args, before, static_cast<gelu::Approx>(approx), why))
    finding("result outside the accuracy contract", op, args, threads, approx, why);
  return 0;
}
