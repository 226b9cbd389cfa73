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
// narrow paths without tensors too large for a test. Then, on the best
// target, every public op (gelu.hpp) over shapes the op layer splits into
// several tasks, on 1 and 2 threads, out of place and in place: the
// offsets, the tasks and the dbias sums of the op layer.
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
#include "gelu/gelu.hpp"
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

// Every public op on `shape` ([..., cols]; geglu's x is [..., 2 * cols]).
void Ops(Run& run, Approx a, DType t, const std::vector<int64_t>& shape, int threads) {
  using gelu::TensorRef;
  const size_t es = gelu::dtype_size(t);
  int64_t n64 = 1;
  for (int64_t d : shape) n64 *= d;
  const size_t n = static_cast<size_t>(n64);
  const int64_t cols = shape.empty() ? 1 : shape.back();
  std::vector<int64_t> wide = shape;
  if (!wide.empty()) wide.back() *= 2;
  const std::vector<int64_t> bias_shape{cols};
  Buf x(t, 2 * n, 0), b(t, n, 0), dy(t, n, 0), out(t, 2 * n, 0), val(t, n, 0);
  Buf bias(t, static_cast<size_t>(cols), 0),
      dbias(DType::f32, static_cast<size_t>(cols), 0);
  const auto fill = [&] {
    Fill(t, x.data(), 2 * n, 11);
    Fill(t, b.data(), n, 12);
    Fill(t, dy.data(), n, 13);
    Fill(t, bias.data(), static_cast<size_t>(cols), 14);
  };
  std::string dims;
  for (int64_t d : shape) dims += (dims.empty() ? "" : "x") + std::to_string(d);
  const auto name = [&](const char* op) {
    return std::string(op) + " shape=" + dims + " threads=" + std::to_string(threads);
  };
  const auto T = [&](Buf& buf, const std::vector<int64_t>& s, DType d) {
    return TensorRef{buf.data(), d, s};
  };
  for (int second = 0; second < 2; ++second) {
    gelu::Options o{a, threads,
                    second ? gelu::GeluHalf::second : gelu::GeluHalf::first};
    gelu::Options plain{a, threads};
    fill();
    if (!second) {
      gelu::gelu(T(x, shape, t), T(out, shape, t), plain);
      run.Print(name("op gelu"), {{out.data(), n * es}});
      gelu::gelu_backward(T(dy, shape, t), T(x, shape, t), T(out, shape, t), plain);
      run.Print(name("op gelu_backward"), {{out.data(), n * es}});
      gelu::gelu_backward(T(dy, shape, t), T(x, shape, t), T(out, shape, t),
                          T(val, shape, t), plain);
      run.Print(name("op gelu_backward_y"),
                {{out.data(), n * es}, {val.data(), n * es}});
      gelu::add_gelu(T(x, shape, t), T(b, shape, t), T(out, shape, t), plain);
      run.Print(name("op add_gelu"), {{out.data(), n * es}});
      gelu::add_gelu_backward(T(dy, shape, t), T(x, shape, t), T(b, shape, t),
                              T(out, shape, t), plain);
      run.Print(name("op add_gelu_backward"), {{out.data(), n * es}});
      if (!shape.empty()) {
        gelu::bias_gelu(T(x, shape, t), T(bias, bias_shape, t), T(out, shape, t),
                        plain);
        run.Print(name("op bias_gelu"), {{out.data(), n * es}});
        for (DType dt : {t, DType::f32}) {
          gelu::bias_gelu_backward(T(dy, shape, t), T(x, shape, t),
                                   T(bias, bias_shape, t), T(out, shape, t),
                                   T(dbias, bias_shape, dt), plain);
          run.Print(name("op bias_gelu_backward") + " dbias=" + gelu::dtype_name(dt),
                    {{out.data(), n * es},
                     {dbias.data(), static_cast<size_t>(cols) * gelu::dtype_size(dt)}});
        }
        gelu::bias_gelu_backward(T(dy, shape, t), T(x, shape, t),
                                 T(bias, bias_shape, t), T(out, shape, t),
                                 T(dbias, bias_shape, t), T(val, shape, t), plain);
        run.Print(name("op bias_gelu_backward_y"),
                  {{out.data(), n * es},
                   {dbias.data(), static_cast<size_t>(cols) * es},
                   {val.data(), n * es}});
        // In place: y over x, dx over dy, dbias over bias.
        gelu::bias_gelu(T(x, shape, t), T(bias, bias_shape, t), T(x, shape, t), plain);
        run.Print(name("op bias_gelu in place"), {{x.data(), n * es}});
        fill();
        gelu::bias_gelu_backward(T(dy, shape, t), T(x, shape, t),
                                 T(bias, bias_shape, t), T(dy, shape, t),
                                 T(bias, bias_shape, t), plain);
        run.Print(name("op bias_gelu_backward in place"),
                  {{dy.data(), n * es}, {bias.data(), static_cast<size_t>(cols) * es}});
        fill();
      }
    }
    if (shape.empty()) continue;
    gelu::geglu(T(x, wide, t), T(out, shape, t), o);
    run.Print(name("op geglu") + " second=" + std::to_string(second),
              {{out.data(), n * es}});
    gelu::geglu_backward(T(dy, shape, t), T(x, wide, t), T(out, wide, t), o);
    run.Print(name("op geglu_backward") + " second=" + std::to_string(second),
              {{out.data(), 2 * n * es}});
    gelu::geglu_backward(T(dy, shape, t), T(x, wide, t), T(out, wide, t),
                         T(val, shape, t), o);
    run.Print(name("op geglu_backward_y") + " second=" + std::to_string(second),
              {{out.data(), 2 * n * es}, {val.data(), n * es}});
  }
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
        for (Approx a : gelu::kAllForms) {
          Run run{target + " " + gelu::dtype_name(t) + " " + gelu::approx_name(a)};
          Elementwise(run, a, t);
          Rows(run, a, t);
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  // The op layer, on the best target: shapes of one task and of many (rows
  // and columns split), empty ones, and 1 and 2 threads.
  const std::vector<std::vector<int64_t>> shapes = {
      {},         {0},        {7},         {3, 0},      {0, 5},     {1031},
      {37, 1031}, {4, 3, 65}, {300, 4099}, {3000, 130}, {2, 200003}};
  for (DType t : {DType::f32, DType::bf16, DType::f16})
    for (Approx a : gelu::kAllForms)
      for (const auto& shape : shapes)
        for (int threads : {1, 2}) {
          Run run{std::string("ops ") + gelu::dtype_name(t) + " " +
                  gelu::approx_name(a)};
          Ops(run, a, t, shape, threads);
        }
  return 0;
}
