"""Forward-mode AD, double backward and forward-over-reverse for every op
and form, against float64 autograd of the same formula (conftest.ref_gelu):
fwAD dual tensors, torch.func.jvp / jacfwd / hessian, gradgrad and
fwgrad_bwgrad. First-order passes still run the fused kernels."""
import warnings

import pytest
import torch
import torch.autograd.forward_ad as fwAD

import gelu_fusion
from conftest import FORMS, inputs, ref_gelu


# op -> (ours, float64 reference, input shapes)
OPS = {
    "gelu": (lambda f: lambda x: gelu_fusion.gelu(x, f),
             lambda f: lambda x: ref_gelu(x, f), [(6, 7)]),
    "bias_gelu": (lambda f: lambda x, b: gelu_fusion.bias_gelu(x, b, f),
                  lambda f: lambda x, b: ref_gelu(x + b, f), [(6, 7), (7,)]),
    "add_gelu": (lambda f: lambda a, b: gelu_fusion.add_gelu(a, b, f),
                 lambda f: lambda a, b: ref_gelu(a + b, f), [(6, 7), (6, 7)]),
    "geglu": (lambda f: lambda x: gelu_fusion.geglu(x, f),
              lambda f: lambda x: ref_gelu(x[..., :4], f) * x[..., 4:], [(5, 8)]),
    "geglu_gelu_half_second": (
        lambda f: lambda x: gelu_fusion.geglu(x, f, "second"),
        lambda f: lambda x: x[..., :4] * ref_gelu(x[..., 4:], f), [(5, 8)]),
}
CASES = pytest.mark.parametrize("op,form", [(o, f) for o in OPS for f in FORMS])
# float32 results against float64: first derivatives come from the fused
# kernels (2 ULP, plus the product with the tangent); second derivatives
# are composed in float32, where cancellation near their zeros costs more.
TOL1 = dict(rtol=2e-6, atol=1e-6)
TOL2 = dict(rtol=1e-4, atol=1e-5)


def case(op, form, seed=0):
    ours, ref, shapes = OPS[op]
    xs = [inputs(s, torch.float32, scale=2.0, seed=seed + i)
          for i, s in enumerate(shapes)]
    ts = [inputs(s, torch.float32, scale=1.0, seed=seed + 10 + i)
          for i, s in enumerate(shapes)]
    return ours(form), ref(form), xs, ts


def close(got, want, tol):
    torch.testing.assert_close(got.double(), want, **tol)


@CASES
def test_forward_ad_dual_tensors(op, form):
    ours, ref, xs, ts = case(op, form)
    with fwAD.dual_level():
        y = ours(*[fwAD.make_dual(x, t) for x, t in zip(xs, ts)])
        y64 = ref(*[fwAD.make_dual(x.double(), t.double()) for x, t in zip(xs, ts)])
        tangent = fwAD.unpack_dual(y).tangent
        assert tangent is not None
        close(tangent, fwAD.unpack_dual(y64).tangent, TOL1)
        # Composed with PyTorch ops: y + x carries both tangents.
        z = fwAD.unpack_dual(ours(*[fwAD.make_dual(x, t) for x, t in zip(xs, ts)])
                             .sum() + fwAD.make_dual(xs[0], ts[0]).sum()).tangent
        z64 = fwAD.unpack_dual(y64.sum() + fwAD.make_dual(
            xs[0].double(), ts[0].double()).sum()).tangent
        close(z, z64, TOL1)


@pytest.mark.parametrize("op", ["bias_gelu", "add_gelu"])
@pytest.mark.parametrize("which", [0, 1])
def test_forward_ad_one_dual_input(op, which):
    """A tangent on one input only: the other counts as zero."""
    ours, ref, xs, ts = case(op, "none")
    with fwAD.dual_level():
        args = [fwAD.make_dual(x, t) if i == which else x
                for i, (x, t) in enumerate(zip(xs, ts))]
        args64 = [fwAD.make_dual(x.double(), t.double()) if i == which else x.double()
                  for i, (x, t) in enumerate(zip(xs, ts))]
        close(fwAD.unpack_dual(ours(*args)).tangent,
              fwAD.unpack_dual(ref(*args64)).tangent, TOL1)


@CASES
def test_torch_func_jvp_jacfwd_hessian(op, form):
    ours, ref, xs, ts = case(op, form)
    _, t = torch.func.jvp(ours, tuple(xs), tuple(ts))
    _, t64 = torch.func.jvp(ref, tuple(x.double() for x in xs),
                            tuple(t.double() for t in ts))
    close(t, t64, TOL1)
    small = [x[:2] if x.dim() > 1 else x for x in xs]  # Jacobians stay small
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # vmap's per-sample fallback notice
        argnums = tuple(range(len(small)))
        for J, J64 in zip(
                torch.func.jacfwd(ours, argnums=argnums)(*small),
                torch.func.jacfwd(ref, argnums=argnums)(*[x.double() for x in small])):
            close(J, J64, TOL1)
        H = torch.func.hessian(lambda x: ours(x, *small[1:]).sum())(small[0])
        H64 = torch.func.hessian(lambda x: ref(x, *[s.double() for s in small[1:]])
                                 .sum())(small[0].double())
        close(H, H64, TOL2)


def grads(fn, xs, v, create_graph):
    leaves = [x.detach().clone().requires_grad_() for x in xs]
    y = fn(*leaves)
    gs = torch.autograd.grad(y, leaves, v, create_graph=create_graph)
    return leaves, gs


@CASES
def test_double_backward(op, form):
    """d/dx of <grad(y, x, v), w>, for every input, against float64."""
    ours, ref, xs, ts = case(op, form)
    v = inputs(tuple(ours(*xs).shape), torch.float32, scale=1.0, seed=20)
    ws = ts
    leaves, gs = grads(ours, xs, v, create_graph=True)
    leaves64, gs64 = grads(ref, [x.double() for x in xs], v.double(), True)
    for g, g64 in zip(gs, gs64):
        close(g, g64, TOL1)
    s = sum((g * w).sum() for g, w in zip(gs, ws))
    s64 = sum((g * w.double()).sum() for g, w in zip(gs64, ws))
    for h, h64 in zip(torch.autograd.grad(s, leaves),
                      torch.autograd.grad(s64, leaves64)):
        close(h, h64, TOL2)


@CASES
def test_fwgrad_bwgrad(op, form):
    """Forward-mode through the backward: the tangent of grad(y, x, v)."""
    ours, ref, xs, ts = case(op, form)
    v = inputs(tuple(ours(*xs).shape), torch.float32, scale=1.0, seed=21)

    def tangent_of_grads(fn, xs, ts, v):
        leaves = [x.detach().clone().requires_grad_() for x in xs]
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x, t) for x, t in zip(leaves, ts)]
            gs = torch.autograd.grad(fn(*duals), duals, v, create_graph=True)
            return [fwAD.unpack_dual(g).tangent for g in gs]

    got = tangent_of_grads(ours, xs, ts, v)
    want = tangent_of_grads(ref, [x.double() for x in xs],
                            [t.double() for t in ts], v.double())
    for g, w in zip(got, want):
        assert g is not None
        close(g, w, TOL2)


@pytest.mark.parametrize("form", FORMS)
def test_first_order_runs_the_fused_kernels(form):
    """Plain backward and a lone jvp give the fused backward kernel's
    result bit for bit (no composed formula on the fast path)."""
    x = inputs((9, 16), torch.float32, seed=3)
    b = inputs((16,), torch.float32, seed=4)
    dy = inputs((9, 16), torch.float32, seed=5)
    ops = torch.ops.gelu_fusion
    xl, bl = x.clone().requires_grad_(), b.clone().requires_grad_()
    gelu_fusion.bias_gelu(xl, bl, form).backward(dy)
    dx, db = ops.bias_gelu_backward(dy, x, b, approximate=form)
    assert torch.equal(xl.grad, dx) and torch.equal(bl.grad, db)
    with fwAD.dual_level():
        t = fwAD.unpack_dual(gelu_fusion.gelu(fwAD.make_dual(x, dy), form)).tangent
    assert torch.equal(t, ops.gelu_backward(dy, x, approximate=form))


def test_gradgradcheck_float64_fallback():
    """float64 has no kernel: PyTorch's composition, whose gradcheck and
    gradgradcheck (with forward-over-reverse) PyTorch's own tests run."""
    x = inputs((3, 4), torch.float64, scale=2.0).requires_grad_()
    b = inputs((4,), torch.float64, seed=1).requires_grad_()
    for form in FORMS:
        for fn, args in [(lambda x: gelu_fusion.gelu(x, form), (x,)),
                         (lambda x, b: gelu_fusion.bias_gelu(x, b, form), (x, b)),
                         (lambda x, b: gelu_fusion.add_gelu(x, b, form), (x, b)),
                         (lambda x: gelu_fusion.geglu(x, form), (x,)),
                         (lambda x: gelu_fusion.geglu(x, form, "second"), (x,))]:
            assert torch.autograd.gradcheck(fn, args, check_forward_ad=True)
            assert torch.autograd.gradgradcheck(fn, args, check_fwd_over_rev=True)
