"""Layouts and autograd plumbing: non-contiguous and expanded inputs give
bit-identical results to contiguous copies, requires_grad on any subset of
inputs, grad mode off, threads do not matter (double backward:
test_dropin_autograd.py)."""
import itertools

import pytest
import torch

import gelu_fusion
from conftest import DTYPES, FORMS, inputs

DT = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])


def run(fn, *tensors, dy=None):
    """Output and input gradients of fn(*tensors) for a fixed upstream grad."""
    leaves = [t.detach().clone().requires_grad_() for t in tensors]
    y = fn(*leaves)
    y.backward(dy if dy is not None else torch.ones_like(y))
    return y.detach(), [t.grad for t in leaves]


def views(base):
    """Non-contiguous views of `base` (2-D): transposed, strided, offset."""
    return {
        "transposed": base.t(),
        "strided": base[:, ::2],
        "offset": base[1:, 2:],
    }


OPS = {
    "gelu": lambda f: (lambda x: gelu_fusion.gelu(x, f), 1),
    "add_gelu": lambda f: (lambda a, b: gelu_fusion.add_gelu(a, b, f), 2),
    "geglu": lambda f: (lambda x: gelu_fusion.geglu(x, f), 1),
}


@pytest.mark.parametrize("form", FORMS)
@DT
@pytest.mark.parametrize("op", sorted(OPS))
def test_non_contiguous_equals_contiguous(op, form, dtype):
    fn, arity = OPS[op](form)
    base = [inputs((10, 12), dtype, seed=s) for s in range(arity)]
    for kind in views(base[0]):
        out = []
        for contiguous in (False, True):
            leaves = [b.clone().requires_grad_() for b in base]
            args = [views(t)[kind] for t in leaves]
            assert not args[0].is_contiguous()
            if contiguous:
                args = [a.contiguous() for a in args]
            y = fn(*args)
            dy = inputs(tuple(y.shape[::-1]), dtype, seed=9).t()  # transposed
            y.backward(dy)
            out.append([y.detach()] + [t.grad for t in leaves])
        for a, b in zip(*out):
            assert torch.equal(a, b), f"{op} {kind}"


@pytest.mark.parametrize("form", FORMS)
@DT
def test_bias_gelu_non_contiguous(form, dtype):
    x = inputs((9, 16), dtype, seed=1).t()          # [16, 9], transposed
    bias = inputs((18,), dtype, seed=2)[::2]        # stride 2
    dy = inputs((9, 16), dtype, seed=3).t()
    y1, g1 = run(lambda a, b: gelu_fusion.bias_gelu(a, b, form), x, bias, dy=dy)
    y2, g2 = run(lambda a, b: gelu_fusion.bias_gelu(a, b, form),
                 x.contiguous(), bias.contiguous(), dy=dy.contiguous())
    assert torch.equal(y1, y2)
    assert all(torch.equal(a, b) for a, b in zip(g1, g2))


@pytest.mark.parametrize("form", FORMS)
@DT
def test_expanded_inputs(form, dtype):
    row = inputs((1, 7), dtype, seed=4).requires_grad_()
    col = inputs((5, 1), dtype, seed=5).requires_grad_()
    y1 = gelu_fusion.add_gelu(row.expand(5, 7), col.expand(5, 7), form)
    y1.sum().backward()
    r1, c1 = row.grad, col.grad
    row.grad = col.grad = None
    y2 = gelu_fusion.add_gelu(row.expand(5, 7).contiguous(),
                              col.expand(5, 7).contiguous(), form)
    y2.sum().backward()
    assert torch.equal(y1, y2)
    assert torch.equal(r1, row.grad) and torch.equal(c1, col.grad)
    # The gradient of a broadcast (stride-0) input sums over its copies.
    assert r1.shape == (1, 7) and c1.shape == (5, 1)


@pytest.mark.parametrize("op", ["bias_gelu", "add_gelu"])
@pytest.mark.parametrize("req", list(itertools.product([False, True], repeat=2)),
                         ids=str)
def test_requires_grad_subsets(op, req):
    x = inputs((6, 5), torch.float32, seed=6)
    other = inputs((5,) if op == "bias_gelu" else (6, 5), torch.float32, seed=7)
    fn = getattr(gelu_fusion, op)
    full_y, full_g = run(fn, x, other)
    a = x.clone().requires_grad_(req[0])
    b = other.clone().requires_grad_(req[1])
    y = fn(a, b)
    assert torch.equal(y.detach(), full_y)
    assert y.requires_grad == any(req)
    if any(req):
        y.backward(torch.ones_like(y))
    for t, wanted, g in zip((a, b), req, full_g):
        if wanted:
            assert torch.equal(t.grad, g)
        else:
            assert t.grad is None


def test_no_grad_and_inference_mode():
    x = inputs((4, 6), torch.float32).requires_grad_()
    with torch.no_grad():
        y = gelu_fusion.gelu(x)
    assert not y.requires_grad
    with torch.inference_mode():
        y2 = gelu_fusion.bias_gelu(x, torch.zeros(6))
    assert torch.equal(y, y2)


def test_same_tensor_twice():
    x = inputs((3, 4), torch.float32).requires_grad_()
    gelu_fusion.add_gelu(x, x).sum().backward()
    z = (x.detach() * 2).requires_grad_()
    gelu_fusion.gelu(z).sum().backward()
    assert torch.allclose(x.grad, 2 * z.grad, rtol=0, atol=0)


SAVED = {  # op -> (call, the tensors its backward must save: its inputs)
    "gelu": lambda x, b, c: (gelu_fusion.gelu(x), [x]),
    "bias_gelu": lambda x, b, c: (gelu_fusion.bias_gelu(x, b), [x, b]),
    "add_gelu": lambda x, b, c: (gelu_fusion.add_gelu(x, c), [x, c]),
    "geglu": lambda x, b, c: (gelu_fusion.geglu(x), [x]),
}


@pytest.mark.parametrize("op", sorted(SAVED))
def test_saves_only_inputs(op):
    """Each forward saves exactly what its backward consumes, its inputs
    (never the output): seen through saved_tensors_hooks, which PyTorch
    calls for every tensor an autograd node saves."""
    x = inputs((3, 8), torch.float32).requires_grad_()
    b = inputs((8,), torch.float32).requires_grad_()
    c = inputs((3, 8), torch.float32, seed=1).requires_grad_()
    packed = []

    def pack(t):
        packed.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        y, expected = SAVED[op](x, b, c)
    assert len(packed) == len(expected), [tuple(t.shape) for t in packed]
    for got, want in zip(packed, expected):
        assert got is want, (tuple(got.shape), tuple(want.shape))
    y.sum().backward()  # the node unpacks and uses them
    assert x.grad is not None


# The library starts a second thread only from 2 * kMinElementsPerThread
# elements (src/core/plan.hpp: 64K per thread).
MIN_ELEMENTS_FOR_TWO_THREADS = 2 * 64 * 1024

THREADS_WORKER = r"""
import os, sys
import numpy as np, torch, gelu_fusion
rows = int(sys.argv[1])
# Inputs through numpy: no torch op runs an OpenMP region before ours.
x = torch.from_numpy(np.random.default_rng(0).standard_normal((rows, 1000), dtype=np.float32))
b = torch.from_numpy(np.random.default_rng(1).standard_normal(1000, dtype=np.float32))
torch.set_num_threads(2)
assert torch.get_num_threads() == 2
before = len(os.listdir("/proc/self/task"))
gelu_fusion.bias_gelu(x, b)
print(len(os.listdir("/proc/self/task")) - before)
"""


def threads_started(rows):
    """OS threads a first bias_gelu call of rows x 1000 starts in a fresh
    process (OpenMP keeps its workers, so they can be counted after)."""
    import os
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", THREADS_WORKER, str(rows)],
                         capture_output=True, text=True, check=True,
                         env=dict(os.environ))
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not __import__("os").path.isdir("/proc/self/task"),
                    reason="counts threads through /proc")
def test_threads_actually_run():
    """Above the threshold a call with torch.set_num_threads(2) starts a
    worker thread; below it, none (so the test below compares two thread
    counts, not one count twice)."""
    assert 300 * 1000 >= MIN_ELEMENTS_FOR_TWO_THREADS
    assert threads_started(300) >= 1
    assert threads_started(100) == 0  # 100K < the threshold


@pytest.mark.parametrize("form", FORMS)
def test_thread_count_does_not_change_results(form):
    x = inputs((300, 1000), torch.float32, seed=8)  # above the threshold
    assert x.numel() >= MIN_ELEMENTS_FOR_TWO_THREADS
    b = inputs((1000,), torch.float32, seed=9)
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        assert torch.get_num_threads() == 1
        y1, g1 = run(lambda a, c: gelu_fusion.bias_gelu(a, c, form), x, b)
        torch.set_num_threads(2)
        assert torch.get_num_threads() == 2
        y2, g2 = run(lambda a, c: gelu_fusion.bias_gelu(a, c, form), x, b)
    finally:
        torch.set_num_threads(old)
    assert torch.equal(y1, y2)
    assert all(torch.equal(p, q) for p, q in zip(g1, g2))


@DT
def test_zero_size(dtype):
    for shape in [(0,), (0, 3), (4, 0), (2, 0, 6)]:
        x = torch.empty(shape, dtype=dtype, requires_grad=True)
        y = gelu_fusion.gelu(x)
        y.sum().backward()
        assert y.shape == shape and x.grad.shape == shape
    x = torch.empty((0, 3), dtype=dtype, requires_grad=True)
    b = torch.randn(3).to(dtype).requires_grad_()
    gelu_fusion.bias_gelu(x, b).sum().backward()
    assert torch.equal(b.grad, torch.zeros(3, dtype=dtype))  # written, not NaN
    y = gelu_fusion.geglu(torch.empty((0, 4), dtype=dtype))
    assert y.shape == (0, 2)


def test_input_modified_in_place_is_caught():
    """The saved input is checked by version, as PyTorch's own ops do."""
    x = inputs((4, 6), torch.float32).requires_grad_()
    h = x * 1.0
    y = gelu_fusion.gelu(h)
    h.add_(1.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_grad_fn_names():
    x = inputs((2, 4), torch.float32).requires_grad_()
    b = torch.zeros(4, requires_grad=True)
    assert gelu_fusion.gelu(x).grad_fn.name() == "GeluFusionBackward"
    assert gelu_fusion.bias_gelu(x, b).grad_fn.name() == "BiasGeluFusionBackward"
    assert gelu_fusion.add_gelu(x, x).grad_fn.name() == "AddGeluFusionBackward"
    assert gelu_fusion.geglu(x).grad_fn.name() == "GegluFusionBackward"
