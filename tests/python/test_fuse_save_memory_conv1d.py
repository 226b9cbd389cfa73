"""fuse's save_memory with Hugging Face's Conv1D (GPT-2's MLP) as the Linear
after the GELU: matched (explain says so), results and every gradient equal
to the unfused model's (f32, bf16 autocast), the GELU's output not among
the tensors autograd keeps, Parameters / state_dict / an optimizer built
before fuse unchanged, and the refusals (another use of the GELU's output,
hooks on the Conv1D) with explain's reason."""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion
import model_zoo
from test_fuse_save_memory import grads, saved_bytes

D, HID = 16, 64
TOKENS = 10  # x is [2, 5, D]


class Conv1DThenLinear(nn.Module):
    """A Conv1D before the GELU and an nn.Linear after it."""

    def __init__(self):
        super().__init__()
        self.c_fc = model_zoo.Conv1D(HID, D)
        self.fc2 = nn.Linear(HID, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.c_fc(x), approximate="tanh"))


class GeluThenConv1D(nn.Module):
    """nn.Linear (no bias) -> GELU -> Conv1D: the plain gelu node extended."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(D, HID, bias=False)
        self.c_proj = model_zoo.Conv1D(D, HID)

    def forward(self, x):
        return self.c_proj(F.gelu(self.fc1(x)))


class GPT2MLPTwoUses(model_zoo.GPT2MLP):
    """The GELU's output is also returned: it must stay."""

    def forward(self, x):
        h = self.act(self.c_fc(x))
        return self.c_proj(h), h


MODELS = {
    "gpt2_gelu_new": lambda: model_zoo.gpt2_mlp(hidden=D, inner=HID, act="gelu_new"),
    "gpt2_gelu": lambda: model_zoo.gpt2_mlp(hidden=D, inner=HID, act="gelu"),
    "gpt2_gelu_fast": lambda: model_zoo.gpt2_mlp(hidden=D, inner=HID, act="gelu_fast"),
    "conv1d_then_linear": Conv1DThenLinear,
    "gelu_then_conv1d": GeluThenConv1D,
}


def make(name):
    torch.manual_seed(0)
    m = MODELS[name]()
    with torch.no_grad():  # non-zero biases, so a lost bias shows
        for n, p in m.named_parameters():
            if n.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    return m


def x_in():
    return torch.randn(2, 5, D, generator=torch.Generator().manual_seed(1)) * 2


@pytest.mark.parametrize("autocast", [False, True], ids=["f32", "bf16_autocast"])
@pytest.mark.parametrize("name", sorted(MODELS))
def test_fused_with_conv1d_matches_unfused(name, autocast):
    ref = make(name)
    report = gelu_fusion.explain(ref, print_table=False)
    assert len(report.sites) == 1, report.table()
    assert "keeping the GELU's input" in report.sites[0].reason, report.table()
    fused = gelu_fusion.fuse(copy.deepcopy(ref))
    x = x_in()
    y0, g0 = grads(ref, x, autocast)
    y1, g1 = grads(fused, x, autocast)
    assert y1.shape == y0.shape
    tol = 3e-2 if autocast else 2e-5
    assert float((y1 - y0).abs().max()) <= tol * (float(y0.abs().max()) + 1e-6)
    assert sorted(g1) == sorted(g0)  # input and every Parameter
    for k in g0:
        assert g1[k].shape == g0[k].shape, k
        err = float((g1[k].float() - g0[k].float()).abs().max())
        assert err <= tol * (float(g0[k].abs().max()) + 1e-6), k


def _gelu_output(model, x):
    """The unfused model's GELU output for x (what must not be kept)."""
    out = {}
    act = next(m for m in model.modules()
               if type(m).__name__.endswith("GELUActivation"))
    handle = act.register_forward_hook(lambda m, i, o: out.setdefault("y", o.detach()))
    with torch.no_grad():
        model(x)
    handle.remove()
    return out["y"]


@pytest.mark.parametrize("name", ["gpt2_gelu_new", "gpt2_gelu"])
def test_gelu_output_not_kept(name):
    ref = make(name)
    x = x_in()
    y = _gelu_output(ref, x)
    plain = gelu_fusion.fuse(copy.deepcopy(ref), save_memory=False)
    fused = gelu_fusion.fuse(copy.deepcopy(ref))
    params = list(plain.parameters()) + list(fused.parameters())
    _, kept0 = saved_bytes(lambda: plain(x.clone().requires_grad_()), params)
    assert kept0.count(TOKENS * HID) == 2  # the GELU's input and output, as PyTorch
    kept = []

    def pack(t):
        kept.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        fused(x.clone().requires_grad_())
    hidden = [t for t in kept if t.numel() == TOKENS * HID]
    assert len({t.untyped_storage().data_ptr() for t in hidden}) == 1  # the GELU's input only
    for t in hidden:
        assert not torch.allclose(t.reshape(y.shape).float(), y, atol=1e-3)
    _, kept1 = saved_bytes(lambda: fused(x.clone().requires_grad_()), params)
    assert kept1.count(TOKENS * HID) == 1


def test_parameters_state_dict_and_optimizer_kept():
    m = make("gpt2_gelu_new")
    ref = copy.deepcopy(m)
    params = [(n, id(p)) for n, p in m.named_parameters()]
    keys = list(m.state_dict())
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    fused = gelu_fusion.fuse(m)
    assert [(n, id(p)) for n, p in fused.named_parameters()] == params
    assert list(fused.state_dict()) == keys
    assert type(fused.c_fc).__name__ == "Conv1D" and type(fused.c_proj).__name__ == "Conv1D"
    assert fused.c_proj.weight.shape == (HID, D)  # stored [in, out], as Conv1D keeps it
    x = x_in()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for model, o in ((fused, opt), (ref, ref_opt)):
        o.zero_grad()
        (model(x) ** 2).sum().backward()
        o.step()
    for (n, p), q in zip(fused.named_parameters(), ref.parameters()):
        assert p.grad is not None and p.grad.shape == p.shape, n
        torch.testing.assert_close(p, q, rtol=1e-5, atol=1e-6, msg=n)
    assert not torch.equal(fused.c_proj.weight, make("gpt2_gelu_new").c_proj.weight)
    again = gelu_fusion.explain(fused, print_table=False)
    assert [s.reason for s in again.sites] == ["fused already"]
    assert gelu_fusion.fuse(fused) is fused


def test_explain_names_the_conv1d():
    report = gelu_fusion.explain(make("gpt2_gelu_new"), print_table=False)
    (site,) = report.sites
    assert site.result == "bias_gelu"
    assert "with the next Conv1D `c_proj` (as a Linear on its weight.t())" in site.reason
    assert "keeping the GELU's input, not its output" in site.reason
    off = gelu_fusion.explain(make("gpt2_gelu_new"), save_memory=False, print_table=False)
    assert "Conv1D" not in off.sites[0].reason


def test_gelu_output_with_another_use_is_refused():
    torch.manual_seed(0)
    cfg = model_zoo.Config(D, HID)
    cfg.activation_function = "gelu_new"
    m = GPT2MLPTwoUses(HID, cfg)
    report = gelu_fusion.explain(m, print_table=False)
    (site,) = report.sites
    assert site.result == "bias_gelu"
    assert "memory saving not applied: the GELU's output has another use than the Conv1D" \
        in site.reason, site.reason
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    x = x_in()
    for a, b in zip(fused(x), m(x)):
        torch.testing.assert_close(a, b, rtol=2e-5, atol=2e-5)


def test_conv1d_with_hooks_is_refused_and_hook_fires():
    m = make("gpt2_gelu_new")
    calls = []
    m.c_proj.register_forward_hook(lambda mod, i, o: calls.append(o.shape))
    report = gelu_fusion.explain(m, print_table=False)
    (site,) = report.sites
    assert "memory saving not applied: c_proj has hooks" in site.reason, site.reason
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    x = x_in()
    torch.testing.assert_close(fused(x), m(x), rtol=2e-5, atol=2e-5)
    assert len(calls) == 2


def test_no_grad_and_float64_fall_back():
    m = make("gpt2_gelu_new")
    fused = gelu_fusion.fuse(copy.deepcopy(m))
    x = x_in()
    with torch.no_grad():
        torch.testing.assert_close(fused(x), m(x), rtol=2e-5, atol=2e-5)
    md, fd = copy.deepcopy(m).double(), copy.deepcopy(fused).double()
    xa, xb = x.double().requires_grad_(), x.double().requires_grad_()
    md(xa).sum().backward()
    fd(xb).sum().backward()
    torch.testing.assert_close(xb.grad, xa.grad)
    torch.testing.assert_close(fd.c_proj.weight.grad, md.c_proj.weight.grad)
