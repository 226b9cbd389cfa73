"""gelu_fusion.GELU as a drop-in for nn.GELU, TorchScript, and patch() on a
small transformer-like model: outputs and gradients unchanged within
tolerance, parameters and state_dict keys kept."""
import copy

import pytest
import torch
from torch import nn

import gelu_fusion
from conftest import inputs


@pytest.mark.parametrize("approximate", ["none", "tanh"])
def test_gelu_module_like_torch(approximate):
    ours, theirs = gelu_fusion.GELU(approximate), nn.GELU(approximate)
    assert repr(ours) == repr(theirs) == f"GELU(approximate='{approximate}')"
    assert gelu_fusion.GELU(approximate=approximate).approximate == approximate
    assert repr(gelu_fusion.GELU()) == repr(nn.GELU())
    x = inputs((4, 9), torch.float32)
    d = (ours(x) - theirs(x)).abs().max()
    assert float(d) <= 1e-6
    assert repr(gelu_fusion.GELU("quick")) == "GELU(approximate='quick')"


class Script(nn.Module):
    def __init__(self):
        super().__init__()
        self.act = gelu_fusion.GELU("tanh")
        self.fused = gelu_fusion.LinearBiasGELU(8, 6)

    def forward(self, x, b):
        y = self.act(x)
        y = gelu_fusion.bias_gelu(y, b, approximate="quick")
        y = gelu_fusion.add_gelu(y, x)
        y = gelu_fusion.geglu(torch.cat([y, y], dim=-1))
        y = torch.ops.gelu_fusion.gelu(y, approximate="none")
        return self.fused(y)


def test_torchscript_forward_and_backward():
    m = Script()
    sm = torch.jit.script(m)
    x0, b0 = inputs((5, 8), torch.float32), inputs((8,), torch.float32, 1.0)
    results = []
    for model in (m, sm):
        x, b = x0.clone().requires_grad_(), b0.clone().requires_grad_()
        model.zero_grad()
        y = model(x, b)
        y.square().sum().backward()
        results.append((y.detach(), x.grad, b.grad, model.fused.bias.grad.clone()))
    for a, c in zip(*results):
        assert torch.equal(a, c)
    # Scripted functions too, and the graph names our ops.
    f = torch.jit.script(gelu_fusion.bias_gelu)
    assert "gelu_fusion::bias_gelu" in str(f.graph)
    assert torch.equal(f(x0, b0, "tanh"), gelu_fusion.bias_gelu(x0, b0, "tanh"))


class Block(nn.Module):
    """A small pre-norm transformer block: attention plus a GELU MLP."""

    def __init__(self, d=16, heads=2, approximate="none"):
        super().__init__()
        self.norm1, self.norm2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.attn = nn.MultiheadAttention(d, heads, batch_first=True)
        self.mlp = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(approximate),
                                 nn.Linear(4 * d, d))

    def forward(self, x):
        h = self.norm1(x)
        x = x + self.attn(h, h, h, need_weights=False)[0]
        return x + self.mlp(self.norm2(x))


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block(approximate="tanh"))
        self.head = nn.Sequential(nn.Linear(16, 16, bias=False), nn.GELU(),
                                  nn.Linear(16, 3))
        self.enc = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0,
                                              activation=nn.GELU(),
                                              batch_first=True)

    def forward(self, x):
        return self.head(self.enc(self.blocks(x)))


def grads(model, x):
    model.zero_grad()
    x = x.clone().requires_grad_()
    y = model(x)
    y.square().mean().backward()
    return y.detach(), x.grad, {n: p.grad.clone() for n, p in model.named_parameters()}


@pytest.mark.parametrize("fuse_bias", [False, True])
def test_patch_transformer_like(fuse_bias):
    torch.manual_seed(0)
    ref = Tiny()
    model = copy.deepcopy(ref)
    keys = list(model.state_dict())
    params = list(model.parameters())
    n = gelu_fusion.patch(model, fuse_bias=fuse_bias)
    assert n == 4  # two blocks, the head and the encoder layer's activation
    assert not any(isinstance(m, nn.GELU) for m in model.modules())
    assert list(model.state_dict()) == keys
    assert [id(p) for p in model.parameters()] == [id(p) for p in params]
    assert isinstance(model.blocks[1].mlp[1],
                      gelu_fusion.BiasGELU if fuse_bias else gelu_fusion.GELU)
    assert model.blocks[1].mlp[1].approximate == "tanh"
    assert type(model.blocks[1].mlp[0]) is nn.Linear  # the Linear stays
    assert len(n.fused) == (2 if fuse_bias else 0)  # the head's Linear has no bias
    # bias=False Linear is never fused; its GELU is swapped.
    assert isinstance(model.head[0], nn.Linear)
    assert isinstance(model.head[1], gelu_fusion.GELU)

    x = inputs((3, 5, 16), torch.float32, scale=1.0)
    y0, gx0, gp0 = grads(ref, x)
    y1, gx1, gp1 = grads(model, x)
    torch.testing.assert_close(y1, y0, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(gx1, gx0, rtol=1e-4, atol=1e-6)
    for k in gp0:
        torch.testing.assert_close(gp1[k], gp0[k], rtol=1e-4, atol=1e-6, msg=k)
    # A patched model loads the unpatched one's checkpoint and vice versa.
    model.load_state_dict(ref.state_dict())
    ref.load_state_dict(model.state_dict())
    assert gelu_fusion.patch(model, fuse_bias=fuse_bias) == 0  # idempotent


def test_patch_top_level_and_repr():
    seq = nn.Sequential(nn.Linear(4, 8), nn.GELU("tanh"), nn.Linear(8, 2))
    assert gelu_fusion.patch(seq, fuse_bias=True) == 1
    assert repr(seq[1]) == "BiasGELU(approximate='tanh', bias of '0')"
    r = gelu_fusion.patch(nn.GELU())
    assert r == 0 and r.skipped[0][0] == ""  # the model itself is not swapped
    scripted = torch.jit.script(seq)
    x = inputs((3, 4), torch.float32)
    assert torch.equal(scripted(x), seq(x))


def test_torch_jit_trace():
    seq = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.Linear(8, 2))
    gelu_fusion.patch(seq, fuse_bias=True)
    x = inputs((3, 4), torch.float32)
    traced = torch.jit.trace(seq, x)
    assert "gelu_fusion::bias_gelu" in str(traced.inlined_graph)
    y = inputs((5, 4), torch.float32, seed=1)
    assert torch.equal(traced(y), seq(y))


def test_patched_model_under_autocast():
    torch.manual_seed(0)
    ref = nn.Sequential(nn.Linear(8, 16), nn.GELU(), nn.Linear(16, 4))
    model = copy.deepcopy(ref)
    gelu_fusion.patch(model, fuse_bias=True)
    x = inputs((5, 8), torch.float32, scale=1.0)
    outs = []
    for m in (ref, model):
        with torch.autocast("cpu", dtype=torch.bfloat16):
            y = m(x)
        y.float().square().sum().backward()
        outs.append((y.float(), m[0].bias.grad))
    assert outs[1][0].dtype == torch.float32 and outs[1][1].dtype == torch.float32
    torch.testing.assert_close(outs[1][0], outs[0][0], rtol=2e-2, atol=2e-2)
    torch.testing.assert_close(outs[1][1], outs[0][1], rtol=5e-2, atol=5e-2)
