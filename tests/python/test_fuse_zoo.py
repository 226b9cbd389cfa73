"""gelu_fusion.fuse on the model zoo (model_zoo.py, written as each library
writes its code): sites found and fused as expected, outputs and every
gradient equal to the unfused model's in f32 and under bf16 autocast, the
same Parameters and state_dict keys, no GELU op of PyTorch's left in a
forward, and the fused model deep-copies, pickles, saves, traces and
scripts where the original did."""
import copy
import io
import pickle
import warnings

import pytest
import torch

import gelu_fusion
from gelu_fusion.fusion.call import installed
from model_zoo import ZOO

NAMES = sorted(ZOO)
# PyTorch ops that a GELU (called or spelled out) leaves in a profile.
GELU_OPS = ("aten::gelu", "aten::tanh", "aten::erf", "aten::sigmoid")


def make(name, seed=0):
    torch.manual_seed(seed)
    factory, shape, _ = ZOO[name]
    m = factory()
    with torch.no_grad():  # non-zero biases, so a lost bias shows
        for n, p in m.named_parameters():
            if n.endswith("bias"):
                p.uniform_(-0.5, 0.5)
    x = torch.randn(shape, generator=torch.Generator().manual_seed(seed + 1)) * 2
    return m, x


def pair(name):
    """(unfused copy, fused model, input)."""
    m, x = make(name)
    ref = copy.deepcopy(m)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # every zoo model has a GELU
        fused = gelu_fusion.fuse(m)
    return ref, fused, x


def run(model, x, autocast=False):
    """Output and the gradients of every parameter (by name) and of x, for
    one loss; dropout draws the same masks in both models (same seed, same
    calls in the same order)."""
    x = x.clone().requires_grad_(True)
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
        y = model(x)
    w = torch.linspace(-1, 1, y.numel()).reshape(y.shape)
    (y.float() * w).sum().backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.grad is not None}
    grads["input"] = x.grad
    return y.detach().float(), grads


def assert_near(got, want, tol, what):
    scale = float(want.abs().max()) + 1e-6
    err = float((got - want).abs().max())
    assert err <= tol * scale, f"{what}: max error {err:.3g} > {tol} * {scale:.3g}"


@pytest.mark.parametrize("name", NAMES)
def test_sites_found_and_fused_as_expected(name):
    m, _ = make(name)
    report = gelu_fusion.explain(m, print_table=False)
    assert [s.result for s in report.sites] == ZOO[name][2], report.table()
    for s in report.sites:
        assert s.pattern and s.form in ("none", "tanh", "quick")
        if s.result == "unchanged" or (s.result == "gelu" and s.reason):
            assert s.reason, report.table()
    # explain changes nothing; fuse then reports the same sites as fused
    assert not any(installed(mod) for mod in m.modules())
    fused = gelu_fusion.fuse(m)
    again = gelu_fusion.explain(fused, print_table=False)
    assert [s.result for s in again.sites] == ZOO[name][2], again.table()
    assert all(s.pattern.startswith("gelu_fusion") for s in again.sites), again.table()
    assert gelu_fusion.fuse(fused) is fused  # nothing left to change


@pytest.mark.parametrize("autocast", [False, True], ids=["f32", "bf16_autocast"])
@pytest.mark.parametrize("name", NAMES)
def test_outputs_and_gradients_match_unfused(name, autocast):
    ref, fused, x = pair(name)
    tol = 3e-2 if autocast else 2e-5
    for train in (True, False):
        ref.train(train)
        fused.train(train)
        y0, g0 = run(ref, x, autocast)
        y1, g1 = run(fused, x, autocast)
        assert_near(y1, y0, tol, f"{name} output (train={train})")
        assert g0.keys() == g1.keys()
        for k in g0:
            assert_near(g1[k].float(), g0[k].float(), tol, f"{name} grad {k}")


@pytest.mark.parametrize("name", NAMES)
def test_parameters_names_and_state_dict_kept(name):
    m, x = make(name)
    before = [(n, p) for n, p in m.named_parameters()]
    keys = list(m.state_dict().keys())
    modules = [(n, type(mod)) for n, mod in m.named_modules()]
    opt = torch.optim.SGD(m.parameters(), lr=0.1)  # built before fuse
    fused = gelu_fusion.fuse(m)
    after = list(fused.named_parameters())
    assert [n for n, _ in after] == [n for n, _ in before]
    assert all(p is q for (_, p), (_, q) in zip(after, before))
    assert list(fused.state_dict().keys()) == keys
    # The tree: same paths; a module keeps its type (transformer layers
    # become a subclass).
    got = dict((n, type(mod)) for n, mod in fused.named_modules())
    assert list(got) == [n for n, _ in modules]
    for n, t in modules:
        assert got[n] is t or issubclass(got[n], t)
    # strict-clean both ways
    plain, _ = make(name, seed=3)
    plain.load_state_dict(fused.state_dict(), strict=True)
    fused.load_state_dict(plain.state_dict(), strict=True)
    # the optimizer built before fuse trains the fused model
    w0 = [p.detach().clone() for p in fused.parameters()]
    fused(x).square().mean().backward()
    opt.step()
    assert any(not torch.equal(a, p) for a, p in zip(w0, fused.parameters()))


@pytest.mark.parametrize("name", NAMES)
def test_no_pytorch_gelu_op_left_in_forward(name):
    ref, fused, x = pair(name)
    fused.train()

    def ops(model):
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as p:
            model(x)
        return {e.key for e in p.key_averages()}

    left = ops(fused) & set(GELU_OPS)
    assert not left, f"{name}: {sorted(left)} left in the fused forward"
    assert ops(fused) & {"gelu_fusion::gelu", "gelu_fusion::bias_gelu",
                         "gelu_fusion::add_gelu", "gelu_fusion::geglu"}
    assert ops(ref) & set(GELU_OPS), "the zoo model has no PyTorch GELU op"


@pytest.mark.parametrize("name", NAMES)
def test_explain_text(name, capsys):
    m, _ = make(name)
    report = gelu_fusion.explain(m)
    text = capsys.readouterr().out
    assert text.strip() == report.table().strip()
    assert "module" in text and "became" in text
    for s in report.sites:
        assert s.result in text and s.pattern in text
        if s.source:  # '' where torch's code calls it (nn.Sequential)
            assert s.source.startswith("model_zoo.py:")
    fused_count = sum(s.fused for s in report.sites)
    assert f"{fused_count} of {len(report.sites)} GELU sites fused" in text
    gelu_fusion.fuse(m, verbose=True)
    assert capsys.readouterr().out.strip() == text.strip()


def _same(a, b, x):
    a.eval()
    b.eval()
    with torch.no_grad():
        torch.testing.assert_close(a(x), b(x), rtol=0, atol=0)


@pytest.mark.parametrize("name", NAMES)
def test_deepcopy_pickle_save(name):
    _, fused, x = pair(name)
    keys = list(fused.state_dict())
    types = [(n, type(mod).__name__) for n, mod in fused.named_modules()]
    for copied in (copy.deepcopy(fused), pickle.loads(pickle.dumps(fused))):
        assert list(copied.state_dict()) == keys
        assert [(n, type(mod).__name__) for n, mod in copied.named_modules()] == types
        _same(copied, fused, x)
        assert all(p is not q for p, q in zip(copied.parameters(), fused.parameters()))
    # The whole model is pickled code (a GraphModule, our modules): it loads
    # with weights_only=False, for files you trust, as any nn.Module does;
    # torch.load's default since PyTorch 2.6, weights_only=True, refuses it.
    buf = io.BytesIO()
    torch.save(fused, buf)
    buf.seek(0)
    loaded = torch.load(buf, weights_only=False)
    assert list(loaded.state_dict()) == keys
    _same(loaded, fused, x)
    buf.seek(0)
    with pytest.raises(pickle.UnpicklingError, match="weights_only"):
        torch.load(buf)


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_round_trip_weights_only(name):
    """A fused model's state_dict holds tensors only, under the original's
    keys: saved, it loads with weights_only=True (torch.load's default) into
    a fused or an unfused model of other weights, and an unfused model's
    state_dict loads into a fused one; outputs then equal those of the
    model of the same kind (fused or not) with the saved weights."""
    ref, fused, x = pair(name)
    other_seed = 5
    targets = {"unfused": make(name, seed=other_seed)[0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        targets["fused"] = gelu_fusion.fuse(make(name, seed=other_seed)[0])
    for source in (fused, make(name)[0]):
        buf = io.BytesIO()
        torch.save(source.state_dict(), buf)
        buf.seek(0)
        sd = torch.load(buf, weights_only=True)
        assert all(isinstance(v, torch.Tensor) for v in sd.values())
        for target_name, target in targets.items():
            target.load_state_dict(sd)
            _same(target, fused if target_name == "fused" else ref, x)


def _scripts(model, x):
    """Whether the model scripts and its script runs on x."""
    try:
        torch.jit.script(model)(x)
        return True
    except Exception:
        return False


@pytest.mark.parametrize("name", NAMES)
def test_script_and_trace_where_the_original_did(name):
    ref, fused, x = pair(name)
    ref.eval()
    fused.eval()
    with torch.no_grad():
        want = fused(x)
        traced = torch.jit.trace(fused, x, check_trace=False)
        torch.testing.assert_close(traced(x), want)
        if _scripts(copy.deepcopy(ref), x):
            scripted = torch.jit.script(fused)
            torch.testing.assert_close(scripted(x), want)
