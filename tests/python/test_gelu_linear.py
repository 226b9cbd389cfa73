"""The memory-saving GELU -> Linear node (gelu_fusion.bias_gelu_linear,
geglu_linear, GeluLinear, GegluLinear) against the unfused modules: values
and every gradient, every dtype, with and without biases, leading
dimensions, requires_grad on any subset, under bf16 autocast; what the node
keeps for the backward; double backward and float64; gelu_half='second';
the *_and_value ops themselves.
"""
import itertools

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion

FORMS = ("none", "tanh", "quick")


def act(h, approximate):
    if approximate == "quick":
        return h * torch.sigmoid(1.702 * h)
    return F.gelu(h, approximate=approximate)


def unfused(h, b1, w2, b2, approximate, gated):
    """What PyTorch runs: the activation and the Linear as separate ops."""
    if gated:
        a, g = h.chunk(2, dim=-1)
        y = act(a, approximate) * g
    else:
        y = act(h if b1 is None else h + b1, approximate)
    return F.linear(y, w2, b2)


def fused(h, b1, w2, b2, approximate, gated):
    if gated:
        return gelu_fusion.geglu_linear(h, w2, b2, approximate)
    return gelu_fusion.bias_gelu_linear(h, b1, w2, b2, approximate)


def make(lead, hidden, out, dtype, bias1, bias2, gated, requires=(True,) * 4):
    hid = 2 * hidden if gated else hidden
    h = (torch.randn(*lead, hid) * 2).to(dtype)
    b1 = torch.randn(hid).to(dtype) if bias1 and not gated else None
    w2 = (torch.randn(out, hidden) / hidden ** 0.5).to(dtype)
    b2 = torch.randn(out).to(dtype) if bias2 else None
    ts = [h, b1, w2, b2]
    for t, r in zip(ts, requires):
        if t is not None:
            t.requires_grad_(r)
    return ts


def run(fn, ts, approximate, gated, dz):
    ts = [None if t is None else t.detach().clone().requires_grad_(t.requires_grad)
          for t in ts]
    z = fn(*ts, approximate, gated)
    grads = [None] * 4
    if z.requires_grad:
        z.backward(dz)
        grads = [None if t is None else t.grad for t in ts]
    return z.detach(), grads


def as64(ts):
    return [None if t is None else t.detach().double().requires_grad_(t.requires_grad)
            for t in ts]


def max_err(got, ref):
    if got is None or ref is None:
        assert got is None and ref is None
        return 0.0
    if got.numel() == 0:
        return 0.0
    return (got.double() - ref).abs().max().item()


@pytest.mark.parametrize("approximate", FORMS)
@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("bias1,bias2", [(True, True), (False, True), (True, False)])
@pytest.mark.parametrize("lead", [(5,), (2, 3), (1,), (0,)])
def test_f32_matches_unfused(approximate, gated, bias1, bias2, lead):
    ts = make(lead, 24, 7, torch.float32, bias1, bias2, gated)
    dz = torch.randn(*lead, 7)
    zf, gf = run(fused, ts, approximate, gated, dz)
    zu, gu = run(unfused, ts, approximate, gated, dz)
    torch.testing.assert_close(zf, zu, rtol=1e-5, atol=1e-5)
    for name, a, b in zip(("h", "b1", "w2", "b2"), gf, gu):
        if a is None or b is None:
            assert a is None and b is None, name
            continue
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5, msg=lambda m: f"{name}: {m}")


@pytest.mark.parametrize("approximate", ("none", "tanh"))
@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("bias1", [True, False])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "f16"])
def test_half_dtypes_as_accurate_as_unfused(approximate, gated, bias1, dtype):
    """bf16 and f16: every result's error against a float64 run of the same
    inputs is within twice the unfused modules' in that dtype (plus half an
    ulp of its scale). PyTorch 1.13 had no float16 matmul or GELU on CPU (the
    node raised as the unfused modules did); PyTorch 2 computes both, and the
    node does too."""
    ts = make((3, 5), 32, 9, dtype, bias1, True, gated)
    dz = torch.randn(3, 5, 9).to(dtype)
    zf, gf = run(fused, ts, approximate, gated, dz)
    zu, gu = run(unfused, ts, approximate, gated, dz)
    z64, g64 = run(unfused, as64(ts), approximate, gated, dz.double())
    unit = torch.finfo(dtype).eps / 2  # bf16 2^-8, f16 2^-11
    for name, a, b, r in zip(("z", "h", "b1", "w2", "b2"), [zf] + gf, [zu] + gu, [z64] + g64):
        if r is None:
            assert a is None and b is None
            continue
        assert a.dtype == dtype, name
        floor = unit * r.abs().max().item()
        assert max_err(a, r) <= 2 * max_err(b, r) + floor, name


@pytest.mark.parametrize("gated", [False, True])
@pytest.mark.parametrize("requires", [r for r in itertools.product([False, True], repeat=4)])
def test_requires_grad_any_subset(gated, requires):
    ts = make((4,), 16, 5, torch.float32, True, True, gated, requires)
    dz = torch.randn(4, 5)
    zf, gf = run(fused, ts, "none", gated, dz)
    zu, gu = run(unfused, ts, "none", gated, dz)
    torch.testing.assert_close(zf, zu, rtol=1e-5, atol=1e-5)
    for a, b in zip(gf, gu):
        assert (a is None) == (b is None)
        if a is not None:
            torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("gated", [False, True])
def test_modules_under_bf16_autocast(gated):
    """The whole block under autocast: fused module against the unfused one
    on the same Parameters; both run their matmuls in bf16."""
    torch.manual_seed(0)
    d, hid = 16, 48
    fc1 = nn.Linear(d, 2 * hid if gated else hid)
    fc2 = nn.Linear(hid, d)
    if gated:
        mod = gelu_fusion.GegluLinear(fc1, fc2)

        def ref(x):
            a, g = fc1(x).chunk(2, dim=-1)
            return fc2(F.gelu(a) * g)
    else:
        mod = gelu_fusion.GeluLinear(fc1, fc2)

        def ref(x):
            return fc2(F.gelu(fc1(x)))
    x = torch.randn(6, d)
    results = []
    for fn in (mod, ref):
        for p in (*fc1.parameters(), *fc2.parameters()):
            p.grad = None
        with torch.autocast("cpu", dtype=torch.bfloat16):
            z = fn(x)
        assert z.dtype == torch.bfloat16
        z.float().sum().backward()
        results.append([z.float()] + [p.grad.clone() for p in (*fc1.parameters(),
                                                               *fc2.parameters())])
    for a, b in zip(*results):
        assert a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=5e-2, atol=5e-2 * b.abs().max().item())


def saved_storages(fn):
    """Runs fn() under saved_tensors_hooks: the tensors autograd keeps for
    the backward, one per distinct storage."""
    kept = {}

    def pack(t):
        kept.setdefault(t.untyped_storage().data_ptr(), t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = fn()
    return out, list(kept.values())


@pytest.mark.parametrize("gated", [False, True])
def test_node_keeps_h_not_y(gated):
    ts = make((8,), 64, 16, torch.float32, True, True, gated)
    h = ts[0]
    z, kept = saved_storages(lambda: fused(*ts, "none", gated))
    y_numel = 8 * 64
    weights = {t.data_ptr() for t in ts[1:] if t is not None}
    big = [t for t in kept if t.numel() >= y_numel and t.data_ptr() not in weights]
    # Of y's size or more, only h (the very tensor passed in) is kept.
    assert [t.data_ptr() for t in big] == [h.data_ptr()]
    # The unfused modules keep y as well (and, gated, geglu's halves).
    _, kept_u = saved_storages(lambda: unfused(*ts, "none", gated))
    assert len([t for t in kept_u
                if t.numel() >= y_numel and t.data_ptr() not in weights]) >= 2
    z.sum().backward()  # the kept tensors suffice


def test_block_activation_bytes_measured():
    """A Linear -> GELU -> Linear block: bytes of the distinct non-Parameter
    storages autograd keeps, fused against PyTorch's modules: d + 4d of
    d + 4d + 4d per token."""
    d = 32
    fc1, fc2 = nn.Linear(d, 4 * d), nn.Linear(4 * d, d)
    params = {p.data_ptr() for p in (*fc1.parameters(), *fc2.parameters())}
    x = torch.randn(64, d, requires_grad=True)

    def activation_bytes(block):
        _, kept = saved_storages(lambda: block(x))
        return sum(t.untyped_storage().nbytes() for t in kept if t.data_ptr() not in params)

    torch_bytes = activation_bytes(lambda v: fc2(F.gelu(fc1(v))))
    fused_bytes = activation_bytes(gelu_fusion.GeluLinear(fc1, fc2))
    assert fused_bytes <= 0.56 * torch_bytes, (fused_bytes, torch_bytes)


@pytest.mark.parametrize("gated", [False, "first", "second"])
def test_double_backward_and_float64_match_unfused(gated):
    """create_graph=True: the node's gradients are differentiable (from
    PyTorch's ops); float64 (no kernel) computes the composition; both
    checked by gradgradcheck against finite differences."""
    torch.manual_seed(0)
    ts = make((3,), 8, 4, torch.float64, True, True, bool(gated))
    half = gated or "first"

    def f(h, b1, w2, b2):
        if gated:
            return gelu_fusion.geglu_linear(h, w2, b2, "tanh", half)
        return gelu_fusion.bias_gelu_linear(h, b1, w2, b2, "tanh")

    args = tuple(t for t in ts if t is not None)
    wrap = (lambda h, w2, b2: f(h, None, w2, b2)) if gated else f
    assert torch.autograd.gradgradcheck(wrap, args)
    # f32 through the kernels: second derivatives as the unfused modules'.
    t32 = [None if t is None else t.detach().float().requires_grad_() for t in ts]
    u32 = [None if t is None else t.detach().float().requires_grad_() for t in ts]

    def unf(h, b1, w2, b2):
        if gated:
            a, g = h.chunk(2, dim=-1)
            if half == "second":
                a, g = g, a
            return F.linear(act(a, "tanh") * g, w2, b2)
        return unfused(h, b1, w2, b2, "tanh", False)

    for fn, ts_ in ((f, t32), (unf, u32)):
        z = fn(*ts_)
        (g,) = torch.autograd.grad(z.square().sum(), ts_[0], create_graph=True)
        g.square().sum().backward()
    for a, b in zip(t32, u32):
        if a is not None:
            torch.testing.assert_close(a.grad, b.grad, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("approximate", FORMS)
@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16, torch.float16))
def test_and_value_ops_match_their_parts(approximate, dtype):
    """Each *_and_value op returns its backward's results, bit for bit, and
    y: the forward op's value (bias_gelu's in f32; in 16-bit dtypes its y
    keeps the f32 math of its dbias sums, so within one ulp)."""
    ops = torch.ops.gelu_fusion
    x = (torch.randn(7, 33) * 3).to(dtype)
    dy = torch.randn(7, 33).to(dtype)
    b = torch.randn(33).to(dtype)
    dx, y = ops.gelu_backward_and_value(dy, x, approximate=approximate)
    assert torch.equal(dx, ops.gelu_backward(dy, x, approximate=approximate))
    assert torch.equal(y, ops.gelu(x, approximate=approximate))
    dx, db, y = ops.bias_gelu_backward_and_value(dy, x, b, approximate=approximate)
    dx0, db0 = ops.bias_gelu_backward(dy, x, b, approximate=approximate)
    assert torch.equal(dx, dx0) and torch.equal(db, db0)
    y0 = ops.bias_gelu(x, b, approximate=approximate)
    if dtype == torch.float32:
        assert torch.equal(y, y0)
    else:
        torch.testing.assert_close(y, y0, rtol=2 * torch.finfo(dtype).eps, atol=0)
    x2 = (torch.randn(7, 66) * 3).to(dtype)
    dx, y = ops.geglu_backward_and_value(dy, x2, approximate=approximate)
    assert torch.equal(dx, ops.geglu_backward(dy, x2, approximate=approximate))
    assert torch.equal(y, ops.geglu(x2, approximate=approximate))


def test_and_value_ops_errors_name_the_argument():
    ops = torch.ops.gelu_fusion
    with pytest.raises(RuntimeError, match="gelu_backward: grad_output|dy has shape"):
        ops.gelu_backward_and_value(torch.randn(3, 4), torch.randn(3, 5))
    with pytest.raises(RuntimeError, match="bias_gelu_backward_and_value: x has dtype"):
        ops.bias_gelu_backward_and_value(torch.randn(3), torch.randn(3).double(),
                                         torch.randn(3))
    with pytest.raises(RuntimeError, match="even last dimension"):
        ops.geglu_backward_and_value(torch.randn(3, 2), torch.randn(3, 5))


def test_modules_check_their_linears():
    with pytest.raises(ValueError, match="fc2.in_features is 5, expected 4"):
        gelu_fusion.GeluLinear(nn.Linear(3, 4), nn.Linear(5, 3))
    with pytest.raises(ValueError, match="expected 10"):
        gelu_fusion.GegluLinear(nn.Linear(3, 4), nn.Linear(5, 3))
    m = gelu_fusion.GeluLinear(nn.Linear(3, 4), nn.Linear(4, 3))
    assert set(m.state_dict()) == {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias"}


def test_from_modules_keeps_the_form():
    fc1, fc2 = nn.Linear(3, 4), nn.Linear(4, 3)
    m = gelu_fusion.GeluLinear.from_modules(fc1, nn.GELU(approximate="tanh"), fc2)
    assert m.approximate == "tanh" and m.fc1 is fc1 and m.fc2 is fc2
    x = torch.randn(5, 3)
    torch.testing.assert_close(m(x), fc2(F.gelu(fc1(x), approximate="tanh")))


@pytest.mark.parametrize("dtype", (torch.float32, torch.bfloat16))
def test_and_value_out_ops_write_y_over_grad_output(dtype):
    """The .out overloads with y = grad_output (what the node passes):
    the same dx, dbias and y as the functional ops, y in dY's buffer."""
    torch.manual_seed(1)
    ops = torch.ops.gelu_fusion
    h, b = (torch.randn(5, 7, 33) * 2).to(dtype), torch.randn(33).to(dtype)
    dy = torch.randn(5, 7, 33).to(dtype)
    want = ops.bias_gelu_backward_and_value(dy, h, b, approximate="tanh")
    buf = dy.clone()
    dx, db = ops.bias_gelu_backward_and_value.out(buf, h, b, approximate="tanh", y=buf)
    for got, w in zip((dx, db, buf), want):
        assert torch.equal(got, w)
    want = ops.gelu_backward_and_value(dy, h)
    buf = dy.clone()
    assert torch.equal(ops.gelu_backward_and_value.out(buf, h, y=buf), want[0])
    assert torch.equal(buf, want[1])
    x2, g = (torch.randn(5, 7, 66) * 2).to(dtype), dy
    for half in ("first", "second"):
        want = ops.geglu_backward_and_value(g, x2, gelu_half=half)
        buf = g.clone()
        assert torch.equal(ops.geglu_backward_and_value.out(buf, x2, gelu_half=half, y=buf),
                           want[0])
        assert torch.equal(buf, want[1])
    with pytest.raises(RuntimeError, match="y has shape"):
        ops.gelu_backward_and_value.out(dy, h, y=torch.empty(3, dtype=dtype))
