// output_digest: one line per kernel call, a digest of every output byte,
// for every compiled SIMD target this CPU runs, every form and dtype, on
// seeded inputs (N(0, 1), N(0, 3), the tail, special values). Two builds of
// the library that must agree bit for bit (a restructured build, a new
// kernel layout) print the same lines:
//
//   tools/fit/output_digest.sh OLD_BUILD_DIR NEW_BUILD_DIR
//
// It calls the kernels of src/cpu/kernels.hpp directly (the shared library
// exports them), so it also reaches the streamed stores, strided rows and the
// narrow paths without tensors too large for a test.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/cpu_features.hpp"
#include "cpu/kernels.hpp"
#include "hwy/targets.h"

namespace {

using gelu::Approx;
using gelu::DType;
namespace cpu = gelu::cpu;

uint64_t Fnv(const void* p, size_t bytes, uint64_t h = 1469598103934665603ull) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

// A buffer of n elements of dtype t (64-byte aligned plus `offset` elements,
// to reach the unaligned heads of streamed stores), from seeded values.
struct Buf {
  std::vector<unsigned char> bytes;
  size_t esize, offset;
  Buf(DType t, size_t n, size_t offset_elems)
      : bytes((n + offset_elems) * 4 + 128, 0xA5),
        esize(gelu::dtype_size(t)),
        offset(offset_elems) {}
  void* data() {
    auto a = reinterpret_cast<uintptr_t>(bytes.data());
    return reinterpret_cast<void*>(((a + 63) & ~uintptr_t{63}) + offset * esize);
  }
};

float Value(std::mt19937& g, size_t i) {
  static const float kSpecial[] = {0.0f,     -0.0f,
                                   INFINITY, -INFINITY,
                                   NAN,      1e-40f,
                                   -1e-40f,  3.875f,
                                   -3.875f,  -9.0f,
                                   1e4f,     -1e4f,
                                   65504.0f, std::numeric_limits<float>::max()};
  std::normal_distribution<float> n1(0.0f, 1.0f), n3(0.0f, 3.0f);
  std::uniform_real_distribution<float> tail(-14.0f, -4.0f);
  switch (i % 7) {
    case 0: return n3(g);
    case 1: return tail(g);
    case 2: return i % 29 == 2 ? kSpecial[(i / 29) % std::size(kSpecial)] : n1(g);
    default: return n1(g);
  }
}

void Fill(DType t, void* p, size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::vector<float> f(n);
  for (size_t i = 0; i < n; ++i) f[i] = Value(g, i);
  cpu::from_f32(t, static_cast<int64_t>(n), f.data(), p);
}

struct Run {
  std::string prefix;
  void Print(const std::string& what,
             std::initializer_list<std::pair<void*, size_t>> outs) {
    uint64_t h = 1469598103934665603ull;
    for (const auto& [p, bytes] : outs) h = Fnv(p, bytes, h);
    std::printf("%s %s %016llx\n", prefix.c_str(), what.c_str(),
                static_cast<unsigned long long>(h));
  }
};

void Elementwise(Run& run, Approx a, DType t) {
  const size_t es = gelu::dtype_size(t);
  for (size_t n : {1, 7, 33, 257, 1031, 4099}) {
    for (int stream = 0; stream < 2; ++stream) {
      for (size_t off : {0, 1}) {
        Buf x(t, n, 0), b(t, n, 0), dy(t, n, 0), out(t, n, off), val(t, n, off);
        Fill(t, x.data(), n, 1);
        Fill(t, b.data(), n, 2);
        Fill(t, dy.data(), n, 3);
        const auto name = [&](const char* op) {
          return std::string(op) + " n=" + std::to_string(n) +
                 " stream=" + std::to_string(stream) + " off=" + std::to_string(off);
        };
        const auto n64 = static_cast<int64_t>(n);
        cpu::gelu_fwd(a, t, n64, x.data(), out.data(), stream);
        run.Print(name("gelu_fwd"), {{out.data(), n * es}});
        cpu::gelu_bwd(a, t, n64, dy.data(), x.data(), out.data(), nullptr, stream);
        run.Print(name("gelu_bwd"), {{out.data(), n * es}});
        cpu::gelu_bwd(a, t, n64, dy.data(), x.data(), out.data(), val.data(), stream);
        run.Print(name("gelu_bwd_y"), {{out.data(), n * es}, {val.data(), n * es}});
        cpu::add_fwd(a, t, n64, x.data(), b.data(), out.data(), stream);
        run.Print(name("add_fwd"), {{out.data(), n * es}});
        cpu::add_bwd(a, t, n64, dy.data(), x.data(), b.data(), out.data(), stream);
        run.Print(name("add_bwd"), {{out.data(), n * es}});
      }
    }
  }
}

void Rows(Run& run, Approx a, DType t) {
  const size_t es = gelu::dtype_size(t);
  struct Shape {
    int64_t rows, cols, stride;
  };
  for (const Shape s :
       {Shape{5, 1, 1}, Shape{7, 3, 3}, Shape{9, 17, 17}, Shape{33, 63, 63},
        Shape{4, 64, 64}, Shape{3, 1025, 1025}, Shape{5, 100, 130},
        Shape{2, 2000, 2000}, Shape{1, 31, 31}, Shape{0, 8, 8}}) {
    const size_t n = static_cast<size_t>(s.rows * s.stride), c = s.cols;
    for (int stream = 0; stream < 2; ++stream) {
      Buf x(t, n, 0), dy(t, n, 0), bias(t, c, 0), out(t, n, 0), val(t, n, 0);
      Fill(t, x.data(), n, 4);
      Fill(t, dy.data(), n, 5);
      Fill(t, bias.data(), c, 6);
      std::vector<double> dbias(c, -1.0);
      const auto name = [&](const char* op) {
        return std::string(op) + " " + std::to_string(s.rows) + "x" +
               std::to_string(s.cols) + "/" + std::to_string(s.stride) +
               " stream=" + std::to_string(stream);
      };
      cpu::bias_fwd(a, t, s.rows, s.cols, s.stride, x.data(), bias.data(), out.data(),
                    stream);
      run.Print(name("bias_fwd"), {{out.data(), n * es}});
      cpu::bias_bwd(a, t, s.rows, s.cols, s.stride, dy.data(), x.data(), bias.data(),
                    out.data(), dbias.data(), nullptr, stream);
      run.Print(name("bias_bwd"), {{out.data(), n * es}, {dbias.data(), c * 8}});
      cpu::bias_bwd(a, t, s.rows, s.cols, s.stride, dy.data(), x.data(), bias.data(),
                    out.data(), dbias.data(), val.data(), stream);
      run.Print(name("bias_bwd_y"),
                {{out.data(), n * es}, {dbias.data(), c * 8}, {val.data(), n * es}});
    }
  }
  for (int64_t h : {1, 2, 4, 7, 16, 32, 48, 63, 64, 100, 1031}) {
    for (int64_t rows : {1, 3, 37}) {
      const size_t nx = static_cast<size_t>(rows * 2 * h), ny = nx / 2;
      for (int second = 0; second < 2; ++second) {
        for (int stream = 0; stream < 2; ++stream) {
          Buf x(t, nx, 0), dy(t, ny, 0), dx(t, nx, 0), y(t, ny, 0);
          Fill(t, x.data(), nx, 7);
          Fill(t, dy.data(), ny, 8);
          const auto name = [&](const char* op) {
            return std::string(op) + " rows=" + std::to_string(rows) +
                   " h=" + std::to_string(h) + " second=" + std::to_string(second) +
                   " stream=" + std::to_string(stream);
          };
          // Columns [0, h) of every row, and a partial range for wide rows.
          for (int64_t cols : {h, h > 8 ? h / 2 + 1 : h}) {
            const auto x2 = static_cast<unsigned char*>(x.data());
            cpu::geglu_fwd(a, t, rows, cols, h, x2, y.data(), second, stream);
            run.Print(name("geglu_fwd") + " cols=" + std::to_string(cols),
                      {{y.data(), ny * es}});
            cpu::geglu_bwd(a, t, rows, cols, h, dy.data(), x2, dx.data(), second,
                           nullptr, stream);
            run.Print(name("geglu_bwd") + " cols=" + std::to_string(cols),
                      {{dx.data(), nx * es}});
            cpu::geglu_bwd(a, t, rows, cols, h, dy.data(), x2, dx.data(), second,
                           y.data(), stream);
            run.Print(name("geglu_bwd_y") + " cols=" + std::to_string(cols),
                      {{dx.data(), nx * es}, {y.data(), ny * es}});
          }
        }
      }
    }
  }
}

void Conversions(Run& run, DType t) {
  const size_t n = 1031, es = gelu::dtype_size(t);
  Buf in(t, n, 0), out(t, n, 0);
  Fill(t, in.data(), n, 9);
  std::vector<float> f(n);
  cpu::to_f32(t, static_cast<int64_t>(n), in.data(), f.data());
  run.Print("to_f32", {{f.data(), n * 4}});
  cpu::from_f32(t, static_cast<int64_t>(n), f.data(), out.data());
  run.Print("from_f32", {{out.data(), n * es}});
  std::vector<double> sums(3 * n);
  for (size_t i = 0; i < sums.size(); ++i) sums[i] = f[i % n] * (1.0 + 1e-9 * i);
  cpu::sums_to(t, static_cast<int64_t>(n), 3, sums.data(), out.data());
  run.Print("sums_to", {{out.data(), n * es}});
}

}  // namespace

int main() {
  const int64_t targets = cpu::compiled_targets() & hwy::SupportedTargets();
  for (int64_t bit = 1; bit != 0 && bit <= targets; bit <<= 1) {
    if ((targets & bit) == 0) continue;
    for (int bf16_insn = 1; bf16_insn >= 0; --bf16_insn) {
      hwy::SetSupportedTargetsForTest(bit);
      cpu::g_allow_avx512_bf16.store(bf16_insn != 0);
      const std::string target = std::string(hwy::TargetName(bit)) +
                                 (bf16_insn ? "" : "-no-avx512bf16");
      for (DType t : {DType::f32, DType::bf16, DType::f16}) {
        Run conv{target + " " + gelu::dtype_name(t)};
        Conversions(conv, t);
        for (Approx a : {Approx::none, Approx::tanh, Approx::quick}) {
          Run run{target + " " + gelu::dtype_name(t) + " " + gelu::approx_name(a)};
          Elementwise(run, a, t);
          Rows(run, a, t);
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  return 0;
}
