"""fuse's save_memory: a GELU (or GeGLU) whose only user is a Linear becomes
one node with it that keeps the GELU's input, not its output. Checked: the
blocks it matches and the ones it leaves (with explain's reason), results
and every gradient against the unfused model (f32 and bf16 autocast), the
tensors autograd keeps after the forward (none of the GELU output's size),
the module tree / Parameters / state_dict keys, save_memory=False, and the
paths that fall back (no grad, float64, TorchScript, forward AD)."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion

D, HID = 16, 64


class MLP(nn.Module):
    def __init__(self, act=None, bias1=True, drop=None, functional=False):
        super().__init__()
        self.fc1 = nn.Linear(D, HID, bias=bias1)
        self.act = act if act is not None else nn.GELU()
        self.drop = drop
        self.fc2 = nn.Linear(HID, D)
        self.functional = functional

    def forward(self, x):
        h = self.act(self.fc1(x))
        if self.drop is not None:
            h = self.drop(h)
        if self.functional:
            return F.linear(h, self.fc2.weight, self.fc2.bias)
        return self.fc2(h)


class GegluMLP(nn.Module):
    def __init__(self, second=False):
        super().__init__()
        self.proj = nn.Linear(D, 2 * HID)
        self.out = nn.Linear(HID, D)
        self.second = second

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return self.out(a * F.gelu(b) if self.second else F.gelu(a) * b)


class T5FF(nn.Module):
    def __init__(self):
        super().__init__()
        self.wi_0 = nn.Linear(D, HID, bias=False)
        self.wi_1 = nn.Linear(D, HID, bias=False)
        self.wo = nn.Linear(HID, D, bias=False)

    def forward(self, x):
        return self.wo(F.gelu(self.wi_0(x), approximate="tanh") * self.wi_1(x))


MODELS = {
    "linear_gelu_linear": lambda: MLP(),
    "no_bias1": lambda: MLP(bias1=False),
    "tanh": lambda: MLP(nn.GELU(approximate="tanh")),
    "f_linear": lambda: MLP(functional=True),
    "dropout_p0": lambda: MLP(drop=nn.Dropout(0.0)),
    "identity": lambda: MLP(drop=nn.Identity()),
    "geglu": lambda: GegluMLP(),
    "geglu_second": lambda: GegluMLP(second=True),
    "t5": lambda: T5FF(),
}


def make(name):
    torch.manual_seed(0)
    m = MODELS[name]()
    with torch.no_grad():
        for n, p in m.named_parameters():
            if n.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    return m


def saved_bytes(fn, params):
    """Bytes of the distinct non-Parameter storages autograd keeps for the
    backward of fn(), and their sizes in elements."""
    kept = {}

    def pack(t):
        kept.setdefault(t.untyped_storage().data_ptr(), t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fn()
    ptrs = {p.data_ptr() for p in params}
    ts = [t for t in kept.values() if t.untyped_storage().data_ptr() not in ptrs]
    return (sum(t.untyped_storage().nbytes() for t in ts),
            sorted(t.untyped_storage().nbytes() // t.element_size() for t in ts))


def grads(model, x, autocast=False):
    x = x.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = model(x)
    (y.float() * torch.linspace(-1, 1, y.numel()).reshape(y.shape)).sum().backward()
    g = {n: p.grad for n, p in model.named_parameters()}
    g["input"] = x.grad
    return y.detach().float(), g


@pytest.mark.parametrize("autocast", [False, True], ids=["f32", "bf16_autocast"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_fused_node_matches_unfused_and_keeps_no_gelu_output(name, autocast):
    ref = make(name)
    fused = gelu_fusion.fuse(copy.deepcopy(ref))
    report = gelu_fusion.explain(ref, print_table=False)
    assert "keeping the GELU's input" in report.sites[0].reason, report.table()
    x = torch.randn(2, 5, D) * 2
    y0, g0 = grads(ref, x, autocast)
    y1, g1 = grads(fused, x, autocast)
    tol = 3e-2 if autocast else 2e-5
    assert float((y1 - y0).abs().max()) <= tol * (float(y0.abs().max()) + 1e-6)
    for k in g0:
        err = float((g1[k].float() - g0[k].float()).abs().max())
        assert err <= tol * (float(g0[k].abs().max()) + 1e-6), k
    if not autocast:
        # The node keeps the GELU's input, not its output: one hidden-sized
        # tensor less than fuse(save_memory=False) (x's copy requires grad).
        plain = gelu_fusion.fuse(copy.deepcopy(ref), save_memory=False)
        params = list(plain.parameters()) + list(fused.parameters())
        b0, _ = saved_bytes(lambda: plain(x.clone().requires_grad_()), params)
        b1, _ = saved_bytes(lambda: fused(x.clone().requires_grad_()), params)
        assert b1 <= b0 - 2 * 5 * HID * 4, (b1, b0)


def test_save_memory_false_keeps_the_plain_fusion():
    m = make("linear_gelu_linear")
    report = gelu_fusion.explain(m, save_memory=False, print_table=False)
    assert report.sites[0].result == "bias_gelu"
    assert "keeping the GELU's input" not in report.sites[0].reason
    fused = gelu_fusion.fuse(copy.deepcopy(m), save_memory=False)
    x = torch.randn(10, D, requires_grad=True)
    _, kept = saved_bytes(lambda: fused(x), m.parameters())
    assert kept.count(10 * HID) == 2  # h and y, as PyTorch
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    _, kept = saved_bytes(lambda: fused(x), m.parameters())
    assert kept.count(10 * HID) == 1  # h only


def test_dropout_between_is_left_and_explained():
    m = MLP(drop=nn.Dropout(0.1))
    report = gelu_fusion.explain(m, print_table=False)
    assert report.sites[0].result == "bias_gelu"
    assert "dropout between the GELU and the next Linear" in report.sites[0].reason
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    assert isinstance(fused.drop, nn.Dropout)
    x = torch.randn(4, D)
    torch.manual_seed(3)
    a = m(x)
    torch.manual_seed(3)
    b = fused(x)
    torch.testing.assert_close(a, b)


def test_gelu_output_with_another_use_is_left():
    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1, self.fc2 = nn.Linear(D, HID), nn.Linear(HID, D)

        def forward(self, x):
            h = F.gelu(self.fc1(x))
            return self.fc2(h), h.sum()

    report = gelu_fusion.explain(Two(), print_table=False)
    assert "another use than the Linear" in report.sites[0].reason


def test_module_tree_parameters_and_state_dict_kept():
    m = make("linear_gelu_linear")
    params = list(m.named_parameters())
    keys = list(m.state_dict())
    fused = gelu_fusion.fuse(m)
    assert [(n, id(p)) for n, p in fused.named_parameters()] == \
        [(n, id(p)) for n, p in params]
    assert list(fused.state_dict()) == keys
    assert type(fused.fc1) is nn.Linear and type(fused.fc2) is nn.Linear
    assert gelu_fusion.fuse(fused) is fused  # nothing left to change
    again = gelu_fusion.explain(fused, print_table=False)
    assert [s.reason for s in again.sites] == ["fused already"]


def test_fallbacks_compute_the_same():
    m = make("linear_gelu_linear")
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    x = torch.randn(3, D)
    with torch.no_grad():
        torch.testing.assert_close(fused(x), m(x))
    md, fd = copy.deepcopy(m).double(), copy.deepcopy(fused).double()
    xd = x.double().requires_grad_()
    fd(xd).sum().backward()
    xr = x.double().requires_grad_()
    md(xr).sum().backward()
    torch.testing.assert_close(xd.grad, xr.grad)
    scripted = torch.jit.script(copy.deepcopy(fused).eval())
    with torch.no_grad():
        torch.testing.assert_close(scripted(x), m(x), rtol=2e-5, atol=2e-5)


def test_forward_ad_falls_back():
    import torch.autograd.forward_ad as fwAD
    m = make("linear_gelu_linear")
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    x, t = torch.randn(3, D), torch.randn(3, D)
    with fwAD.dual_level():
        a = fwAD.unpack_dual(m(fwAD.make_dual(x, t))).tangent
        b = fwAD.unpack_dual(fused(fwAD.make_dual(x, t))).tangent
    torch.testing.assert_close(b, a, rtol=2e-5, atol=2e-5)
