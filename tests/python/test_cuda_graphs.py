"""The CUDA backend inside CUDA graphs (gpu-check's graphs stage): every op
of torch.ops.gelu_fusion captured per dtype, the graph replayed on new
inputs copied into its tensors, and each replay equal, bit for bit, to the
same op run eagerly; and a module's forward and backward through
torch.cuda.make_graphed_callables. Capture fails on any host
synchronisation or allocation outside the graph's pool, so this also checks
that nothing in the op layer synchronises.

Skipped without a GPU, as test_cuda.py (GELU_REQUIRE_GPU=1: fails instead).
"""
import os

import pytest
import torch

from conftest import DTYPES, inputs

ops = torch.ops.gelu_fusion
HAS_GPU = torch.cuda.is_available()
REQUIRED = os.environ.get("GELU_REQUIRE_GPU", "0") not in ("", "0")
BUILT = "cuda" in ops._devices()
gpu = pytest.mark.skipif(not (HAS_GPU and BUILT) and not REQUIRED,
                         reason="no CUDA device (or no CUDA backend)")

ROWS, COLS = 300, 129


def _args(dtype, seed):
    x = inputs((ROWS, COLS), dtype, seed=seed)
    return {
        "x": x,
        "dy": inputs((ROWS, COLS), dtype, scale=1.0, seed=seed + 1),
        "r": inputs((ROWS, COLS), dtype, scale=1.0, seed=seed + 2),
        "b": inputs((COLS,), dtype, scale=1.0, seed=seed + 3),
        "xg": inputs((ROWS, 2 * COLS), dtype, seed=seed + 4),
        "dyg": inputs((ROWS, COLS), dtype, scale=1.0, seed=seed + 5),
    }


CALLS = {
    "gelu": lambda a, f: (ops.gelu(a["x"], f),),
    "gelu_backward": lambda a, f: (ops.gelu_backward(a["dy"], a["x"], f),),
    "add_gelu": lambda a, f: (ops.add_gelu(a["x"], a["r"], f),),
    "bias_gelu": lambda a, f: (ops.bias_gelu(a["x"], a["b"], f),),
    "bias_gelu_backward": lambda a, f: tuple(
        ops.bias_gelu_backward(a["dy"], a["x"], a["b"], f)),
    "geglu": lambda a, f: (ops.geglu(a["xg"], f, "first"),),
    "geglu_backward": lambda a, f: (ops.geglu_backward(a["dyg"], a["xg"], f, "second"),),
}


@gpu
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", sorted(CALLS))
def test_every_op_replays_as_eager(op, dtype):
    form = "tanh" if dtype == torch.float16 else "none"
    static = {k: v.cuda() for k, v in _args(dtype, 1).items()}
    # Warm up on a side stream, as torch.cuda.graph's documentation asks.
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        CALLS[op](static, form)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        outs = CALLS[op](static, form)
    for seed in (1, 20, 40):
        for k, v in _args(dtype, seed).items():
            static[k].copy_(v)
        g.replay()
        torch.cuda.synchronize()
        want = CALLS[op]({k: v.clone() for k, v in static.items()}, form)
        for got, w in zip(outs, want):
            assert got.dtype == w.dtype and got.shape == w.shape
            assert torch.equal(got, w), f"{op} {dtype}: replay {seed} differs from eager"


@gpu
def test_module_forward_and_backward_graphed():
    import gelu_fusion
    torch.manual_seed(0)
    lin = gelu_fusion.LinearBiasGELU(64, 96).cuda()
    x = torch.randn(32, 64, device="cuda", requires_grad=True)
    graphed = torch.cuda.make_graphed_callables(lin, (x,))
    for seed in range(3):
        torch.manual_seed(seed)
        xin = torch.randn(32, 64, device="cuda", requires_grad=True)
        y = graphed(xin)
        y.square().sum().backward()
        gx = xin.grad.clone()
        gw, gb = lin.weight.grad.clone(), lin.bias.grad.clone()
        lin.zero_grad(set_to_none=True)
        xe = xin.detach().clone().requires_grad_(True)
        ye = lin(xe)
        ye.square().sum().backward()
        assert torch.allclose(y, ye, rtol=1e-5, atol=1e-6)
        assert torch.allclose(gx, xe.grad, rtol=1e-4, atol=1e-5)
        assert torch.allclose(gw, lin.weight.grad, rtol=1e-4, atol=1e-5)
        assert torch.allclose(gb, lin.bias.grad, rtol=1e-4, atol=1e-5)
        lin.zero_grad(set_to_none=True)
