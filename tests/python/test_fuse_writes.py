"""In-place writes and state outside the modules, after `fuse`, each case
against an unfused deep copy doing the same: the fused model computes what
the unfused one computes, and trains, or raises PyTorch's in-place error,
exactly where the unfused one does; `explain` names each refusal and what
the fused graph read.

- A write to a GELU's input (or a view of it, or a GeGLU's projection)
  after the GELU and before the Linear that consumes it: a fused node at
  the Linear would read the written tensor (fusion_rule undoes it).
- A write to an addend of gelu(a + b) after it: add_gelu keeps a and b,
  where the unfused sum kept only a + b.
- A class attribute, a monkeypatched F.gelu and a module-level helper
  changed after fuse (fusion/reads.py, fusion/guard.py).
Each write case runs under no_grad and in training, with save_memory on and
off, for the three forms, and through gelu_fusion.backend().
"""
import copy

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import gelu_fusion
from gelu_fusion.fusion.call import installed

D, H = 8, 16
X = torch.randn(5, D)
FORMS = ("none", "tanh", "quick")


def act(h, form):
    if form == "quick":
        return h * torch.sigmoid(1.702 * h)
    return F.gelu(h, approximate=form)


def write(h, kind):
    """One in-place write to h, as model code writes it."""
    if kind == "mul_":
        h.mul_(3)
    elif kind == "relu_":
        torch.relu_(h)
    elif kind == "view_zero_":
        h[..., :4].zero_()
    elif kind == "setitem":
        h[..., 1:3] = 0.5
    elif kind == "iadd":
        h += 1.0
    elif kind == "out":
        torch.mul(h, 2.0, out=h)
    elif kind == "F.relu_inplace":
        F.relu(h, inplace=True)
    elif kind == "transpose_add_":
        h.t().add_(1.0)
    else:
        raise AssertionError(kind)


WRITES = ("mul_", "relu_", "view_zero_", "setitem", "iadd", "out", "F.relu_inplace",
          "transpose_add_")


class WriteAfterGelu(nn.Module):
    """h = fc1(x); y = gelu(h); <write h>; fc2(y)."""

    def __init__(self, form, kind, before=False):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)
        self.form, self.kind, self.before = form, kind, before

    def forward(self, x):
        h = self.fc1(x)
        if self.before:
            write(h, self.kind)
        y = act(h, self.form)
        if not self.before:
            write(h, self.kind)
        return self.fc2(y)


class WriteGegluProjection(nn.Module):
    """p = proj(x); y = gelu(a) * b of p's halves; p.mul_(3); fc2(y)."""

    def __init__(self, form, kind="mul_"):
        super().__init__()
        self.proj, self.fc2 = nn.Linear(D, 2 * H), nn.Linear(H, D)
        self.form, self.kind = form, kind

    def forward(self, x):
        p = self.proj(x)
        a, b = p.chunk(2, dim=-1)
        y = act(a, self.form) * b
        write(p, self.kind)
        return self.fc2(y)


class WriteAddend(nn.Module):
    """y = gelu(a + b); a.mul_(3): the sum's backward needs neither addend."""

    def __init__(self, form, kind="mul_"):
        super().__init__()
        self.la, self.lb = nn.Linear(D, H, bias=False), nn.Linear(D, H, bias=False)
        self.form, self.kind = form, kind

    def forward(self, x):
        a, b = self.la(x), self.lb(x)
        # fuse finds no quick formula of a sum (its polynomial has two
        # leaves): gelu_fusion's own quick GELU, in both models, stands in.
        y = (gelu_fusion.gelu(a + b, "quick") if self.form == "quick"
             else act(a + b, self.form))
        write(a, self.kind)
        return y * 2.0


def fused_pair(model, **opts):
    return model, gelu_fusion.fuse(copy.deepcopy(model), **opts)


def outcome(model, x, train):
    """(output, grads) of a step, or the RuntimeError's class of message."""
    for p in model.parameters():
        p.grad = None
    x = x.clone().requires_grad_(train)
    try:
        if train:
            y = model(x)
            y.square().sum().backward()
            return y.detach(), {n: p.grad.clone() for n, p in model.named_parameters()}
        with torch.no_grad():
            return model(x), {}
    except RuntimeError as e:  # which of autograd's refusals
        for kind in ("modified by an inplace operation", "out=",
                     "is a view and its base or another view of its base has been modified"):
            if kind in str(e):
                return f"error: {kind}", None
        raise


def assert_same(a, b, train, x=X):
    want, got = outcome(a, x, train), outcome(b, x, train)
    if isinstance(want[0], str) or isinstance(got[0], str):
        assert got[0] == want[0], (got[0], want[0])
        return
    torch.testing.assert_close(got[0], want[0], rtol=1e-5, atol=1e-5)
    assert got[1].keys() == want[1].keys()
    for k in want[1]:
        torch.testing.assert_close(got[1][k], want[1][k], rtol=1e-5, atol=1e-5, msg=k)


def sites(model, **opts):
    return gelu_fusion.explain(model, print_table=False, **opts).sites


def assert_refused(model, **opts):
    """explain names the write that kept each site from a fusion (or the
    model was not traced at all: torch.fx has no item assignment)."""
    r = gelu_fusion.explain(model, print_table=False, **opts)
    assert r.sites or r.untraced, r.table()
    for s in r.sites:
        assert "not applied" in s.reason and "writes" in s.reason, s


@pytest.mark.parametrize("save_memory", (True, False))
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", WRITES)
def test_a_write_to_the_gelu_input_after_the_gelu(kind, form, save_memory):
    a, b = fused_pair(WriteAfterGelu(form, kind), save_memory=save_memory)
    for train in (False, True):
        assert_same(a, b, train)
    assert_refused(a, save_memory=save_memory)


@pytest.mark.parametrize("form", FORMS)
def test_a_write_before_the_gelu_keeps_every_fusion(form):
    a, b = fused_pair(WriteAfterGelu(form, "mul_", before=True))
    for train in (False, True):
        assert_same(a, b, train)
    (s,) = sites(a)
    assert s.fused and "not applied" not in s.reason, s
    assert "next Linear as one node" in s.reason, s


@pytest.mark.parametrize("save_memory", (True, False))
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ("mul_", "view_zero_", "setitem"))
def test_a_write_to_the_geglu_projection(kind, form, save_memory):
    a, b = fused_pair(WriteGegluProjection(form, kind), save_memory=save_memory)
    for train in (False, True):
        assert_same(a, b, train)
    assert_refused(a, save_memory=save_memory)


@pytest.mark.parametrize("save_memory", (True, False))
@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", ("mul_", "relu_", "view_zero_"))
def test_a_write_to_an_addend_trains_as_unfused(kind, form, save_memory):
    a, b = fused_pair(WriteAddend(form, kind), save_memory=save_memory)
    assert outcome(a, X, True)[1] is not None  # the unfused model trains
    for train in (False, True):
        assert_same(a, b, train)
    (s,) = sites(a, save_memory=save_memory)
    assert s.result == "gelu" and "add not applied" in s.reason, s


def test_the_undone_rewrite_keeps_the_rest_of_the_graph_fused():
    """Two blocks, a write in the first: the second stays fully fused."""

    class Two(nn.Module):
        def __init__(self):
            super().__init__()
            self.a = WriteAfterGelu("none", "mul_")
            self.b = nn.Sequential(nn.Linear(D, H), nn.GELU(), nn.Linear(H, D))

        def forward(self, x):
            return self.b(self.a(x))

    a, b = fused_pair(Two())
    for train in (False, True):
        assert_same(a, b, train)
    first, second = sites(a)
    assert "not applied" in first.reason
    assert second.result == "bias_gelu" and "next Linear as one node" in second.reason


# --- What the fused graph read outside the modules' own state --------------

class Scaled(nn.Module):
    SCALE = 2.0

    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)) * self.SCALE)


class ReadsClassByName(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)) * Scaled.SCALE)


def _helper(y):
    return y * 2.0


class CallsHelper(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)

    def forward(self, x):
        return self.fc2(_helper(F.gelu(self.fc1(x))))


def runs_fused(m) -> bool:
    c = installed(m)
    return c is not None and c.why_unfused() == ""


@pytest.mark.parametrize("cls", (Scaled, ReadsClassByName))
def test_a_class_attribute_changed_after_fuse(cls, monkeypatch):
    a, b = fused_pair(cls())
    assert runs_fused(b)
    (s,) = sites(a)
    assert "class attribute Scaled.SCALE" in s.checked, s.checked
    monkeypatch.setattr(Scaled, "SCALE", 3.0)
    assert not runs_fused(b)
    assert "Scaled.SCALE changed" in installed(b).why_unfused()
    for train in (False, True):
        assert_same(a, b, train)


def test_a_class_attribute_shadowed_by_a_subclass_after_fuse():
    class Sub(Scaled):
        pass

    a, b = fused_pair(Sub())
    assert runs_fused(b)
    Sub.SCALE = 5.0
    assert not runs_fused(b)
    for train in (False, True):
        assert_same(a, b, train)


def test_a_monkeypatched_functional(monkeypatch):
    a, b = fused_pair(Scaled())
    (s,) = sites(a)
    assert "torch.nn.functional.gelu" in s.checked, s.checked
    monkeypatch.setattr(F, "gelu", lambda t, approximate="none": torch.relu(t))
    assert "torch.nn.functional.gelu changed" in installed(b).why_unfused()
    for train in (False, True):
        assert_same(a, b, train)
    monkeypatch.undo()
    assert runs_fused(b)
    assert_same(a, b, True)


def test_a_module_level_helper_replaced(monkeypatch):
    a, b = fused_pair(CallsHelper())
    assert runs_fused(b)
    monkeypatch.setitem(globals(), "_helper", lambda y: y * 3.0)
    assert "global _helper changed" in installed(b).why_unfused()
    for train in (False, True):
        assert_same(a, b, train)


def test_a_closure_is_listed_as_taken_as_fixed():
    def make(scale):
        class Closure(nn.Module):
            def __init__(self):
                super().__init__()
                self.fc1, self.fc2 = nn.Linear(D, H), nn.Linear(H, D)

            def forward(self, x):
                return self.fc2(F.gelu(self.fc1(x)) * scale)
        return Closure()

    (s,) = sites(make(2.0))
    assert s.fused and any("closure variable scale" in f for f in s.fixed), s.fixed
    report = gelu_fusion.explain(make(2.0), print_table=False).table()
    assert "taken as fixed: closure variable scale" in report
    assert "checked at each call:" in report


# --- The same writes through torch.compile with gelu_fusion.backend() -----

@pytest.fixture
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


@pytest.mark.parametrize("model", (
    lambda: WriteAfterGelu("none", "mul_"), lambda: WriteAfterGelu("tanh", "view_zero_"),
    lambda: WriteAfterGelu("quick", "setitem"), lambda: WriteGegluProjection("none"),
    lambda: WriteAddend("none"), lambda: WriteAfterGelu("none", "mul_", before=True),
    lambda: WriteAfterGelu("tanh", "iadd", before=True)),
    ids=("mul_", "view_zero_", "setitem", "geglu", "addend", "mul_before", "iadd_before"))
def test_the_writes_through_the_compile_backend(model, fresh_dynamo):
    """As torch.compile computes unfused (its functionalization trains
    where eager raises PyTorch's in-place error), and as eager in no_grad."""
    eager = model()
    plain = torch.compile(copy.deepcopy(eager), backend="aot_eager")
    fused = torch.compile(copy.deepcopy(eager),
                          backend=gelu_fusion.backend(inner="aot_eager"))
    assert_same(eager, fused, False)
    assert_same(plain, fused, True)
