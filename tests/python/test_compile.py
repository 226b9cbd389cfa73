"""torch.compile and torch.export with gelu_fusion's ops: every op, form and
dtype compiles with fullgraph=True (no graph break) under static and
dynamic shapes, forward and backward, with results equal to eager; dynamic
shapes compile once for many sizes; Inductor compiles one dtype per op
(slow); a model built on our modules exports."""
import pytest
import torch
from torch._dynamo.testing import CompileCounterWithBackend

import gelu_fusion
from conftest import DTYPES, FORMS

# Each op as a user calls it, with inputs of a given row count: x is
# [rows, 2 * 3] so geglu has halves.
COLS = 6


def _inputs(op, rows, dtype):
    g = torch.Generator().manual_seed(rows)
    x = (torch.randn(rows, COLS, generator=g) * 3).to(dtype)
    other = {"bias_gelu": torch.randn(COLS, generator=g).to(dtype),
             "add_gelu": torch.randn(rows, COLS, generator=g).to(dtype)}.get(op)
    return (x,) if other is None else (x, other)


def _call(op, form):
    fn = getattr(gelu_fusion, op)
    if op == "geglu":
        return lambda x: fn(x, form, "second") * 2
    if len(_inputs(op, 1, torch.float32)) == 2:
        return lambda x, o: fn(x, o, form) * 2
    return lambda x: fn(x, form) * 2


OPS = ("gelu", "bias_gelu", "add_gelu", "geglu")


def _run(fn, args):
    """fn's result and the gradients of its inputs (for a fixed dy)."""
    args = [a.detach().requires_grad_() for a in args]
    y = fn(*args)
    dy = torch.linspace(-1, 1, y.numel()).reshape(y.shape).to(y.dtype)
    grads = torch.autograd.grad(y, args, dy)
    return y.detach(), grads


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("op", OPS)
def test_fullgraph_no_break_equal_to_eager(op, form, dtype, dynamic):
    torch._dynamo.reset()
    counter = CompileCounterWithBackend("aot_eager")
    fn = _call(op, form)
    compiled = torch.compile(fn, backend=counter, fullgraph=True, dynamic=dynamic)
    for rows in (4, 9, 17):
        args = _inputs(op, rows, dtype)
        want_y, want_g = _run(fn, args)
        got_y, got_g = _run(compiled, args)
        # The same kernels run: bit for bit.
        assert torch.equal(got_y, want_y)
        for g, w in zip(got_g, want_g):
            assert torch.equal(g, w)
    # One graph; with dynamic shapes, one compile for every size.
    assert counter.frame_count == (1 if dynamic else 3)


def test_compiled_graph_holds_our_ops():
    """The graph Dynamo hands the backend calls the fused op itself (not
    PyTorch's composition, not an opaque call)."""
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)
        return gm.forward

    x, b = _inputs("bias_gelu", 8, torch.float32)
    torch.compile(lambda x, b: gelu_fusion.bias_gelu(x, b, "tanh"), backend=backend,
                  fullgraph=True)(x, b)
    (gm,) = graphs
    targets = [str(n.target) for n in gm.graph.nodes if n.op == "call_function"]
    assert any("gelu_fusion.bias_gelu" in t for t in targets), targets
    assert not any("gelu" in t and "gelu_fusion" not in t for t in targets), targets


def test_shape_rules_hold_under_dynamic_shapes():
    """The fake kernels check the shape rules with torch._check on symbolic
    sizes: a mismatched bias raises the real op's message under compile."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda x, b: gelu_fusion.bias_gelu(x, b),
                             backend="aot_eager", fullgraph=True, dynamic=True)
    x = torch.randn(5, 6)
    assert torch.equal(compiled(x, torch.zeros(6)), gelu_fusion.bias_gelu(x, torch.zeros(6)))
    with pytest.raises(Exception, match=r"bias_gelu: bias has shape \[\w+\], "
                       r"expected \[\w+\] \(the last dimension of x\)"):
        compiled(x, torch.zeros(5))


@pytest.mark.slow
@pytest.mark.parametrize("op", OPS)
def test_inductor_one_dtype_per_op(op):
    torch._dynamo.reset()
    fn = _call(op, "tanh")
    compiled = torch.compile(fn, backend="inductor", fullgraph=True)
    args = _inputs(op, 33, torch.float32)
    want_y, want_g = _run(fn, args)
    got_y, got_g = _run(compiled, args)
    # Inductor may fuse the * 2 and the gradient's scaling differently.
    torch.testing.assert_close(got_y, want_y, rtol=1e-6, atol=0)
    for g, w in zip(got_g, want_g):
        torch.testing.assert_close(g, w, rtol=1e-6, atol=1e-7)


class Block(torch.nn.Module):
    """A feed-forward block on our modules and functions."""

    def __init__(self):
        super().__init__()
        self.up = torch.nn.Linear(8, 32, bias=False)
        self.bias = torch.nn.Parameter(torch.randn(32))
        self.act = gelu_fusion.GELU(approximate="tanh")
        self.down = torch.nn.Linear(16, 8)

    def forward(self, x):
        h = gelu_fusion.bias_gelu(self.up(x), self.bias)
        return self.down(gelu_fusion.geglu(self.act(h)))


def test_export_of_a_model_on_our_ops():
    torch.manual_seed(0)
    m = Block()
    x = torch.randn(4, 8)
    ep = torch.export.export(m, (x,))
    targets = {str(n.target) for n in ep.graph.nodes if n.op == "call_function"}
    assert {"gelu_fusion.bias_gelu.default", "gelu_fusion.gelu.default",
            "gelu_fusion.geglu.default"} <= targets, targets
    assert torch.equal(ep.module()(x), m(x))


def test_compiled_model_trains_as_eager():
    """A model on our ops, compiled, trains with the eager model's losses."""
    losses = {}
    for mode in ("eager", "compiled"):
        torch.manual_seed(0)
        m = Block()
        opt = torch.optim.SGD(m.parameters(), lr=0.1)
        step = m if mode == "eager" else torch.compile(m, backend="aot_eager")
        losses[mode] = []
        for i in range(4):
            x = torch.randn(16, 8, generator=torch.Generator().manual_seed(i))
            loss = step(x).square().mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses[mode].append(loss.item())
    for a, b in zip(losses["compiled"], losses["eager"]):
        assert abs(a - b) <= 1e-5 * abs(b), losses
