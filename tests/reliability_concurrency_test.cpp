// Concurrent callers: many std::threads call every op at once, on
// shared read-only inputs and their own outputs, with num_threads 0, 1, 2 and
// 3 (so OpenMP teams start inside concurrent calls), in place too. Every
// result must be bit-identical to a serial single-threaded run. Run under
// ThreadSanitizer by `make test-tsan` (scripts/sanitize.sh tsan).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "gelu/gelu.hpp"
#include "ref/elements.hpp"

namespace {

using gelu::Approx;
using gelu::DType;

// 256 x 520 = 133120 elements: above two threads' worth of work in the
// plan (64 Ki elements per thread), so num_threads = 2 really splits it.
constexpr int64_t kRows = 256, kCols = 520, kN = kRows * kCols;

enum Op {
  kGelu,
  kGeluBwd,
  kBias,
  kBiasBwd,
  kAdd,
  kAddBwd,
  kGeglu,
  kGegluBwd,
  kGeluInPlace,
  kNumOps
};

struct Config {
  DType dtype;
  Approx form;
  DType dbias;
};

using Bytes = std::vector<unsigned char>;

// Shared read-only inputs in one dtype; values cover both tails, the root of
// gelu' and the core.
struct Inputs {
  DType t;
  Bytes x, b, dy, bias;
  explicit Inputs(DType dtype) : t(dtype) {
    uint64_t s = 0x1234567 + static_cast<int>(dtype);
    auto next = [&] {
      s = s * 6364136223846793005ull + 1442695040888963407ull;
      return float(int64_t(s >> 11) % 2000001 - 1000000) * 9e-6f;  // in [-9, 9]
    };
    x = make(kN, next);
    b = make(kN, next);
    dy = make(kN, next);
    bias = make(kCols, next);
  }
  template <class F>
  Bytes make(int64_t n, F&& next) const {
    const size_t es = gelu::dtype_size(t);
    Bytes out(n * es);
    for (int64_t i = 0; i < n; ++i) {
      gelu::ref::store(t, out.data(), i, next());
    }
    return out;
  }
};

struct Outputs {
  Bytes y, dbias;
};

// One call of `op`; returns its outputs.
Outputs run(const Inputs& in, const Config& c, Op op, int threads) {
  const DType t = c.dtype;
  const size_t es = gelu::dtype_size(t);
  const gelu::Options o{c.form, threads};
  const std::vector<int64_t> full{kRows, kCols}, half{kRows, kCols / 2}, row{kCols};
  Outputs out;
  out.y.assign(kN * es, 0xA5);
  auto cx = [&](const Bytes& b, const std::vector<int64_t>& s) {
    return gelu::ConstTensorRef{b.data(), t, s};
  };
  gelu::TensorRef y{out.y.data(), t, full};
  switch (op) {
    case kGelu: gelu::gelu(cx(in.x, full), y, o); break;
    case kGeluBwd: gelu::gelu_backward(cx(in.dy, full), cx(in.x, full), y, o); break;
    case kBias: gelu::bias_gelu(cx(in.x, full), cx(in.bias, row), y, o); break;
    case kBiasBwd: {
      out.dbias.assign(kCols * gelu::dtype_size(c.dbias), 0xA5);
      gelu::bias_gelu_backward(cx(in.dy, full), cx(in.x, full), cx(in.bias, row), y,
                               {out.dbias.data(), c.dbias, row}, o);
      break;
    }
    case kAdd: gelu::add_gelu(cx(in.x, full), cx(in.b, full), y, o); break;
    case kAddBwd:
      gelu::add_gelu_backward(cx(in.dy, full), cx(in.x, full), cx(in.b, full), y, o);
      break;
    case kGeglu:
      out.y.resize(kN / 2 * es);
      gelu::geglu(cx(in.x, full), {out.y.data(), t, half}, o);
      break;
    case kGegluBwd: gelu::geglu_backward(cx(in.dy, half), cx(in.x, full), y, o); break;
    case kGeluInPlace:
      out.y = in.x;
      gelu::gelu(gelu::ConstTensorRef{out.y.data(), t, full},
                 gelu::TensorRef{out.y.data(), t, full}, o);
      break;
    default: break;
  }
  return out;
}

const Config kConfigs[] = {
    {DType::f32, Approx::none, DType::f32},
    {DType::bf16, Approx::tanh, DType::f32},
    {DType::f16, Approx::quick, DType::f16},
};

TEST(ReliabilityConcurrency, ManyCallersBitIdenticalToSerial) {
  std::vector<Inputs> inputs;
  std::vector<std::vector<Outputs>> serial;
  for (const Config& c : kConfigs) {
    inputs.emplace_back(c.dtype);
    serial.emplace_back();
    for (int op = 0; op < kNumOps; ++op)
      serial.back().push_back(run(inputs.back(), c, Op(op), 1));
  }

  // Each caller walks every (config, op) pair from its own starting point,
  // so different ops overlap in time; thread counts rotate through 0..3.
  constexpr int kCallers = 6;
  const int pairs = int(std::size(kConfigs)) * kNumOps;
  std::atomic<int> mismatches{0};
  std::vector<std::string> first(kCallers);
  std::vector<std::thread> callers;
  for (int k = 0; k < kCallers; ++k) {
    callers.emplace_back([&, k] {
      for (int step = 0; step < pairs; ++step) {
        const int pair = (step + k * 5) % pairs;
        const int ci = pair / kNumOps, op = pair % kNumOps;
        const int threads = (step + k) % 4;
        const Outputs got = run(inputs[ci], kConfigs[ci], Op(op), threads);
        const Outputs& want = serial[ci][op];
        if (got.y != want.y || got.dbias != want.dbias) {
          if (mismatches++ == 0 || first[k].empty())
            first[k] = "config " + std::to_string(ci) + " op " + std::to_string(op) +
                       " threads " + std::to_string(threads);
        }
      }
    });
  }
  for (auto& t : callers) t.join();
  std::string where;
  for (const auto& s : first)
    if (!s.empty()) where += s + "; ";
  EXPECT_EQ(mismatches.load(), 0) << "results differ from the serial run: " << where;
}

// The outputs really depend on the inputs (a test that cannot fail is no
// test): a changed input element changes the serial result.
TEST(ReliabilityConcurrency, ComparisonIsSensitive) {
  Inputs in(DType::f32);
  const Outputs a = run(in, kConfigs[0], kGelu, 1);
  in.x[4 * 1000] ^= 0x40;  // flip a mantissa bit of element 1000
  const Outputs b = run(in, kConfigs[0], kGelu, 2);
  EXPECT_NE(a.y, b.y);
}

}  // namespace
