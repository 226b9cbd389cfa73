"""gelu_fusion.fuse pattern by pattern: the spellings each pass matches,
the ones it must refuse (and the reason it gives), its options, hooks,
modules it must not trace whole, and the checks made at each call."""
import copy
import math

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion
from gelu_fusion.fusion import runtime as rt
from gelu_fusion.fusion.call import installed


class Fn(nn.Module):
    """A Linear, then `fn` of its output (the spelling under test)."""

    def __init__(self, fn, d=16, bias=True):
        super().__init__()
        self.fc = nn.Linear(d, d, bias=bias)
        self.fn = fn

    def forward(self, x):
        return self.fn(self.fc(x))


def check(model, x=None, results=None, tol=2e-5, **opts):
    """Fuses a copy of `model`, checks outputs and gradients against it,
    and returns the report."""
    x = torch.randn(3, 16) * 3 if x is None else x
    report = gelu_fusion.explain(model, print_table=False, **opts)
    if results is not None:
        assert [s.result for s in report.sites] == results, report.table()
    ref = copy.deepcopy(model)
    fused = gelu_fusion.fuse(model, **opts)
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = ref(xa), fused(xb)
    assert float((ya - yb).abs().max()) <= tol * (float(ya.abs().max()) + 1)
    ya.square().sum().backward()
    yb.square().sum().backward()
    assert float((xa.grad - xb.grad).abs().max()) <= tol * (float(xa.grad.abs().max()) + 1)
    for (n, p), (_, q) in zip(ref.named_parameters(), fused.named_parameters()):
        assert float((p.grad - q.grad).abs().max()) <= tol * (float(p.grad.abs().max()) + 1), n
    return report, fused


SQ2, SQ2PI = math.sqrt(2.0), math.sqrt(2.0 / math.pi)

ERF_SPELLINGS = {
    "hf_gelu_python": lambda x: x * 0.5 * (1.0 + torch.erf(x / math.sqrt(2.0))),
    "times_0.7071": lambda x: 0.5 * x * (1 + torch.erf(x * 0.7071067811865476)),
    "div_1.41421": lambda x: x * (1.0 + torch.erf(x / 1.41421)) / 2,
    "method_erf": lambda x: (x * 0.5) * (x / SQ2).erf().add(1.0),
    "special_erf": lambda x: 0.5 * x * (torch.special.erf(x / SQ2) + 1),
    "cdf_then_mul": lambda x: x * (0.5 * (1.0 + torch.erf(x / SQ2))),
}
TANH_SPELLINGS = {
    "hf_gelu_new_pow": lambda x: 0.5 * x * (1.0 + torch.tanh(
        SQ2PI * (x + 0.044715 * torch.pow(x, 3.0)))),
    "x_x_x": lambda x: 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x))),
    "factored_x_x": lambda x: 0.5 * x * (1.0 + torch.tanh(
        x * 0.7978845608 * (1.0 + 0.044715 * x * x))),
    "pow_operator": lambda x: x * 0.5 * (1 + (SQ2PI * (x + 0.044715 * x ** 3)).tanh()),
    "distributed": lambda x: 0.5 * x + 0.5 * x * torch.tanh(
        SQ2PI * x + SQ2PI * 0.044715 * x ** 3),
}
QUICK_SPELLINGS = {
    "clip_quick_gelu": lambda x: x * torch.sigmoid(1.702 * x),
    "method_sigmoid": lambda x: (x * 1.702).sigmoid() * x,
}


@pytest.mark.parametrize("form,spelling", [("none", k) for k in ERF_SPELLINGS]
                         + [("tanh", k) for k in TANH_SPELLINGS]
                         + [("quick", k) for k in QUICK_SPELLINGS])
def test_formula_spellings_become_bias_gelu(form, spelling):
    fn = {**ERF_SPELLINGS, **TANH_SPELLINGS, **QUICK_SPELLINGS}[spelling]
    report, _ = check(Fn(fn), results=["bias_gelu"])
    assert report.sites[0].form == form
    assert report.sites[0].pattern.endswith("formula")
    # without approximate_match, the formula is not a site
    assert gelu_fusion.explain(Fn(fn), approximate_match=False,
                               print_table=False).sites == []


@pytest.mark.parametrize("fn", [
    lambda x: 0.5 * x * (1.0 + torch.erf(x / 1.5)),                 # constant off
    lambda x: 0.5 * x * (1 + torch.tanh(SQ2PI * (x + 0.05 * x ** 3))),
    lambda x: x * torch.sigmoid(x),                                   # SiLU
    lambda x: 0.5 * x * (1.0 + torch.tanh(SQ2PI * x)),               # no cubic
    lambda x: 0.4 * x * (1.0 + torch.erf(x / SQ2)),                  # outer 0.4
], ids=["erf_1.5", "tanh_0.05", "silu", "tanh_no_cubic", "outer_0.4"])
def test_other_formulas_are_not_gelu(fn):
    with pytest.warns(UserWarning, match="found no GELU"):
        report, _ = check(Fn(fn), results=[])


def test_formula_with_a_second_use_is_left_with_the_reason():
    def fn(x):
        t = torch.tanh(SQ2PI * (x + 0.044715 * x ** 3))
        return 0.5 * x * (1.0 + t) + t
    report, fused = check(Fn(fn), results=["unchanged"])
    assert "has another use" in report.sites[0].reason


def test_linear_output_with_a_second_use_keeps_its_bias():
    report, _ = check(Fn(lambda h: F.gelu(h) * h), results=["gelu"])


@pytest.mark.parametrize("spelling", ["F.linear", "matmul_plus_bias", "addmm"])
def test_bias_spellings(spelling):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.weight = nn.Parameter(torch.randn(24, 16) / 4)
            self.bias = nn.Parameter(torch.randn(24))

        def forward(self, x):
            if spelling == "F.linear":
                h = F.linear(x, self.weight, self.bias)
            elif spelling == "matmul_plus_bias":
                h = x @ self.weight.t() + self.bias
            else:
                h = torch.addmm(self.bias, x, self.weight.t())
            return F.gelu(h, approximate="tanh")
    check(M(), results=["bias_gelu"])


def test_options_turn_passes_off():
    check(Fn(nn.GELU()), results=["gelu"], bias=False)

    class Res(nn.Module):
        def forward(self, a):
            return F.gelu(a + a.flip(-1))
    check(Res(), results=["gelu"], add=False)
    check(Res(), results=["add_gelu"])


def op_names(model, *xs):
    """The op names a forward of `model` leaves in a profile."""
    with torch.no_grad(), torch.profiler.profile(
            activities=[torch.profiler.ProfilerActivity.CPU]) as p:
        model(*xs)
    return {e.key for e in p.key_averages()}


def assert_fused_op(fused, x, op):
    names = op_names(fused, x)
    assert f"gelu_fusion::{op}" in names, sorted(names)
    assert "aten::gelu" not in names, sorted(names)


class AddThenGelu(nn.Module):
    """gelu(a + b) where b = other(a) may broadcast or have another dtype."""

    def __init__(self, other):
        super().__init__()
        self.other = other

    def forward(self, a):
        return F.gelu(a + self.other(a), approximate="tanh")


@pytest.mark.parametrize("other,op", [
    (lambda a: a[:1], "bias_gelu"),                        # [3, 16] + [1, 16]
    (lambda a: a[:, :1] * 2, "add_gelu"),                  # [3, 16] + [3, 1]
    (lambda a: a.unsqueeze(0).flip(-1), "add_gelu"),       # [1, 3, 16]: grows
    (lambda a: a.flip(-1).bfloat16(), "add_gelu"),         # bf16: promotes
    (lambda a: a.sum(0).double(), "add_gelu"),             # f64 [16]: f64 sum
], ids=["bias_row", "column", "leading_dim", "bf16_addend", "f64_row"])
def test_add_gelu_broadcasts_and_promotes_as_a_plus_b(other, op):
    """The add rule feeds add_gelu whatever `a + b` accepts: it broadcasts
    (a bias-shaped addend runs bias_gelu's kernel) and promotes; values,
    dtype and gradients as the unfused model's."""
    m = AddThenGelu(other)
    report, fused = check(m, results=["add_gelu"])
    assert "checked at each call" in report.sites[0].reason
    x = torch.randn(3, 16) * 3
    assert fused(x).dtype == m(x).dtype
    if op == "add_gelu" and m(x).dtype == torch.float64:
        op = "gelu"  # no float64 kernel: PyTorch's composition, as a + b
        assert "aten::gelu" in op_names(fused, x)
    else:
        assert_fused_op(fused, x, op)


class BiasOfDtype(nn.Module):
    """A bias written out (y + b) whose Parameter has another dtype."""

    def __init__(self, dtype):
        super().__init__()
        self.fc = nn.Linear(16, 24, bias=False)
        self.b = nn.Parameter(torch.randn(24).to(dtype))

    def forward(self, x):
        return F.gelu(self.fc(x) + self.b)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_bias_of_another_dtype_is_bias_gelu_with_promotion(dtype):
    """f32 activations + a bf16/f16 bias: y + b promotes to f32, and so does
    the fused bias_gelu (the bias's gradient comes back in its dtype)."""
    m = BiasOfDtype(dtype)
    report, fused = check(m, results=["bias_gelu"], tol=1e-2)
    x = torch.randn(3, 16)
    assert fused(x).dtype == torch.float32
    assert_fused_op(fused, x, "bias_gelu")
    xa = x.clone().requires_grad_()
    fused(xa).sum().backward()
    assert fused.b.grad.dtype == dtype


def test_bias_written_out_of_another_shape_is_add_gelu():
    """y + b with b a [1, 24] buffer: not a 1-D bias, but add_gelu's bias
    route still runs bias_gelu's kernel."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 24, bias=False)
            self.register_buffer("b", torch.randn(1, 24))

        def forward(self, x):
            return F.gelu(self.fc(x) + self.b)
    report, fused = check(M(), results=["add_gelu"])
    assert_fused_op(fused, torch.randn(3, 16), "bias_gelu")


def test_add_of_a_size_is_not_add_gelu():
    class M(nn.Module):
        def forward(self, x):
            return F.gelu(x + x.size(-1) * 0.01) + F.gelu(x.shape[0] + x)
    check(M(), results=["gelu", "gelu"])


def test_bias_written_out_keeps_promotion_under_autocast():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = nn.Linear(16, 24, bias=False)
            self.b = nn.Parameter(torch.randn(24))

        def forward(self, x):
            return F.gelu(self.fc(x) + self.b)
    m = M()
    report, fused = check(m, results=["bias_gelu"])
    x = torch.randn(3, 16)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        want, got = copy.deepcopy(m)(x), fused(x)
        names = op_names(fused, x)
    assert got.dtype == want.dtype == torch.float32  # bf16 + f32 promotes
    torch.testing.assert_close(got, want)
    # and the promoted sum still runs the fused kernel
    assert "gelu_fusion::bias_gelu" in names and "aten::gelu" not in names


@pytest.mark.parametrize("how", ["chunk", "torch.chunk", "split", "split_list", "slices"])
def test_geglu_gate_first_spellings(how):
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 20)

        def forward(self, x):
            h = self.proj(x)
            if how == "chunk":
                a, b = h.chunk(2, dim=-1)
            elif how == "torch.chunk":
                a, b = torch.chunk(h, 2, -1)
            elif how == "split":
                a, b = h.split(10, dim=-1)
            elif how == "split_list":
                a, b = torch.split(h, [10, 10], dim=-1)
            else:
                a, b = h[..., :10], h[..., 10:]
            return F.gelu(a) * b
    check(M(), results=["geglu"])


@pytest.mark.parametrize("how", ["chunk", "slices"])
def test_geglu_gelu_on_the_second_half(how):
    """diffusers' GEGLU order: h * gelu(gate), gate the second half."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(16, 20)

        def forward(self, x):
            if how == "chunk":
                h, gate = self.proj(x).chunk(2, dim=-1)
            else:
                p = self.proj(x)
                h, gate = p[..., :10], p[..., 10:]
            return h * F.gelu(gate, approximate="tanh")
    if rt.HAS_GELU_HALF:
        m = M()
        report, fused = check(m, results=["geglu"])
        assert "second half" in report.sites[0].reason
        # geglu(x, gelu_half='second') has gelu_fusion.geglu's fallbacks:
        # the fused model keeps working in float64 (PyTorch's composition).
        x = torch.randn(3, 16, dtype=torch.float64)
        torch.testing.assert_close(fused.double()(x), m.double()(x))
    else:
        report, _ = check(M(), results=["gelu"])
        assert "no gelu_half" in report.sites[0].reason


@pytest.mark.skipif(not rt.HAS_GELU_HALF, reason="geglu op without gelu_half")
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("form", ["none", "tanh", "quick"])
def test_geglu_op_gelu_half_second(form, dtype):
    """geglu(x, gelu_half='second') is geglu of x with its halves swapped,
    bit for bit, forward and backward; a bad value raises."""
    x = (torch.randn(5, 2, 22) * 3).to(dtype)
    swapped = torch.cat([x[..., 11:], x[..., :11]], -1)
    xa, xb = x.clone().requires_grad_(), swapped.clone().requires_grad_()
    ya = torch.ops.gelu_fusion.geglu(xa, approximate=form, gelu_half="second")
    yb = torch.ops.gelu_fusion.geglu(xb, approximate=form)
    assert torch.equal(ya, yb)
    dy = torch.randn_like(ya)
    ya.backward(dy)
    yb.backward(dy)
    assert torch.equal(xa.grad, torch.cat([xb.grad[..., 11:], xb.grad[..., :11]], -1))
    ref = x.double()[..., :11] * F.gelu(x.double()[..., 11:],
                                        approximate="tanh" if form == "tanh" else "none") \
        if form != "quick" else x.double()[..., :11] * x.double()[..., 11:] * \
        torch.sigmoid(1.702 * x.double()[..., 11:])
    tol = 1e-5 if dtype == torch.float32 else 1e-2
    assert float((ya.double() - ref).abs().max()) <= tol * (float(ref.abs().max()) + 1)
    with pytest.raises(RuntimeError, match="gelu_half is 'last', expected 'first' or 'second'"):
        torch.ops.gelu_fusion.geglu(x, gelu_half="last")
    out = torch.empty(5, 2, 11, dtype=dtype)
    torch.ops.gelu_fusion.geglu(x, approximate=form, gelu_half="second", out=out)
    assert torch.equal(out, ya.detach())


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("order", ["gate_first", "gate_second"])
def test_geglu_two_linears_either_order(bias, order):
    class T5(nn.Module):
        def __init__(self):
            super().__init__()
            self.wi_0 = nn.Linear(16, 12, bias=bias)
            self.wi_1 = nn.Linear(16, 12, bias=bias)

        def forward(self, x):
            if order == "gate_first":
                return F.gelu(self.wi_0(x)) * self.wi_1(x)
            return self.wi_1(x) * F.gelu(self.wi_0(x))
    report, fused = check(T5(), results=["geglu"])
    assert type(fused.wi_0) is nn.Linear and type(fused.wi_1) is nn.Linear


@pytest.mark.parametrize("second", [False, True], ids=["gate_first", "gelu_second"])
@pytest.mark.parametrize("how", ["chunk_dim1", "split_dim1", "slices_2d"])
def test_geglu_halves_along_a_numbered_dim(how, second):
    """Halves along dim=1 (or x[:, :H]) are a GeGLU when dim 1 is the last
    (2-D input: fused geglu); on a 3-D input the fused model computes the
    model's own expression along dim 1."""
    class M(nn.Module):
        def forward(self, h):
            if how == "chunk_dim1":
                a, b = h.chunk(2, dim=1)
            elif how == "split_dim1":
                a, b = h.split(8, 1)
            else:
                a, b = h[:, :8], h[:, 8:]
            return a * F.gelu(b) if second else F.gelu(a) * b
    report, fused = check(M(), x=torch.randn(3, 16) * 3, results=["geglu"])
    assert_fused_op(fused, torch.randn(3, 16), "geglu")
    x = torch.randn(2, 16, 5)  # dim 1 is not the last: no GeGLU
    xa, xb = x.clone().requires_grad_(), x.clone().requires_grad_()
    ya, yb = M()(xa), fused(xb)
    torch.testing.assert_close(yb, ya)
    ya.sum().backward()
    yb.sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad)


def test_geglu_split_of_odd_size_computes_the_model_expression():
    class M(nn.Module):
        def forward(self, x):
            a, b = x.split(8, dim=-1)
            return F.gelu(a) * b
    report, fused = check(M(), x=torch.randn(3, 16), results=["geglu"])
    x = torch.randn(3, 9)  # halves of 8 and 1: not a GeGLU; broadcasting mul
    torch.testing.assert_close(fused(x), M()(x))


@pytest.mark.parametrize("second", [False, True], ids=["gate_first", "gelu_second"])
def test_geglu_split_into_more_pieces_computes_the_model_expression(second):
    """split(8) of a last dim of 24 has three pieces; the model uses two:
    not a GeGLU at that size, and the fused model computes the same."""
    class M(nn.Module):
        def forward(self, x):
            parts = x.split(8, dim=-1)
            a, b = parts[0], parts[1]
            return a * F.gelu(b) if second else F.gelu(a) * b
    check(M(), x=torch.randn(3, 16), results=["geglu"])
    fused = gelu_fusion.fuse(M())
    x = torch.randn(3, 24)
    torch.testing.assert_close(fused(x), M()(x))


def test_linear_with_a_hook_keeps_its_bias_and_the_hook_fires():
    m = Fn(nn.GELU())
    calls = []
    m.fc.register_forward_hook(lambda mod, i, o: calls.append(1))
    report, fused = check(m, results=["gelu"])
    assert "has hooks" in report.sites[0].reason
    calls.clear()
    fused(torch.randn(2, 16))
    assert calls == [1]


def test_module_with_a_hook_is_fused_inside_and_the_hook_fires():
    outer = nn.Sequential(Fn(nn.GELU()), nn.Linear(16, 4))
    calls = []
    outer[0].register_forward_hook(lambda mod, i, o: calls.append(1))
    report, fused = check(outer, results=["bias_gelu"])
    calls.clear()
    fused(torch.randn(2, 16))
    assert calls == [1]


def test_forward_that_depends_on_training_is_not_traced_whole():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.inner = Fn(nn.GELU())

        def forward(self, x):
            return F.dropout(self.inner(x), 0.5, self.training)
    m = M().eval()
    report, fused = check(m, results=["bias_gelu"])
    assert any("self.training" in why for _, why in report.untraced), report.table()
    assert fused is m and installed(fused.inner) is not None
    fused.train()
    torch.manual_seed(0)
    y = fused(torch.ones(64, 16))
    assert float((y == 0).float().mean()) > 0.2  # dropout still drops in training


def test_optional_none_argument_is_not_traced_whole():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.mlp = Fn(nn.GELU("tanh"))

        def forward(self, x, mask=None):
            if mask is not None:
                x = x * mask
            return self.mlp(x)
    m = M()
    report, fused = check(m, results=["bias_gelu"])
    assert "mask=None" in report.table()
    x, mask = torch.randn(2, 16), torch.rand(2, 16)
    torch.testing.assert_close(fused(x, mask), M.forward(m, x, mask))


def test_transformer_encoder_layer_keeps_the_native_fast_path_in_inference():
    layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation="gelu",
                                       batch_first=True)
    ref = copy.deepcopy(layer)
    fused = gelu_fusion.fuse(layer)
    assert fused is layer and isinstance(fused, nn.TransformerEncoderLayer)
    x = torch.randn(2, 5, 32)

    def ops(m):
        with torch.profiler.profile() as p:
            m(x)
        return {e.key for e in p.key_averages()}

    fused.eval()
    ref.eval()
    with torch.no_grad():
        assert "aten::_transformer_encoder_layer_fwd" in ops(fused)
        torch.testing.assert_close(fused(x), ref(x), rtol=1e-5, atol=1e-5)
    fused.train()
    train_ops = ops(fused)
    assert "gelu_fusion::bias_gelu" in train_ops and "aten::gelu" not in train_ops


def test_model_without_gelu_warns():
    with pytest.warns(UserWarning, match="found no GELU"):
        out = gelu_fusion.fuse(nn.Sequential(nn.Linear(4, 4), nn.ReLU()))
    assert isinstance(out, nn.Sequential)


def test_fuse_rejects_a_non_module():
    with pytest.raises(TypeError, match="expected a torch.nn.Module"):
        gelu_fusion.fuse(lambda x: x)


def test_nn_gelu_subclass_keeps_its_behaviour():
    class ScaledGELU(nn.GELU):
        def __init__(self):
            super().__init__()
            self.scale = nn.Parameter(torch.tensor(2.0))

        def forward(self, x):
            return super().forward(x) * self.scale
    m = Fn(ScaledGELU())
    keys = list(m.state_dict())
    report, fused = check(m, results=["bias_gelu"])
    assert list(fused.state_dict()) == keys and "fn.scale" in keys
