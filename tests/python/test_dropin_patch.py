"""patch() never changes what a model computes: subclasses of nn.GELU are
left alone, fuse_bias keeps the nn.Linear (object, type, hooks, parameter
grouping), and a patched model traces (torch.fx), scripts, quantizes,
converts (.double(), meta), copies and pickles."""
import copy
import io
import pickle

import pytest
import torch
from torch import nn

import gelu_fusion
from conftest import inputs


class ScaledGELU(nn.GELU):
    """A subclass that changes the result and owns a Parameter."""

    def __init__(self):
        super().__init__("tanh")
        self.scale = nn.Parameter(torch.tensor(2.0))

    def forward(self, x):
        return super().forward(x) * self.scale


def mlp(act=None):
    torch.manual_seed(0)
    return nn.Sequential(nn.Linear(8, 16), act if act is not None else nn.GELU(),
                         nn.Linear(16, 16), nn.GELU("tanh"), nn.Linear(16, 4))


X = inputs((5, 8), torch.float32, scale=1.0)


def same_outputs(a, b, x=X, tol=1e-5):
    torch.testing.assert_close(a(x), b(x), rtol=tol, atol=tol)


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_subclass_of_gelu_is_left_alone(fuse_bias):
    ref = mlp(ScaledGELU())
    model = copy.deepcopy(ref)
    r = gelu_fusion.patch(model, fuse_bias=fuse_bias)
    assert type(model[1]) is ScaledGELU
    assert "1.scale" in model.state_dict()
    assert ("1", "ScaledGELU is a subclass of nn.GELU: only nn.GELU itself "
                 "is swapped") in r.skipped
    assert r == 1  # only the exact nn.GELU at index 3
    same_outputs(model, ref)


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_result_is_an_int_that_says_what_it_did(fuse_bias):
    model = mlp()
    r = gelu_fusion.patch(model, fuse_bias=fuse_bias)
    assert isinstance(r, int) and r == 2 and r + 0 == 2
    if fuse_bias:
        assert r.fused == [("0", "1"), ("2", "3")] and r.swapped == []
    else:
        assert r.swapped == ["1", "3"] and r.fused == []
    assert "PatchResult(replaced=2" in repr(r)
    r2 = pickle.loads(pickle.dumps(copy.copy(r)))
    assert r2 == r and r2.fused == r.fused and r2.swapped == r.swapped
    assert gelu_fusion.patch(model, fuse_bias=fuse_bias) == 0


def test_fuse_bias_keeps_the_linear():
    ref = mlp()
    model = copy.deepcopy(ref)
    linear = model[0]
    gelu_fusion.patch(model, fuse_bias=True)
    assert model[0] is linear and type(linear) is nn.Linear
    assert isinstance(model[1], gelu_fusion.BiasGELU)
    assert list(model.state_dict()) == list(ref.state_dict())
    assert [n for n, _ in model.named_parameters()] == \
        [n for n, _ in ref.named_parameters()]
    # Values and gradients as the unpatched model's.
    same_outputs(model, ref)
    for m in (ref, model):
        m.zero_grad()
        m(X).square().sum().backward()
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=n)


def test_forward_hook_on_a_linear():
    ref = mlp()
    model = copy.deepcopy(ref)
    seen = []
    model[0].register_forward_hook(lambda m, i, o: seen.append(o.detach()))
    r = gelu_fusion.patch(model, fuse_bias=True)
    # A Linear with a forward hook keeps its full output: its GELU is only
    # swapped; the other pair is fused.
    assert ("0", "the Linear has forward hooks, which would see its output "
                 "without the bias: its GELU is swapped, not fused") in r.skipped
    assert r.fused == [("2", "3")] and r.swapped == ["1"]
    model(X)
    assert len(seen) == 1
    torch.testing.assert_close(seen[0], ref[0](X), rtol=0, atol=0)
    same_outputs(model, ref)
    # A hook added to a fused Linear afterwards fires (it sees the output
    # before the bias, which the BiasGELU adds: documented).
    later = []
    model[2].register_forward_hook(lambda m, i, o: later.append(o))
    model(X)
    assert len(later) == 1
    same_outputs(model, ref)


def configure_optimizers(model):
    """minGPT's configure_optimizers grouping (karpathy/minGPT model.py)."""
    decay, no_decay = set(), set()
    whitelist, blacklist = (nn.Linear,), (nn.LayerNorm, nn.Embedding)
    for mn, m in model.named_modules():
        for pn, p in m.named_parameters():
            fpn = "%s.%s" % (mn, pn) if mn else pn
            if pn.endswith("bias"):
                no_decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, whitelist):
                decay.add(fpn)
            elif pn.endswith("weight") and isinstance(m, blacklist):
                no_decay.add(fpn)
    param_dict = {pn: p for pn, p in model.named_parameters()}
    assert len(decay & no_decay) == 0
    assert len(param_dict.keys() - (decay | no_decay)) == 0, \
        "parameters %s were not separated into either decay/no_decay set" % (
            str(param_dict.keys() - (decay | no_decay)),)
    return torch.optim.AdamW([
        {"params": [param_dict[pn] for pn in sorted(decay)], "weight_decay": 0.1},
        {"params": [param_dict[pn] for pn in sorted(no_decay)], "weight_decay": 0.0},
    ], lr=1e-3)


def test_mingpt_optimizer_grouping():
    model = mlp()
    gelu_fusion.patch(model, fuse_bias=True)
    opt = configure_optimizers(model)
    assert sum(len(g["params"]) for g in opt.param_groups) == 6


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_fx_symbolic_trace(fuse_bias):
    ref = mlp()
    model = copy.deepcopy(ref)
    gelu_fusion.patch(model, fuse_bias=fuse_bias)
    gm = torch.fx.symbolic_trace(model)
    targets = [n.target for n in gm.graph.nodes if n.op == "call_function"]
    # torch.fx calls each Linear as a module (a whole Linear, bias
    # included): the BiasGELUs trace as plain GELUs.
    assert targets.count(gelu_fusion.functional.gelu) == 2
    same_outputs(gm, model)
    same_outputs(gm, ref)


def test_fx_traces_the_functions():
    """Called directly in a forward, the functions are single graph nodes,
    as F.gelu is."""
    class M(nn.Module):
        def forward(self, x, b):
            return gelu_fusion.geglu(gelu_fusion.add_gelu(
                gelu_fusion.bias_gelu(gelu_fusion.gelu(x, "tanh"), b), x))

    gm = torch.fx.symbolic_trace(M())
    targets = [n.target.__name__ for n in gm.graph.nodes if n.op == "call_function"]
    assert targets == ["gelu", "bias_gelu", "add_gelu", "geglu"]
    b = inputs((8,), torch.float32, seed=1)
    assert torch.equal(gm(X, b), M()(X, b))


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_jit_script(fuse_bias):
    ref = mlp()
    model = copy.deepcopy(ref)
    gelu_fusion.patch(model, fuse_bias=fuse_bias)
    sm = torch.jit.script(model)
    torch.testing.assert_close(sm(X), model(X), rtol=0, atol=0)
    # A scripted patched model takes float64 too (the fallback).
    torch.testing.assert_close(torch.jit.script(copy.deepcopy(model).double())(
        X.double()), ref.double()(X.double()))


def test_quantize_dynamic():
    ref = mlp()
    model = copy.deepcopy(ref)
    gelu_fusion.patch(model, fuse_bias=True)
    q = torch.quantization.quantize_dynamic(model, {nn.Linear}, dtype=torch.qint8)
    q_ref = torch.quantization.quantize_dynamic(copy.deepcopy(ref), {nn.Linear},
                                                dtype=torch.qint8)
    assert type(q[0]) is type(q_ref[0])  # the Linear was quantized
    torch.testing.assert_close(q(X), q_ref(X), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_double_meta_copy_pickle(fuse_bias):
    ref = mlp()
    model = copy.deepcopy(ref)
    gelu_fusion.patch(model, fuse_bias=fuse_bias)
    d = copy.deepcopy(model).double()
    torch.testing.assert_close(d(X.double()), copy.deepcopy(ref).double()(X.double()))
    assert copy.deepcopy(model).to("meta")(X.to("meta")).device.type == "meta"
    same_outputs(copy.deepcopy(model), ref)
    buf = io.BytesIO()
    torch.save(model, buf)
    buf.seek(0)
    same_outputs(torch.load(buf, weights_only=False), ref)  # a whole model: pickled code
    # The state_dict: tensors only, the original's keys (weights_only=True).
    buf = io.BytesIO()
    torch.save(model.state_dict(), buf)
    buf.seek(0)
    sd = torch.load(buf, weights_only=True)
    assert list(sd) == list(ref.state_dict())
    for patched in (False, True):  # into an unpatched and a patched model
        fresh = mlp()
        with torch.no_grad():
            for p in fresh.parameters():
                p.add_(1.0)
        if patched:
            gelu_fusion.patch(fresh, fuse_bias=True)
        fresh.load_state_dict(sd)
        same_outputs(fresh, ref)
    # Training after a conversion updates the Linear's bias that the
    # BiasGELU adds (they stay one tensor).
    d.zero_grad()
    d(X.double()).sum().backward()
    assert d[0].bias.grad is not None and d[0].bias.grad.dtype == torch.float64


def test_fuse_bias_leaves_a_linear_used_twice():
    """nn.Sequential(*[lin, act] * 2): one Linear object at two places."""
    torch.manual_seed(0)
    lin, act = nn.Linear(8, 8), nn.GELU()
    ref = nn.Sequential(*([lin, act] * 2))
    model = copy.deepcopy(ref)
    r = gelu_fusion.patch(model, fuse_bias=True)
    assert r.fused == [] and any("also used at 2" in why for _, why in r.skipped)
    same_outputs(model, ref)


def test_fuse_bias_linear_called_outside_its_pair():
    """The Sequential's Linear (or its BiasGELU) called directly by the
    model's code computes what it computes unpatched."""
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.seq = mlp()

        def forward(self, x):
            return self.seq(x).sum(-1) + self.seq[0](x).sum(-1) \
                + self.seq[1](self.seq[0](x)).sum(-1)
    ref = M()
    model = copy.deepcopy(ref)
    r = gelu_fusion.patch(model, fuse_bias=True)
    assert r.fused == [("seq.0", "seq.1"), ("seq.2", "seq.3")]
    same_outputs(model, ref)
    for m in (ref, model):
        m.zero_grad()
        m(X).square().sum().backward()
    for (n, p), (_, q) in zip(ref.named_parameters(), model.named_parameters()):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-5, msg=n)
