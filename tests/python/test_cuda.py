"""The CUDA backend through PyTorch: every operator on CUDA tensors against
the float64 reference (conftest.py) under the library's contract, every
bf16/f16 bit pattern as the pre-activation, non-contiguous inputs, devices
mixed up, the current stream, CUDA graphs, autocast and deterministic mode.

Skipped without a GPU. Where torch.cuda.is_available() holds, an extension
built without the CUDA backend fails (test_built_with_cuda); with
GELU_REQUIRE_GPU=1 (`make gpu-check`) no GPU fails too, instead of skipping.
"""
import os

import pytest
import torch

from conftest import (DTYPES, FORMS, assert_close, bound_ulps, grad_terms_abs,
                      inputs, ref_gelu, ulp)

ops = torch.ops.gelu_fusion
HAS_GPU = torch.cuda.is_available()
REQUIRED = os.environ.get("GELU_REQUIRE_GPU", "0") not in ("", "0")
BUILT = "cuda" in ops._devices()


def test_built_with_cuda():
    if REQUIRED:
        assert HAS_GPU, "GELU_REQUIRE_GPU is set and torch sees no CUDA device"
    if HAS_GPU:
        assert BUILT, ("a CUDA device is present but this build of gelu_fusion has no "
                       f"CUDA kernels (devices: {ops._devices()}); configure with nvcc "
                       "(GELU_WITH_CUDA)")
    else:
        pytest.skip("no CUDA device")


gpu = pytest.mark.skipif(not (HAS_GPU and BUILT) and not REQUIRED,
                         reason="no CUDA device (or no CUDA backend)")
SHAPES = ((), (0,), (1,), (7,), (3, 0), (13, 17), (1, 1031), (257, 3), (5, 2, 9),
          (9000, 33))


def cuda(t):
    return t.to("cuda")


def fwd_exact(z, form):
    return ref_gelu(z, form)


def bwd_exact(z, dy, form):
    zz = z.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(ref_gelu(zz, form).sum(), zz)
    return dy * g, dy.abs() * grad_terms_abs(z, form)


@gpu
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_every_op(form, dtype, shape):
    x = inputs(shape, dtype, seed=1)
    dy = inputs(shape, dtype, scale=1.0, seed=2)
    b = inputs(shape, dtype, scale=1.0, seed=3)
    bound = bound_ulps(dtype)
    z = x.double()
    assert_close(ops.gelu(cuda(x), form).cpu(), fwd_exact(z, form), fwd_exact(z, form),
                 dtype, bound, "gelu")
    ex, sc = bwd_exact(z, dy.double(), form)
    assert_close(ops.gelu_backward(cuda(dy), cuda(x), form).cpu(), ex, sc, dtype, bound,
                 "gelu_backward", factor=dy.double())
    pre = (x.float() + b.float()).double()  # fl32(a + b)
    assert_close(ops.add_gelu(cuda(x), cuda(b), form).cpu(), fwd_exact(pre, form),
                 fwd_exact(pre, form), dtype, bound, "add_gelu")
    if len(shape) == 0:
        return
    bias = inputs(shape[-1:], dtype, scale=1.0, seed=4)
    pre = (x.float() + bias.float()).double()
    assert_close(ops.bias_gelu(cuda(x), cuda(bias), form).cpu(), fwd_exact(pre, form),
                 fwd_exact(pre, form), dtype, bound, "bias_gelu")
    dx, dbias = ops.bias_gelu_backward(cuda(dy), cuda(x), cuda(bias), form)
    ex, sc = bwd_exact(pre, dy.double(), form)
    assert_close(dx.cpu(), ex, sc, dtype, bound, "bias_gelu_backward",
                 factor=dy.double())
    want = ex.reshape(-1, shape[-1]).sum(0)
    tol = ex.abs().reshape(-1, shape[-1]).sum(0) * 2.0 ** -20 + \
        0.5 * ulp(dtype, want) + 1e-30
    assert bool(((dbias.cpu().double() - want).abs() <= tol).all()), "dbias"


@gpu
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("dtype", (torch.bfloat16, torch.float16))
def test_every_pattern(form, dtype):
    x = torch.arange(-32768, 32768, dtype=torch.int32).to(torch.int16).view(dtype)
    y = ops.gelu(cuda(x), form).cpu()
    z = x.double()
    assert_close(y, fwd_exact(z, form), fwd_exact(z, form), dtype, 1.0, "gelu")
    dy = inputs(x.shape, dtype, scale=1.0, seed=5)
    ex, sc = bwd_exact(z, dy.double(), form)
    dx = ops.gelu_backward(cuda(dy), cuda(x), form).cpu()
    assert_close(dx, ex, sc, dtype, 1.0, "gelu_backward", factor=dy.double())


@gpu
def test_geglu_both_halves():
    for half in ("first", "second"):
        x = inputs((33, 2 * 45), torch.float32, seed=6)
        a, g = x.double().chunk(2, -1)
        if half == "second":
            a, g = g, a
        y = ops.geglu(cuda(x), "none", half).cpu()
        assert_close(y, fwd_exact(a, "none") * g, fwd_exact(a, "none") * g,
                     torch.float32, 2.5, "geglu " + half, factor=g)
        dy = inputs((33, 45), torch.float32, scale=1.0, seed=7)
        dx = ops.geglu_backward(cuda(dy), cuda(x), "none", half).cpu()
        cpu = ops.geglu_backward(dy, x, "none", half)
        assert dx.shape == cpu.shape
        assert bool(torch.isfinite(dx).all())


@gpu
def test_strides_and_layouts_as_on_the_cpu():
    x = inputs((64, 48), torch.float32, seed=8)
    for view in (x.t(), x[:, ::3], x.unsqueeze(0).expand(2, 64, 48)):
        got = ops.gelu(cuda(view), "tanh")
        want = ops.gelu(view, "tanh")
        assert got.stride() == want.stride()
        assert torch.equal(got.cpu(), want) or bool(
            ((got.cpu() - want).abs() <= 4 * want.abs() * 2.0 ** -23 + 1e-44).all())


@gpu
def test_devices_mixed_up_is_an_error():
    with pytest.raises(RuntimeError, match=r"bias is on cpu, expected a CUDA tensor|"
                       r"bias is on cpu, expected cuda"):
        ops.bias_gelu(torch.zeros(2, 3, device="cuda"), torch.zeros(3))
    if torch.cuda.device_count() > 1:
        with pytest.raises(RuntimeError, match=r"bias is on cuda:1, expected cuda:0"):
            ops.bias_gelu(torch.zeros(2, 3, device="cuda:0"),
                          torch.zeros(3, device="cuda:1"))


@gpu
def test_current_stream_graph_and_no_sync():
    x = cuda(inputs((1024, 257), torch.bfloat16, seed=9))
    b = cuda(inputs((257,), torch.bfloat16, scale=1.0, seed=10))
    want = ops.bias_gelu(x, b, "none")
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        got = ops.bias_gelu(x, b, "none")
    s.synchronize()
    assert torch.equal(got, want)
    # A CUDA graph replays the op (capture fails on any host sync).
    dy = torch.ones_like(x)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, dbias = ops.bias_gelu_backward(dy, x, b, "none")
    g.replay()
    torch.cuda.synchronize()
    ref_dx, ref_db = ops.bias_gelu_backward(dy, x, b, "none")
    assert torch.equal(out, ref_dx) and torch.equal(dbias, ref_db)


@gpu
def test_deterministic_and_autocast():
    torch.use_deterministic_algorithms(True)
    try:
        x = cuda(inputs((5000, 77), torch.float32, seed=11))
        b = cuda(inputs((77,), torch.float32, scale=1.0, seed=12))
        dy = torch.ones_like(x)
        runs = [ops.bias_gelu_backward(dy, x, b, "none")[1] for _ in range(3)]
        assert all(torch.equal(r, runs[0]) for r in runs)
    finally:
        torch.use_deterministic_algorithms(False)
    lin = torch.nn.Linear(64, 64).cuda()
    with torch.autocast("cuda", dtype=torch.bfloat16):
        h = lin(torch.randn(8, 64, device="cuda"))
        y = ops.gelu(h, "none")
    assert y.dtype == h.dtype and y.device.type == "cuda"


@gpu
def test_autograd_on_cuda():
    import gelu_fusion
    x = cuda(inputs((16, 24), torch.float32, seed=13)).requires_grad_(True)
    b = cuda(inputs((24,), torch.float32, scale=1.0, seed=14)).requires_grad_(True)
    gelu_fusion.bias_gelu(x, b).sum().backward()
    xc = x.detach().cpu().requires_grad_(True)
    bc = b.detach().cpu().requires_grad_(True)
    gelu_fusion.bias_gelu(xc, bc).sum().backward()
    assert torch.allclose(x.grad.cpu(), xc.grad, rtol=1e-6, atol=1e-30)
    assert torch.allclose(b.grad.cpu(), bc.grad, rtol=1e-5, atol=1e-6)
