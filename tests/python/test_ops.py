"""Every op x form x dtype x shape: outputs and gradients of gelu_fusion
against PyTorch autograd in float64 on the same inputs, within the library's
accuracy contract (ULPs of the storage dtype); outputs poisoned first."""
import pytest
import torch
import torch.nn.functional as F

import gelu_fusion
from conftest import (DTYPES, FORMS, SHAPES, assert_close, bound_ulps,
                      grad_terms_abs, inputs, ref_gelu, ulp,
                      F32_SUBNORMAL)

ALL = pytest.mark.parametrize("form", FORMS)
DT = pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
SH = pytest.mark.parametrize("shape", SHAPES, ids=str)


def name(op, form, dtype, shape):
    return f"{op} {form} {dtype} {list(shape)}"


@ALL
@DT
@SH
def test_gelu(form, dtype, shape):
    x = inputs(shape, dtype, seed=1).requires_grad_()
    dy = inputs(shape, dtype, scale=1.0, seed=2)
    y = gelu_fusion.gelu(x, approximate=form)
    assert y.dtype == dtype and y.shape == x.shape
    y.backward(dy)

    z = x.detach().double().requires_grad_()
    exact = ref_gelu(z, form)
    exact.backward(dy.double())
    w = name("gelu", form, dtype, shape)
    assert_close(y.detach(), exact.detach(), exact.detach(), dtype,
                 bound_ulps(dtype), w)
    scale = dy.double().abs() * grad_terms_abs(z.detach(), form)
    assert_close(x.grad, z.grad, scale, dtype, bound_ulps(dtype), w + " grad",
                 factor=dy.double())

    # The backward op called directly gives the same gradient.
    dx = torch.ops.gelu_fusion.gelu_backward(dy, x.detach(), approximate=form)
    assert torch.equal(dx, x.grad)


@pytest.mark.parametrize("form", ("none", "tanh"))
@DT
def test_gelu_matches_torch_functional(form, dtype):
    """Against F.gelu itself: its float64 output and autograd where its
    textbook formula 0.5x(1 + erf) does not cancel (x > -5). (F.gelu in f32
    is not a reference: it cancels in the tail; and it has no f16 CPU kernel
    in PyTorch 1.13.)"""
    x = inputs((64, 33), dtype, seed=3)
    x = x[x.double() > -5].reshape(-1).requires_grad_()
    dy = inputs(x.shape, dtype, scale=1.0, seed=4)
    y = gelu_fusion.gelu(x, approximate=form)
    y.backward(dy)
    z = x.detach().double().requires_grad_()
    exact = F.gelu(z, approximate=form)
    exact.backward(dy.double())
    w = f"gelu vs F.gelu {form} {dtype}"
    assert_close(y.detach(), exact.detach(), exact.detach(), dtype,
                 bound_ulps(dtype), w)
    scale = dy.double().abs() * grad_terms_abs(z.detach(), form)
    assert_close(x.grad, z.grad, scale, dtype, bound_ulps(dtype), w + " grad",
                 factor=dy.double())


@ALL
@DT
@pytest.mark.parametrize("shape", [s for s in SHAPES if s], ids=str)
def test_bias_gelu(form, dtype, shape):
    x = inputs(shape, dtype, seed=5).requires_grad_()
    bias = inputs(shape[-1:], dtype, scale=1.0, seed=6).requires_grad_()
    dy = inputs(shape, dtype, scale=1.0, seed=7)
    y = gelu_fusion.bias_gelu(x, bias, approximate=form)
    assert y.dtype == dtype and y.shape == x.shape
    y.backward(dy)
    assert bias.grad.dtype == dtype and bias.grad.shape == bias.shape

    # Exact for the f32 pre-activation fl(x + bias), what unfused f32 feeds.
    z = (x.detach().float() + bias.detach().float()).double().requires_grad_()
    exact = ref_gelu(z, form)
    exact.backward(dy.double())
    w = name("bias_gelu", form, dtype, shape)
    assert_close(y.detach(), exact.detach(), exact.detach(), dtype,
                 bound_ulps(dtype), w)
    scale = dy.double().abs() * grad_terms_abs(z.detach(), form)
    assert_close(x.grad, z.grad, scale, dtype, bound_ulps(dtype), w + " dx",
                 factor=dy.double())

    # dbias: the float64 sum of the exact dx per column, within 2^-20 of the
    # sum of |dx| plus half an ulp of its dtype plus underflow per row.
    if shape[-1]:
        rows = x.numel() // shape[-1]
        g = z.grad.reshape(rows, shape[-1])
        s, a = g.sum(0), g.abs().sum(0)
        # Each f32 dx that is subnormal carries up to 2 |dy| * 2^-149.
        sub = (2.0 * dy.double().abs().clamp(min=1.0) * F32_SUBNORMAL)
        tol = a * 2.0 ** -20 + 0.5 * ulp(dtype, s) + sub.reshape(rows, shape[-1]).sum(0)
        err = (bias.grad.double() - s).abs()
        assert bool((err <= tol).all()), \
            f"{w} dbias: worst excess {float((err - tol).max()):.3g}"
    else:
        assert torch.equal(bias.grad, torch.zeros_like(bias))

    dx, db = torch.ops.gelu_fusion.bias_gelu_backward(
        dy, x.detach(), bias.detach(), approximate=form)
    assert torch.equal(dx, x.grad) and torch.equal(db, bias.grad)


@ALL
@DT
@SH
def test_add_gelu(form, dtype, shape):
    a = inputs(shape, dtype, seed=8).requires_grad_()
    b = inputs(shape, dtype, scale=1.0, seed=9).requires_grad_()
    dy = inputs(shape, dtype, scale=1.0, seed=10)
    y = gelu_fusion.add_gelu(a, b, approximate=form)
    assert y.dtype == dtype and y.shape == a.shape
    y.backward(dy)

    z = (a.detach().float() + b.detach().float()).double().requires_grad_()
    exact = ref_gelu(z, form)
    exact.backward(dy.double())
    w = name("add_gelu", form, dtype, shape)
    assert_close(y.detach(), exact.detach(), exact.detach(), dtype,
                 bound_ulps(dtype), w)
    scale = dy.double().abs() * grad_terms_abs(z.detach(), form)
    assert_close(a.grad, z.grad, scale, dtype, bound_ulps(dtype), w + " da",
                 factor=dy.double())
    assert torch.equal(a.grad, b.grad)


def geglu_shape(shape):
    s = list(shape) if shape else [1]
    s[-1] *= 2
    return tuple(s)


@ALL
@DT
@SH
@pytest.mark.parametrize("half", ["first", "second"])
def test_geglu(form, dtype, shape, half):
    """gelu_half='first': gelu(x[..., :H]) * x[..., H:]; 'second':
    x[..., :H] * gelu(x[..., H:]) (diffusers' GEGLU)."""
    xs = geglu_shape(shape)
    h = xs[-1] // 2
    x = inputs(xs, dtype, seed=11).requires_grad_()
    dy = inputs(xs[:-1] + (h,), dtype, scale=1.0, seed=12)
    y = gelu_fusion.geglu(x, approximate=form, gelu_half=half)
    assert y.dtype == dtype and y.shape == dy.shape
    y.backward(dy)

    z = x.detach().double().requires_grad_()
    a, g = (z[..., :h], z[..., h:]) if half == "first" else (z[..., h:], z[..., :h])
    exact = ref_gelu(a, form) * g
    exact.backward(dy.double())
    w = name(f"geglu gelu_half={half}", form, dtype, xs)
    bound = bound_ulps(dtype, 0.5)  # + the product's one f32 rounding
    assert_close(y.detach(), exact.detach(), exact.detach(), dtype, bound, w,
                 factor=g.detach())
    # GELU half: a gelu' bound scaled by dy * gate; gate half: relative.
    ad = a.detach()
    d = dy.double()
    gelu_scale = (d * g.detach()).abs() * grad_terms_abs(ad, form)
    gate_i = slice(h, None) if half == "first" else slice(0, h)
    gate_scale = z.grad[..., gate_i].abs()
    parts = [(gelu_scale, d * g.detach()), (gate_scale, d)]
    if half == "second":
        parts.reverse()
    scale = torch.cat([p[0] for p in parts], dim=-1)
    factor = torch.cat([p[1] for p in parts], dim=-1)
    assert_close(x.grad, z.grad, scale, dtype, bound, w + " grad", factor=factor)


SPECIALS = [float("nan"), float("inf"), float("-inf"), 0.0, -0.0, 1e-40,
            -1e-40, 3e38, -3e38, 60000.0, -60000.0, 1.0, -1.0]


@ALL
@DT
def test_special_values(form, dtype):
    x = torch.tensor(SPECIALS, dtype=torch.float64).to(dtype).requires_grad_()
    y = gelu_fusion.gelu(x, approximate=form)
    y.backward(torch.ones_like(y))
    xd = x.detach().double()
    fin = torch.isfinite(xd)
    z = xd.where(fin, torch.zeros_like(xd)).requires_grad_()
    e = ref_gelu(z, form)
    e.backward(torch.ones_like(e))
    pos, neg = xd == float("inf"), xd == float("-inf")
    exact = e.detach().where(fin, xd)  # NaN stays NaN, +inf -> +inf
    exact[neg] = 0.0
    grad = z.grad.where(fin, xd)
    grad[pos], grad[neg] = 1.0, 0.0
    w = f"gelu specials {form} {dtype}"
    assert_close(y.detach(), exact, exact, dtype, bound_ulps(dtype), w)
    scale = grad_terms_abs(z.detach(), form).where(fin, torch.ones_like(xd))
    assert_close(x.grad, grad, scale, dtype, bound_ulps(dtype), w + " grad")
