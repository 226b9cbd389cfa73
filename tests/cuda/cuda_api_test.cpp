// The CUDA API's behaviour apart from accuracy:
//   - misuse throws the CPU API's gelu::Error, same text, before any GPU
//     work (runs without a GPU too);
//   - without a usable GPU a valid call throws gelu::Error saying so (runs
//     where there is none);
//   - in place equals out of place, dbias is bit-identical run to run and
//     on another stream, a too small workspace is refused, huge element
//     counts index right (GPU).
#include <gtest/gtest.h>

#include <cstring>
#include <functional>

#include "cuda_test_support.hpp"

namespace gelu::testing {
namespace {

using core::OpId;

// The message of what fn throws ("" when it throws nothing).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// Host memory stands in for device memory: validation never touches data.
TEST(CudaApi, MisuseThrowsTheCpuErrors) {
  Buffer x(DType::f32, {4, 6}), y(DType::f32, {4, 6}), wrong(DType::f32, {4, 7}),
      bf(DType::bf16, {4, 6}), bias(DType::f32, {6}), dbias(DType::f32, {6});
  const Options bad_threads{Approx::none, -1};
  const Options bad_half{Approx::none, 0, GeluHalf::second};
  struct Case {
    const char* what;
    std::function<void()> cpu, gpu;
  };
  const Case cases[] = {
      {"shape", [&] { gelu::gelu(x.cref(), wrong.ref()); },
       [&] { cuda::gelu(x.cref(), wrong.ref()); }},
      {"dtype", [&] { gelu::bias_gelu(x.cref(), bias.cref(), bf.ref()); },
       [&] { cuda::bias_gelu(x.cref(), bias.cref(), bf.ref()); }},
      {"threads", [&] { gelu::gelu(x.cref(), y.ref(), bad_threads); },
       [&] { cuda::gelu(x.cref(), y.ref(), bad_threads); }},
      {"gelu_half", [&] { gelu::add_gelu(x.cref(), x.cref(), y.ref(), bad_half); },
       [&] { cuda::add_gelu(x.cref(), x.cref(), y.ref(), bad_half); }},
      {"null",
       [&] {
         gelu::gelu(ConstTensorRef{nullptr, DType::f32, {4, 6}}, y.ref());
       },
       [&] {
         cuda::gelu(ConstTensorRef{nullptr, DType::f32, {4, 6}}, y.ref());
       }},
      {"overlap",
       [&] {
         gelu::gelu(x.cref(),
                    TensorRef{static_cast<char*>(x.data()) + 4, DType::f32, {4, 6}});
       },
       [&] {
         cuda::gelu(x.cref(),
                    TensorRef{static_cast<char*>(x.data()) + 4, DType::f32, {4, 6}});
       }},
      {"odd geglu", [&] { gelu::geglu(wrong.cref(), y.ref()); },
       [&] { cuda::geglu(wrong.cref(), y.ref()); }},
      {"dbias shape",
       [&] {
         gelu::bias_gelu_backward(x.cref(), x.cref(), bias.cref(), y.ref(),
                                  wrong.ref());
       },
       [&] {
         cuda::bias_gelu_backward(x.cref(), x.cref(), bias.cref(), y.ref(),
                                  wrong.ref());
       }},
  };
  for (const Case& c : cases) {
    const std::string cpu = error_of(c.cpu), gpu = error_of(c.gpu);
    EXPECT_FALSE(cpu.empty()) << c.what;
    EXPECT_EQ(gpu, cpu) << c.what;
  }
  // The workspace is checked before the device too.
  const std::string small = error_of([&] {
    cuda::bias_gelu_backward(x.cref(), x.cref(), bias.cref(), y.ref(), dbias.ref(), {},
                             nullptr, cuda::Workspace{dbias.data(), 8});
  });
  EXPECT_NE(small.find("workspace has 8 bytes, expected at least"), std::string::npos)
      << small;
}

TEST(CudaApi, WithoutAGpuAValidCallThrows) {
  if (gpu_present()) GTEST_SKIP() << "a CUDA device is present";
  for (const core::OpDecl& op : core::all_ops()) {
    // Valid views of host memory: the call gets past validation only.
    std::vector<Buffer> bufs;
    bufs.reserve(op.num_tensors);
    std::vector<TensorRef> refs;
    for (int i = 0; i < op.required_tensors(); ++i) {
      bufs.emplace_back(DType::f32, core::tensor_shape(op, i, {2, 4}));
      refs.push_back(bufs.back().ref());
    }
    const std::string msg = error_of([&] { cuda::call(op, refs, Options{}, nullptr); });
    EXPECT_EQ(msg.rfind(std::string(op.name) + ": no usable CUDA device (", 0), 0)
        << op.name << ": " << msg;
  }
  EXPECT_NE(std::string(cuda::architectures()), "");
}

TEST(CudaApi, InPlaceEqualsOutOfPlace) {
  GELU_NEED_GPU();
  for (DType t : kDTypes) {
    const std::vector<int64_t> s{300, 77};
    Buffer dy(t, s), x(t, s), bias(t, {77}), dx(t, s), db(t, {77});
    fill_inputs(dy, 31, 1.0f);
    fill_inputs(x, 32);
    fill_inputs(bias, 33, 1.0f);
    run_on_gpu(OpId::bias_gelu_backward, {&dy, &x, &bias, &dx, &db}, Options{});
    // dx = dy and dbias = bias, through one device buffer each.
    DeviceCopy ddy(dy), dxx(x), dbias(bias);
    cuda::bias_gelu_backward({ddy.data(), t, s}, {dxx.data(), t, s},
                             {dbias.data(), t, {77}}, {ddy.data(), t, s},
                             {dbias.data(), t, {77}});
    GELU_CUDA_OK(cudaDeviceSynchronize());
    Buffer got(t, s), gotb(t, {77});
    ddy.to(got);
    dbias.to(gotb);
    EXPECT_EQ(std::memcmp(got.data(), dx.data(), dx.size() * dtype_size(t)), 0)
        << dtype_name(t);
    EXPECT_EQ(std::memcmp(gotb.data(), db.data(), db.size() * dtype_size(t)), 0)
        << dtype_name(t);
  }
}

TEST(CudaApi, DbiasIsTheSameOnEveryRunAndStream) {
  GELU_NEED_GPU();
  const std::vector<int64_t> s{20000, 129};
  Buffer dy(DType::f32, s), x(DType::f32, s), bias(DType::f32, {129}),
      dx(DType::f32, s), first(DType::f32, {129});
  fill_inputs(dy, 41, 1.0f);
  fill_inputs(x, 42);
  fill_inputs(bias, 43, 1.0f);
  run_on_gpu(OpId::bias_gelu_backward, {&dy, &x, &bias, &dx, &first}, Options{});
  cudaStream_t stream;
  GELU_CUDA_OK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (int run = 0; run < 3; ++run) {
    Buffer again(DType::f32, {129});
    run_on_gpu(OpId::bias_gelu_backward, {&dy, &x, &bias, &dx, &again}, Options{},
               run == 0 ? nullptr : stream);
    EXPECT_EQ(std::memcmp(again.data(), first.data(), 129 * 4), 0) << "run " << run;
  }
  GELU_CUDA_OK(cudaStreamDestroy(stream));
}

// Past 2^31 elements: the last elements are computed and nothing beyond is
// touched (bf16, 2^31 + 3 elements: 4 GiB of device memory per tensor).
TEST(CudaApi, IndicesPast2To31) {
  GELU_NEED_GPU();
  const int64_t n = (int64_t{1} << 31) + 3;
  size_t free_bytes = 0, total = 0;
  GELU_CUDA_OK(cudaMemGetInfo(&free_bytes, &total));
  if (free_bytes < size_t(3) * n * 2) GTEST_SKIP() << "needs 12 GiB of device memory";
  uint16_t *x = nullptr, *y = nullptr;
  GELU_CUDA_OK(cudaMalloc(&x, n * 2));
  GELU_CUDA_OK(cudaMalloc(&y, n * 2 + 64));
  GELU_CUDA_OK(cudaMemset(x, 0x40, n * 2));       // every x = 0x4040 = 3.0 (bf16)
  GELU_CUDA_OK(cudaMemset(y, 0xff, n * 2 + 64));  // NaN poison and guard
  cuda::gelu({x, DType::bf16, {n}}, {y, DType::bf16, {n}});
  GELU_CUDA_OK(cudaDeviceSynchronize());
  uint16_t tail[4 + 32];
  GELU_CUDA_OK(cudaMemcpy(tail, y + n - 4, sizeof tail, cudaMemcpyDeviceToHost));
  const float want = ref::stored(DType::bf16, ref::gelu_fwd(Approx::none, 3.0));
  for (int i = 0; i < 4; ++i) EXPECT_EQ(bf16_to_f32(tail[i]), want) << i;
  for (int i = 4; i < 36; ++i) EXPECT_EQ(tail[i], 0xffff) << "guard " << i;
  cudaFree(x);
  cudaFree(y);
}

}  // namespace
}  // namespace gelu::testing
