"""What users do with a model after `fuse`, each compared with the unfused
model doing the same: the fused model computes, trains and reacts as the
original does, or the site stays unfused and `explain` says why."""
import copy
import random
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion
from gelu_fusion.fusion.call import installed

D, H = 8, 16


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.act, self.fc2 = nn.Linear(D, H), nn.GELU(), nn.Linear(H, D)

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x)))


def pair(model):
    """(the model, a fused deep copy): the fused one must act as the first."""
    torch.manual_seed(0)
    return model, gelu_fusion.fuse(copy.deepcopy(model))


def runs_fused(m) -> bool:
    c = installed(m)
    return c is not None and c.why_unfused() == ""


def step(model, x, seed=1):
    """Output and every parameter's gradient of one training step."""
    torch.manual_seed(seed)
    random.seed(seed)
    for p in model.parameters():
        p.grad = None
    x = x.clone().requires_grad_()
    y = model(x)
    y.square().sum().backward()
    grads = {n: None if p.grad is None else p.grad.clone()
             for n, p in model.named_parameters()}
    return y.detach(), dict(grads, input=x.grad)


def assert_same_step(a, b, x, seed=1):
    ya, ga = step(a, x, seed)
    yb, gb = step(b, x, seed)
    torch.testing.assert_close(yb, ya, rtol=2e-5, atol=2e-5)
    assert ga.keys() == gb.keys()
    for k in ga:
        if ga[k] is None or gb[k] is None:
            assert ga[k] is None and gb[k] is None, k
        else:
            torch.testing.assert_close(gb[k], ga[k], rtol=2e-5, atol=2e-5, msg=k)


X = torch.randn(4, D)


# --- Python behaviour a trace would freeze: refused, with the reason -------

class Distill(nn.Module):
    """A frozen teacher under no_grad inside forward."""

    def __init__(self):
        super().__init__()
        self.teacher, self.student = MLP(), MLP()

    def forward(self, x):
        with torch.no_grad():
            t = self.teacher(x)
        return self.student(x) - t


class LayerDrop(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        if self.training and random.random() < 0.5:
            return x
        return x + self.mlp(x)


class Counter(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp, self.calls = MLP(), 0

    def forward(self, x):
        self.calls += 1
        return self.mlp(x)


@pytest.mark.parametrize("cls,why", [(Distill, "torch.no_grad()"),
                                     (LayerDrop, "Python randomness"),
                                     (Counter, "sets Counter.calls")])
def test_python_behaviour_is_refused_and_the_inner_mlp_fused(cls, why):
    ref, fused = pair(cls())
    report = gelu_fusion.explain(fused, print_table=False)
    assert any(why in r for _, r in report.untraced), report.table()
    assert installed(fused) is None
    inner = fused.student if cls is Distill else fused.mlp
    assert runs_fused(inner)
    for seed in range(4):  # LayerDrop: both outcomes
        assert_same_step(ref, fused, X, seed)
    if cls is Distill:  # the teacher stays frozen
        assert all(p.grad is None for p in fused.teacher.parameters())
    if cls is Counter:
        assert fused.calls == ref.calls


def test_autocast_block_in_forward_is_refused():
    class M(MLP):
        def forward(self, x):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return super().forward(x)
    ref, fused = pair(M())
    assert installed(fused) is None
    assert_same_step(ref, fused, X)


# --- Changes after fuse: the fused graph steps aside -------------------------

class Scaled(MLP):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def forward(self, x):
        return super().forward(x) * self.scale


def test_attribute_changed_after_fuse():
    ref, fused = pair(Scaled())
    assert runs_fused(fused)
    ref.scale = fused.scale = 3.0
    assert_same_step(ref, fused, X)
    assert "attribute changed" in installed(fused).why_unfused()
    assert "attribute changed" in gelu_fusion.explain(fused, print_table=False).table()
    gelu_fusion.fuse(fused)  # fusing again takes the new value in
    assert runs_fused(fused)
    assert_same_step(ref, fused, X)


SCALE = 1.0


class GlobalScaled(MLP):
    def forward(self, x):
        return super().forward(x) * SCALE


def test_global_changed_after_fuse():
    global SCALE
    ref, fused = pair(GlobalScaled())
    assert runs_fused(fused)
    SCALE = 2.0
    try:
        assert_same_step(ref, fused, X)
        assert "SCALE" in installed(fused).why_unfused()
    finally:
        SCALE = 1.0


def test_dropout_p0_raised_after_fuse():
    class M(MLP):
        def __init__(self):
            super().__init__()
            self.drop = nn.Dropout(0.0)

        def forward(self, x):
            return self.fc2(self.drop(self.act(self.fc1(x))))
    ref, fused = pair(M())
    assert runs_fused(fused)
    ref.drop.p = fused.drop.p = 0.5
    assert_same_step(ref, fused, torch.randn(64, D))


def test_hooks_on_gelu_before_fuse_fire():
    seen = {"ref": 0, "fused": 0}
    model = MLP()
    ref, fused = pair(model)
    def hook(name):
        return lambda mod, i, o: seen.__setitem__(name, seen[name] + 1) or o * 2
    for name, m in (("ref", ref), ("fused", fused)):
        m.act.register_forward_hook(hook(name))
    assert_same_step(ref, fused, X)
    assert seen["fused"] == seen["ref"] > 0
    # Hooked before fuse: left unfused, and explain says so.
    model.act.register_forward_hook(hook("ref"))
    report = gelu_fusion.explain(model, print_table=False)
    assert report.sites[0].result == "unchanged" and "hooks" in report.sites[0].reason
    hooked = gelu_fusion.fuse(copy.deepcopy(model))
    seen["ref"] = 0
    assert_same_step(model, hooked, X)
    assert seen["ref"] == 4  # two hooks on each of the two models


def test_full_backward_hook_on_the_fused_module_fires():
    ref, fused = pair(MLP())
    seen = []
    for m in (ref, fused):
        m.register_full_backward_hook(lambda mod, gi, go: seen.append(go[0].sum()))
    assert_same_step(ref, fused, X)
    assert len(seen) == 2
    torch.testing.assert_close(seen[0], seen[1])


def test_forward_hook_added_after_fuse():
    ref, fused = pair(MLP())
    for m in (ref, fused):
        m.fc1.register_forward_hook(lambda mod, i, o: o + 1)
    assert_same_step(ref, fused, X)
    assert "hooks" in installed(fused).why_unfused()


class LoRA(nn.Module):
    def __init__(self, base: nn.Linear, r=2):
        super().__init__()
        self.base = base
        self.a = nn.Parameter(torch.randn(r, base.in_features) * 0.1)
        self.b = nn.Parameter(torch.randn(base.out_features, r) * 0.1)

    def forward(self, x):
        return self.base(x) + x @ self.a.t() @ self.b.t()


def test_lora_swapped_in_after_fuse():
    ref, fused = pair(MLP())
    for m in (ref, fused):
        torch.manual_seed(2)
        m.fc1 = LoRA(m.fc1)
        m.fc1.base.requires_grad_(False)
    assert_same_step(ref, fused, X)
    assert "replaced" in installed(fused).why_unfused()


def test_prune_after_fuse():
    import torch.nn.utils.prune as prune
    ref, fused = pair(MLP())
    for m in (ref, fused):
        prune.l1_unstructured(m.fc1, "weight", amount=0.5)
    assert_same_step(ref, fused, X)


def test_quantize_dynamic_after_fuse():
    ref, fused = pair(MLP())
    qa = torch.ao.quantization.quantize_dynamic(ref.eval(), {nn.Linear}, torch.qint8)
    qb = torch.ao.quantization.quantize_dynamic(fused.eval(), {nn.Linear}, torch.qint8)
    with torch.no_grad():
        torch.testing.assert_close(qb(X), qa(X))


def test_parameter_set_to_none_after_fuse():
    ref, fused = pair(MLP())
    for m in (ref, fused):
        m.fc2.bias = None
    assert_same_step(ref, fused, X)


def test_deepcopy_of_a_changed_model_stays_as_changed():
    ref, fused = pair(Scaled())
    copied = copy.deepcopy(fused)
    assert runs_fused(copied)
    copied.scale = ref.scale = 2.0  # the copy's own attribute
    assert_same_step(ref, copied, X)
    assert runs_fused(fused)


# --- Transforms and exporters on a fused model --------------------------------

class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(x)))


def test_per_sample_gradients_with_vmap():
    from torch.func import functional_call, grad, vmap
    ref, fused = pair(Block())
    assert runs_fused(fused)

    def per_sample(model):
        params = {k: v.detach() for k, v in model.named_parameters()}

        def loss(p, xi):
            return functional_call(model, p, (xi[None],)).square().sum()
        return vmap(grad(loss), in_dims=(None, 0))(params, X)
    a, b = per_sample(ref), per_sample(fused)
    for k in a:
        torch.testing.assert_close(b[k], a[k], rtol=2e-5, atol=2e-5)


def test_jacobian_vectorized_and_batched_grads():
    ref, fused = pair(Block())
    a = torch.autograd.functional.jacobian(ref, X, vectorize=True)
    b = torch.autograd.functional.jacobian(fused, X, vectorize=True)
    torch.testing.assert_close(b, a, rtol=2e-5, atol=2e-5)
    x = X.clone().requires_grad_()
    y = fused(x)
    eye = torch.eye(D).repeat(X.shape[0], 1, 1).permute(1, 0, 2)
    (g,) = torch.autograd.grad(y, x, eye, is_grads_batched=True)
    xr = X.clone().requires_grad_()
    (gr,) = torch.autograd.grad(ref(xr), xr, eye, is_grads_batched=True)
    torch.testing.assert_close(g, gr, rtol=2e-5, atol=2e-5)


def test_jit_trace_of_two_fused_blocks():
    ref = nn.Sequential(Block(), Block())
    fused = nn.Sequential(*[gelu_fusion.fuse(copy.deepcopy(b)) for b in ref])
    traced = torch.jit.trace(fused, X)
    torch.testing.assert_close(traced(X), ref(X), rtol=2e-5, atol=2e-5)
    assert_same_step(ref, traced, X)


def test_fx_symbolic_trace_of_a_fused_model():
    ref, fused = pair(Block())
    gm = torch.fx.symbolic_trace(fused)
    assert_same_step(ref, gm, X)


def test_script_a_fused_transformer_encoder_in_a_fresh_process():
    code = (
        "import torch, gelu_fusion\n"
        "from torch import nn\n"
        "torch.manual_seed(0)\n"
        "layer = nn.TransformerEncoderLayer(16, 2, 32, dropout=0.0, "
        "activation='gelu', batch_first=True)\n"
        "enc = gelu_fusion.fuse(nn.TransformerEncoder(layer, 2))\n"
        "s = torch.jit.script(enc)\n"
        "x = torch.randn(2, 3, 16)\n"
        "torch.testing.assert_close(s(x), enc(x))\n"
        "print('scripted')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and "scripted" in out.stdout, out.stderr[-2000:]


def test_f_linear_with_a_2d_bias_after_the_gelu():
    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = nn.Linear(D, H)
            self.w = nn.Parameter(torch.randn(D, H) * 0.1)
            self.b = nn.Parameter(torch.randn(1, D))

        def forward(self, x):
            return F.linear(F.gelu(self.fc1(x)), self.w, self.b)
    ref, fused = pair(M())
    assert runs_fused(fused)
    assert_same_step(ref, fused, X)
