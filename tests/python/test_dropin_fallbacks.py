"""Any tensor F.gelu accepts: float64 and meta (no kernel: PyTorch's
composition, same semantics, forward and backward); type promotion and
broadcasting as a + b; output and gradient strides as F.gelu's."""
import pytest
import torch
import torch.nn.functional as F

import gelu_fusion
from conftest import DTYPES, FORMS, inputs, ref_gelu

FORM = pytest.mark.parametrize("form", FORMS)


def composed(z, form):
    """What PyTorch computes for each form (the fallback's semantics)."""
    if form == "quick":
        return z * torch.sigmoid(1.702 * z)
    return F.gelu(z, approximate=form)


@FORM
def test_float64_is_pytorchs_composition(form):
    x = inputs((5, 6), torch.float64).requires_grad_()
    b = inputs((6,), torch.float64, seed=1).requires_grad_()
    cases = [
        (lambda: gelu_fusion.gelu(x, form), lambda: composed(x, form)),
        (lambda: gelu_fusion.bias_gelu(x, b, form), lambda: composed(x + b, form)),
        (lambda: gelu_fusion.add_gelu(x, b, form), lambda: composed(x + b, form)),
        (lambda: gelu_fusion.geglu(x, form),
         lambda: composed(x[:, :3], form) * x[:, 3:]),
        (lambda: gelu_fusion.geglu(x, form, gelu_half="second"),
         lambda: x[:, :3] * composed(x[:, 3:], form)),
    ]
    for ours, theirs in cases:
        y, want = ours(), theirs()
        assert y.dtype == torch.float64
        assert torch.equal(y, want)
        g = torch.autograd.grad(y.sum(), (x, b), allow_unused=True)
        h = torch.autograd.grad(want.sum(), (x, b), allow_unused=True)
        for p, q in zip(g, h):
            assert (p is None and q is None) or torch.equal(p, q)
    # And it is the float64 reference of the form (what the kernels meet).
    torch.testing.assert_close(gelu_fusion.gelu(x, form), ref_gelu(x, form))


@FORM
def test_meta(form):
    x = torch.empty(4, 6, device="meta", requires_grad=True)
    b = torch.empty(6, device="meta")
    assert gelu_fusion.gelu(x, form).device.type == "meta"
    assert gelu_fusion.bias_gelu(x, b, form).shape == (4, 6)
    assert gelu_fusion.add_gelu(x, x, form).shape == (4, 6)
    assert gelu_fusion.geglu(x, form).shape == (4, 3)
    assert gelu_fusion.geglu(x, form, "second").shape == (4, 3)
    gelu_fusion.gelu(x, form).sum().backward()  # the backward runs too
    assert gelu_fusion.GELU(form)(x).device.type == "meta"


def test_fallback_keeps_our_errors():
    x = torch.zeros(2, 6, dtype=torch.float64)
    with pytest.raises(RuntimeError, match=r"bias_gelu: bias has shape \[5\], "
                       r"expected \[6\] \(the last dimension of x\)"):
        gelu_fusion.bias_gelu(x, torch.zeros(5, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="geglu: x has shape \\[2, 5\\], "
                       "expected an even last dimension"):
        gelu_fusion.geglu(torch.zeros(2, 5, dtype=torch.float64))
    with pytest.raises(RuntimeError, match="approximate is 'erf'"):
        gelu_fusion.gelu(x, approximate="erf")
    # gelu_half: the same text on the fallback as from the kernel's op.
    for t in (x, x.float()):
        with pytest.raises(RuntimeError, match="geglu: gelu_half is 'last', "
                           "expected 'first' or 'second'"):
            gelu_fusion.geglu(t, gelu_half="last")


PAIRS = [(torch.bfloat16, torch.float32), (torch.float16, torch.float32),
         (torch.float32, torch.bfloat16), (torch.bfloat16, torch.float16),
         (torch.float32, torch.float64)]


@pytest.mark.parametrize("dx,db", PAIRS, ids=str)
def test_promotion(dx, db):
    """The result dtype is torch.result_type of the sum, gradients come in
    each input's dtype, values as computing the sum in that dtype."""
    x = inputs((4, 8), dx).requires_grad_()
    b = inputs((8,), db, seed=1).requires_grad_()
    want_dtype = torch.result_type(x, b)
    for fn in (gelu_fusion.bias_gelu, gelu_fusion.add_gelu):
        y = fn(x, b)
        assert y.dtype == want_dtype
        want = fn(x.detach().to(want_dtype), b.detach().to(want_dtype))
        assert torch.equal(y.detach(), want)
        gx, gb = torch.autograd.grad(y.sum(), (x, b))
        assert gx.dtype == dx and gb.dtype == db


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("sa,sb", [((5, 7), (7,)), ((5, 7), (1, 7)), ((7,), (5, 7)),
                                   ((5, 1), (1, 7)), ((5, 7), ()), ((2, 5, 7), (5, 7)),
                                   ((5, 7), (5, 1))], ids=str)
def test_add_gelu_broadcasts_like_a_plus_b(dtype, sa, sb):
    a = inputs(sa, dtype).requires_grad_()
    b = inputs(sb, dtype, seed=1).requires_grad_()
    y = gelu_fusion.add_gelu(a, b)
    shape = torch.broadcast_shapes(sa, sb)
    assert y.shape == shape and y.dtype == dtype
    # The same values as the one-pass kernel on the expanded sum's operands.
    want = torch.ops.gelu_fusion.add_gelu(a.detach().expand(shape),
                                          b.detach().expand(shape))
    assert torch.equal(y.detach(), want)
    dy = inputs(tuple(shape), dtype, seed=2)
    ga, gb = torch.autograd.grad(y, (a, b), dy)
    assert ga.shape == a.shape and gb.shape == b.shape
    # Each gradient is dy * gelu'(a + b) summed to its input's shape.
    a64, b64 = a.detach().double().requires_grad_(), b.detach().double().requires_grad_()
    ra, rb = torch.autograd.grad(ref_gelu(a64 + b64, "none"), (a64, b64), dy.double())
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else \
        dict(rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(ga.double(), ra, **tol)
    torch.testing.assert_close(gb.double(), rb, **tol)


def test_bias_shaped_broadcast_uses_bias_gelu():
    a = inputs((6, 8), torch.float32).requires_grad_()
    b = inputs((8,), torch.float32, seed=1).requires_grad_()
    y = gelu_fusion.add_gelu(a, b)
    assert y.grad_fn.name() == "BiasGeluFusionBackward"
    assert torch.equal(y, gelu_fusion.bias_gelu(a, b))
    y = gelu_fusion.add_gelu(b.reshape(1, 8), a)  # either side, leading ones
    assert torch.equal(y, gelu_fusion.bias_gelu(a, b))
    same = gelu_fusion.add_gelu(a, a * 1)
    assert same.grad_fn.name() == "AddGeluFusionBackward"


def layouts():
    base = inputs((4, 6, 5, 3), torch.float32, seed=3)
    return {
        "transposed": inputs((6, 4), torch.float32).t(),
        "channels_last": base.contiguous(memory_format=torch.channels_last),
        "permuted_3d": inputs((5, 4, 6), torch.float32).permute(1, 0, 2),
        "sliced": inputs((6, 8), torch.float32)[:, ::2],  # not dense
        "expanded": inputs((1, 6), torch.float32).expand(4, 6),
    }


@pytest.mark.parametrize("dtype", DTYPES + (torch.float64,), ids=lambda d: str(d)[6:])
@pytest.mark.parametrize("kind", sorted(layouts()))
def test_output_and_gradient_strides_as_f_gelu(kind, dtype):
    x = layouts()[kind].to(dtype).detach().requires_grad_()
    for form in ("none", "tanh"):
        y = gelu_fusion.gelu(x, form)
        want = F.gelu(x.detach(), approximate=form) if dtype != torch.float16 \
            else torch.empty_like(x)  # F.gelu has no CPU float16 kernel
        assert y.stride() == want.stride(), kind
        # Our kernels: bit-identical on any layout; float64 is PyTorch's
        # composition, whose vectorized and scalar paths round differently.
        same = torch.equal if dtype != torch.float64 else torch.allclose
        assert same(y, gelu_fusion.gelu(x.detach().contiguous(), form))
        dy = torch.ones_like(y)
        (g,) = torch.autograd.grad(y, x, dy)
        (gc,) = torch.autograd.grad(gelu_fusion.gelu(x, form), x, dy.contiguous())
        assert same(g, gc)
        if dtype != torch.float16:  # the gradient's strides as F.gelu's
            (gt,) = torch.autograd.grad(F.gelu(x, approximate=form), x, dy)
            assert g.stride() == gt.stride(), kind
        b = torch.zeros(x.shape[-1], dtype=dtype)
        assert gelu_fusion.bias_gelu(x, b, form).stride() == (x.detach() + b).stride()
        assert gelu_fusion.add_gelu(x, x, form).stride() == (x.detach() + x.detach()).stride()
    if dtype != torch.float64:
        gx = torch.ops.gelu_fusion.gelu_backward(torch.ones_like(x), x.detach())
        assert gx.stride() == torch.ones_like(x).stride()


def test_python_numbers_and_integer_tensors():
    """add_gelu(a, 2.0) as F.gelu(a + 2.0); integer tensors raise in every
    form, as F.gelu does."""
    a = inputs((3, 4), torch.float32)
    torch.testing.assert_close(gelu_fusion.add_gelu(a, 2.0), F.gelu(a + 2.0))
    torch.testing.assert_close(gelu_fusion.add_gelu(a.double(), 1), F.gelu(a.double() + 1))
    for form in FORMS:
        with pytest.raises(RuntimeError):
            gelu_fusion.gelu(torch.arange(4), form)


@pytest.mark.parametrize("form", ("none", "tanh", "quick"))
def test_composed_fallback_keeps_the_limits(form):
    """float64 (PyTorch's composition) has the kernels' limits: gelu(-inf)
    is 0, gelu(+inf) is +inf, NaN stays NaN, forward and backward finite."""
    x = torch.tensor([float("-inf"), -1e30, -40.0, 0.0, 3.0, float("inf"),
                      float("nan")], dtype=torch.float64, requires_grad=True)
    for y in (gelu_fusion.gelu(x, form), gelu_fusion.bias_gelu(x, torch.zeros(7,
              dtype=torch.float64), form), gelu_fusion.add_gelu(x, 0.0, form)):
        assert y[0].item() == 0.0 and y[1].item() == 0.0
        assert y[5].item() == float("inf") and torch.isnan(y[6])
        (g,) = torch.autograd.grad(y[:5].sum(), x)
        assert torch.isfinite(g[:5]).all()


@pytest.mark.parametrize("dtype", (torch.float16, torch.bfloat16, torch.float32))
def test_add_gelu_with_a_python_scalar(dtype):
    """gelu(a + 2.0) for every kernel dtype, as the sum then gelu computes it
    (PyTorch has no float16 GELU on CPU to fall back to)."""
    a = (torch.randn(5, 7) * 3).to(dtype)
    got = gelu_fusion.add_gelu(a, 2.0, "tanh")
    assert got.dtype == dtype
    assert torch.equal(got, gelu_fusion.gelu(a + 2.0, "tanh"))
    assert torch.equal(gelu_fusion.add_gelu(2.0, a), gelu_fusion.gelu(2.0 + a))


def test_the_quick_fallbacks_use_the_librarys_constant():
    """Eager and TorchScript (both through form_ops.cpp's composition)
    compute x * sigmoid(s x) with s the library's own
    (src/math/gelu_forms.hpp, read through the op table's JSON)."""
    s = gelu_fusion._surface.FORMS["quick_scale"]
    assert abs(s - 1.702) < 1e-15
    x = inputs((257,), torch.float64)
    want = x * torch.sigmoid(s * x)
    assert torch.equal(gelu_fusion.gelu(x, "quick"), want)
    scripted = torch.jit.script(gelu_fusion.functional._scripted_composed)
    assert torch.equal(scripted(x, "quick"), want)
    assert torch.equal(gelu_fusion.functional._scripted_composed(x, "quick"), want)


def test_the_form_list_comes_from_the_library():
    """The package's forms are the C++ list (GELU_FUSION_FORMS), in order,
    and its messages list them."""
    assert gelu_fusion._surface.FORM_NAMES == tuple(FORMS)
    with pytest.raises(RuntimeError, match="expected 'none', 'tanh' or 'quick'"):
        gelu_fusion.gelu(inputs((3,), torch.float64), "erf")


@FORM
def test_composed_gelu_is_pytorchs_or_the_forms_formula(form):
    """_composed_gelu is PyTorch's own GELU for the forms PyTorch has (with
    the library's limit at -inf), and otherwise the form's formula
    (src/math/gelu_forms.hpp), which then agrees with the kernels in float64
    against float32, its gradient with the kernel's backward."""
    x = inputs((513,), torch.float32)
    xd = x.double().requires_grad_()
    y = torch.ops.gelu_fusion._composed_gelu(xd, form)
    if form in ("none", "tanh"):
        assert torch.equal(y, F.gelu(xd, approximate=form))
        ninf = torch.tensor([float("-inf"), 1.0], dtype=torch.float64)
        assert torch.ops.gelu_fusion._composed_gelu(ninf, form)[0].item() == 0.0
        return
    torch.testing.assert_close(y.float(), gelu_fusion.gelu(x, form), rtol=3e-7, atol=4e-45)
    (g,) = torch.autograd.grad(y.sum(), xd)
    want = torch.ops.gelu_fusion.gelu_backward(torch.ones_like(x), x, approximate=form)
    # atol: the backward's bound scales with |s| + |x s'|, not |gelu'|.
    torch.testing.assert_close(g.float(), want, rtol=3e-7, atol=3e-7)
