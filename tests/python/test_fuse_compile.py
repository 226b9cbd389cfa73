"""torch.compile(model, backend=gelu_fusion.backend()): the GELUs of the
graphs Dynamo captures are fused, and the compiled model trains as the
eager unfused model does (losses and gradients within 1e-5, f32).

Each test compiles with backend(inner) where inner records the graph the
backend hands on, then runs aot_eager (fast); one test runs Inductor (slow).
"""
import copy
import functools

import pytest
import torch
import torch.nn.functional as F
import torch.utils.checkpoint as checkpoint
from torch import nn
from torch._dynamo import lookup_backend

import gelu_fusion
from gelu_fusion.fusion import graph as fusion_graph, runtime as fusion_runtime

RTOL = 1e-5
_PYTORCH_GELUS = fusion_graph.FUNCTIONAL_GELUS + (torch.erf, torch.tanh, torch.sigmoid)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


class Recorder:
    """An inner backend: keeps each graph it is given, runs aot_eager."""

    def __init__(self, inner="aot_eager"):
        self.graphs, self.inner = [], inner

    def __call__(self, gm, example_inputs):
        self.graphs.append(gm)
        return lookup_backend(self.inner)(gm, example_inputs)

    def targets(self):
        out = []
        for gm in self.graphs:
            for m in gm.modules():
                if isinstance(m, torch.fx.GraphModule):
                    out += [n.target for n in m.graph.nodes if n.op == "call_function"]
        return out

    def fused(self):
        return [t.__name__ for t in self.targets()
                if getattr(t, "__module__", "") == fusion_runtime.__name__]

    def pytorch_gelus(self):
        return [t for t in self.targets() if t in _PYTORCH_GELUS]


class MLP(nn.Module):
    def __init__(self, d=16, h=64):
        super().__init__()
        self.norm = nn.LayerNorm(d)
        self.fc1, self.act, self.fc2 = nn.Linear(d, h), nn.GELU(), nn.Linear(h, d)

    def forward(self, x):
        return x + self.fc2(self.act(self.fc1(self.norm(x))))


class GeGLU(nn.Module):
    def __init__(self, d=16, h=32):
        super().__init__()
        self.proj, self.out = nn.Linear(d, 2 * h), nn.Linear(h, d)

    def forward(self, x):
        a, b = self.proj(x).chunk(2, dim=-1)
        return x + self.out(F.gelu(a) * b)


class Layer(nn.Module):
    """A pre-norm transformer layer: attention, then a tanh-GELU MLP."""

    def __init__(self, d=16, heads=2):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv, self.proj = nn.Linear(d, 3 * d), nn.Linear(d, d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh")
        self.drop = nn.Dropout(0.0)
        self.fc2 = nn.Linear(4 * d, d)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(a.transpose(1, 2).reshape(b, t, d))
        return x + self.fc2(self.drop(self.act(self.fc1(self.ln2(x)))))


def _input(model):
    return torch.randn(2, 5, 16) if isinstance(model, Layer) else torch.randn(6, 16)


def train(model, run, x, steps=3):
    """Losses and final gradients of `steps` SGD steps of run(model, x)."""
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    losses = []
    for _ in range(steps):
        opt.zero_grad()
        loss = run(x).pow(2).mean()
        loss.backward()
        losses.append(loss.detach())
        opt.step()
    return torch.stack(losses), [p.grad.clone() for p in model.parameters()]


def assert_trains_as_eager(model, recorder, x=None, **options):
    x = _input(model) if x is None else x
    ref = copy.deepcopy(model)
    want_losses, want_grads = train(ref, ref, x)
    compiled = torch.compile(model, backend=gelu_fusion.backend(recorder, **options))
    losses, grads = train(model, compiled, x)
    torch.testing.assert_close(losses, want_losses, rtol=RTOL, atol=0)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=1e-6)
    return compiled


@pytest.mark.parametrize("make, fused", [
    (MLP, ["linear_bias_gelu_linear"]),
    (GeGLU, ["geglu_halves_linear"]),
    (Layer, ["linear_bias_gelu_linear"]),
])
def test_model_trains_fused_as_eager(make, fused):
    rec = Recorder()
    assert_trains_as_eager(make(), rec)
    assert rec.fused() == fused
    assert rec.pytorch_gelus() == []


def test_options_turn_passes_off():
    rec = Recorder()
    assert_trains_as_eager(MLP(), rec, bias=False, save_memory=False)
    assert rec.fused() == [] and rec.pytorch_gelus() == []
    assert any(t is gelu_fusion.gelu for t in rec.targets())


def test_fused_model_compiles_fused():
    # fuse() for eager, then torch.compile with the backend: the compiled
    # graph is Dynamo's (the module's own forward), fused by the backend.
    model = MLP()
    ref = copy.deepcopy(model)
    gelu_fusion.fuse(model)
    rec = Recorder()
    compiled = torch.compile(model, backend=gelu_fusion.backend(rec))
    x = _input(model)
    torch.testing.assert_close(compiled(x), ref(x), rtol=RTOL, atol=1e-6)
    assert rec.fused() == ["linear_bias_gelu_linear"]


def _saved_shapes(run, x):
    shapes = []

    def pack(t):
        shapes.append(tuple(t.shape))
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run(x)
    out.sum().backward()
    return shapes


def test_compiled_backward_saves_only_the_preactivation():
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    x = torch.randn(8, 16)
    unfused = _saved_shapes(torch.compile(copy.deepcopy(model), backend="aot_eager"), x)
    torch._dynamo.reset()
    fused = _saved_shapes(torch.compile(model, backend=gelu_fusion.backend("aot_eager")), x)
    hidden = (8, 64)
    assert unfused.count(hidden) == 2  # the Linear's output and the GELU's
    assert fused.count(hidden) == 1    # h only: the GELU's output is recomputed


def test_no_workspace_inside_compiled_graphs():
    from gelu_fusion import workspace
    workspace.empty_cache()
    model = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    compiled = torch.compile(model, backend=gelu_fusion.backend("aot_eager"))
    compiled(torch.randn(8, 16)).sum().backward()
    assert workspace.cached(torch.float32) is None


class Scaled(MLP):
    def __init__(self):
        super().__init__()
        self.scale = 1.0

    def forward(self, x):
        return self.fc2(self.act(self.fc1(x) * self.scale))


def test_attribute_changed_after_compile_recompiles():
    model, rec = Scaled(), Recorder()
    compiled = torch.compile(model, backend=gelu_fusion.backend(rec))
    x = torch.randn(6, 16)
    compiled(x)
    model.scale = 3.0
    torch.testing.assert_close(compiled(x), model(x), rtol=RTOL, atol=1e-6)
    assert len(rec.graphs) == 2


def test_hook_is_compiled_with_the_model():
    model, rec = MLP(), Recorder()
    model.fc1.register_forward_hook(lambda m, i, o: o * 2.0)
    ref = copy.deepcopy(model)
    x = torch.randn(6, 16)
    compiled = torch.compile(model, backend=gelu_fusion.backend(rec))
    torch.testing.assert_close(compiled(x), ref(x), rtol=RTOL, atol=1e-6)
    assert rec.fused() == ["gelu_linear"]  # the bias stays with the hook's input


def test_hook_added_after_compile_recompiles():
    # Dynamo ignores hooks added after compiling unless asked to guard
    # them (skip_nnmodule_hook_guards), fused or not.
    model, rec = MLP(), Recorder()
    x = torch.randn(6, 16)
    with torch._dynamo.config.patch(skip_nnmodule_hook_guards=False):
        compiled = torch.compile(model, backend=gelu_fusion.backend(rec))
        compiled(x)
        model.fc1.register_forward_hook(lambda m, i, o: o * 2.0)
        out = compiled(x)
    torch.testing.assert_close(out, copy.deepcopy(model)(x), rtol=RTOL, atol=1e-6)
    assert len(rec.graphs) == 2


class Distill(nn.Module):
    """A frozen teacher under no_grad, its GELU outside it."""

    def __init__(self):
        super().__init__()
        self.teacher, self.student = nn.Linear(16, 16), nn.Linear(16, 16)

    def forward(self, x):
        with torch.no_grad():
            t = self.teacher(x)
        return F.gelu(t) + F.gelu(self.student(x))


def test_no_grad_inside_forward_is_respected():
    model, rec = Distill(), Recorder()
    ref = copy.deepcopy(model)
    x = torch.randn(6, 16)
    compiled = torch.compile(model, backend=gelu_fusion.backend(rec))
    out = compiled(x)
    out.sum().backward()
    want = ref(x)
    want.sum().backward()
    torch.testing.assert_close(out, want, rtol=RTOL, atol=1e-6)
    assert model.teacher.weight.grad is None
    torch.testing.assert_close(model.student.weight.grad, ref.student.weight.grad,
                               rtol=RTOL, atol=1e-6)
    # The student's bias is fused; the teacher's matmul stays in no_grad.
    assert rec.fused() == ["linear_bias_gelu"] and rec.pytorch_gelus() == []


class Checkpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        return checkpoint.checkpoint(self.mlp, x, use_reentrant=False)


def test_composes_with_checkpoint():
    rec = Recorder()
    assert_trains_as_eager(Checkpointed(), rec, x=torch.randn(6, 16))
    assert rec.fused() == ["linear_bias_gelu_linear"]
    assert rec.pytorch_gelus() == []


@pytest.mark.slow
def test_inductor_trains_as_eager():
    model = Layer()
    ref = copy.deepcopy(model)
    x = _input(model)
    want_losses, want_grads = train(ref, ref, x)
    compiled = torch.compile(model, backend=gelu_fusion.backend())
    losses, grads = train(model, compiled, x)
    torch.testing.assert_close(losses, want_losses, rtol=RTOL, atol=0)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-5)


def _save_matmuls(ctx, op, *args, **kwargs):
    """Selective activation checkpointing's policy: matmuls saved,
    everything else (our ops included) recomputed."""
    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
        return checkpoint.CheckpointPolicy.MUST_SAVE
    return checkpoint.CheckpointPolicy.PREFER_RECOMPUTE


class SelectivelyCheckpointed(nn.Module):
    def __init__(self):
        super().__init__()
        self.mlp = MLP()

    def forward(self, x):
        return checkpoint.checkpoint(
            self.mlp, x, use_reentrant=False,
            context_fn=functools.partial(checkpoint.create_selective_checkpoint_contexts,
                                         _save_matmuls))


def test_composes_with_selective_checkpoint():
    rec = Recorder()
    assert_trains_as_eager(SelectivelyCheckpointed(), rec, x=torch.randn(6, 16))
    assert rec.fused() == ["linear_bias_gelu_linear"]
    assert rec.pytorch_gelus() == []


@pytest.mark.parametrize("make", [MLP, GeGLU, Layer])
def test_export_of_a_fused_model(make):
    """torch.export of a model after fuse: it exports what the model
    computes (the model's own code; export takes no backend) and the
    exported program gives the unfused model's results."""
    torch.manual_seed(0)
    model = make()
    ref = copy.deepcopy(model)
    fused = gelu_fusion.fuse(model)
    x = _input(model)
    ep = torch.export.export(fused, (x,))
    torch.testing.assert_close(ep.module()(x), ref(x), rtol=RTOL, atol=1e-6)


def test_selective_checkpoint_of_a_fused_model_in_eager():
    """The same policy without compile, around a model fused by fuse (the
    memory-saving node and our ops run under the checkpoint's modes)."""
    torch.manual_seed(0)
    model = SelectivelyCheckpointed()
    ref = copy.deepcopy(model)
    x = torch.randn(6, 16)
    want_losses, want_grads = train(ref, ref, x)
    gelu_fusion.fuse(model.mlp)
    losses, grads = train(model, model, x)
    torch.testing.assert_close(losses, want_losses, rtol=RTOL, atol=0)
    for g, w in zip(grads, want_grads):
        torch.testing.assert_close(g, w, rtol=RTOL, atol=1e-6)
