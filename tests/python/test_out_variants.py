"""The out= overloads (torch.ops.gelu_fusion.<op>.out): the same bits as the
functional op, written into the caller's tensor, every element of it;
resized and non-contiguous outputs as aten's out= variants handle them;
misuse raises before the output is touched; no autograd through them."""
import pytest
import torch

from conftest import DTYPES, FORMS, inputs

ops = torch.ops.gelu_fusion


def case(op, dtype, rows=5, cols=19):
    """(inputs, keyword outputs' shapes) of op on a rows x cols problem."""
    x = inputs((rows, 2 * cols if op.startswith("geglu") else cols), dtype, seed=1)
    dy = inputs((rows, cols), dtype, scale=1.0, seed=2)
    other = inputs((rows, cols), dtype, scale=1.0, seed=3)
    bias = inputs((cols,), dtype, scale=1.0, seed=4)
    return {
        "gelu": (x,),
        "gelu_backward": (dy, x),
        "bias_gelu": (x, bias),
        "bias_gelu_backward": (dy, x, bias),
        "add_gelu": (x, other),
        "add_gelu_backward": (dy, x, other),
        "geglu": (x,),
        "geglu_backward": (dy, x),
    }[op]


OPS = ("gelu", "gelu_backward", "bias_gelu", "bias_gelu_backward", "add_gelu",
       "add_gelu_backward", "geglu", "geglu_backward")


def nan_like(t):
    return torch.full_like(t, float("nan"))


def call_out(op, args, form, outs):
    if op == "bias_gelu_backward":
        return getattr(ops, op).out(*args, approximate=form, grad_x=outs[0],
                                    grad_bias=outs[1])
    return getattr(ops, op).out(*args, approximate=form, out=outs[0])


def expected(op, args, form):
    r = getattr(ops, op)(*args, approximate=form)
    return list(r) if isinstance(r, tuple) else [r]


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("form", FORMS)
def test_out_matches_functional(op, dtype, form):
    args = case(op, dtype)
    want = expected(op, args, form)
    outs = [nan_like(w) for w in want]  # an element not written stays NaN
    # Written arguments are not returned (what torch.compile needs of a
    # custom op), so an out= call returns nothing.
    assert call_out(op, args, form, outs) is None
    for o, w in zip(outs, want):
        assert torch.equal(o, w)


@pytest.mark.parametrize("op", OPS)
def test_empty_out_is_resized(op):
    args = case(op, torch.float32)
    want = expected(op, args, "tanh")
    outs = [torch.empty(0) for _ in want]
    call_out(op, args, "tanh", outs)
    for o, w in zip(outs, want):
        assert o.shape == w.shape and torch.equal(o, w)


@pytest.mark.parametrize("op", ("gelu", "bias_gelu_backward", "geglu_backward"))
def test_non_contiguous_out(op):
    args = case(op, torch.bfloat16)
    want = expected(op, args, "none")
    # Column-major storage of each output: same shape, transposed strides.
    outs = [nan_like(w.t().contiguous()).t() if w.dim() == 2 else
            nan_like(torch.cat([w, w]))[::2] for w in want]
    assert not any(o.is_contiguous() for o in outs)
    call_out(op, args, "none", outs)
    for o, w in zip(outs, want):
        assert torch.equal(o, w)


def test_in_place_through_out():
    x = inputs((7, 33), torch.float32)
    want = ops.gelu(x)
    ops.gelu.out(x, out=x)
    assert torch.equal(x, want)
    dy, x = case("gelu_backward", torch.float16)
    want = ops.gelu_backward(dy, x, approximate="quick")
    ops.gelu_backward.out(dy, x, approximate="quick", out=dy)  # dx may be dy
    assert torch.equal(dy, want)


def test_overload_picked_by_out_keyword():
    x = inputs((3, 8), torch.float32)
    y = torch.empty(3, 8)
    assert ops.gelu(x, approximate="tanh", out=y) is None
    assert torch.equal(y, ops.gelu(x, approximate="tanh"))


def untouched_after(call, out):
    before = out.clone()
    call()
    return torch.equal(out, before)


def test_misuse_raises_and_leaves_out_untouched():
    x = inputs((4, 6), torch.float32)
    out = torch.zeros(4, 6)
    with pytest.raises(RuntimeError, match=r"gelu_fusion::gelu: out has dtype "
                       r"BFloat16, expected Float"):
        ops.gelu.out(x, out=torch.zeros(4, 6, dtype=torch.bfloat16))
    with pytest.raises(RuntimeError, match=r"gelu_fusion::gelu: out is on meta, "
                       r"expected cpu \(the device of x\)"):
        ops.gelu.out(x, out=torch.empty(4, 6, device="meta"))
    with pytest.raises(RuntimeError, match=r"bias_gelu_backward: grad_bias has "
                       r"dtype Half, expected Float"):
        ops.bias_gelu_backward.out(x, x, torch.zeros(6), grad_x=out,
                                   grad_bias=torch.zeros(6, dtype=torch.half))
    assert torch.equal(out, torch.zeros(4, 6))
    # The library's own checks run before anything is written, also when
    # out would need a resize.
    for o in (out, torch.zeros(0)):
        with pytest.raises(RuntimeError, match=r"bias_gelu: bias has shape \[5\]"):
            ops.bias_gelu.out(x, torch.zeros(5), out=o)
    assert torch.equal(out, torch.zeros(4, 6))
    with pytest.raises(RuntimeError, match=r"approximate"):
        ops.gelu.out(x, approximate="fast", out=out)
    assert torch.equal(out, torch.zeros(4, 6))


def test_no_autograd_through_out():
    x = inputs((4, 6), torch.float32).requires_grad_()
    out = torch.empty(4, 6)
    # As aten's out= variants: refused up front, since a result written into
    # an argument would silently drop out of the graph.
    with pytest.raises(RuntimeError, match=r"does not support automatic differentiation"):
        ops.gelu.out(x, out=out)
    with torch.no_grad():  # the common use: inference into a kept buffer
        v = out._version
        ops.gelu.out(x, out=out)
        assert out._version > v  # autograd sees the overwrite
        assert torch.equal(out, ops.gelu(x.detach()))
