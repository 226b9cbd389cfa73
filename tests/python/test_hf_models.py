"""gelu_fusion.fuse on transformers' own model classes (hf_models.py: tiny
random configs of decoders, encoders, encoder-decoders (text and audio),
GeGLU decoders and vision models), one for each GELU of transformers'
activation table:

- every ACT2FN GELU that computes one of our forms is fused in a model, and
  the clipped one (gelu_10) stays unfused with a reason;
- no GELU is left on PyTorch's ops in a training step (profiler counts of
  erf/tanh/sigmoid equal those of the same model built with ReLU, so the
  model's other uses of them are not counted as GELUs);
- the loss and every parameter gradient equal the unfused model's, each
  gradient within a tolerance of the model's largest gradient (some are zero
  in theory and hold only rounding noise);
- state_dict keeps its keys and tensors.
"""
import copy
import warnings

import pytest
import torch

import gelu_fusion
import hf_models as H

NAMES = sorted(H.MODELS)
FUSED_OPS = ("gelu_fusion::gelu", "gelu_fusion::bias_gelu", "gelu_fusion::add_gelu",
             "gelu_fusion::geglu")
# PyTorch ops a GELU leaves in a step, called or spelled out.
GELU_CALLS = ("aten::gelu", "aten::gelu_backward")
GELU_PARTS = ("aten::erf", "aten::tanh", "aten::sigmoid", "aten::tanh_backward",
              "aten::sigmoid_backward")
TOL = 1e-5  # f32, relative to the model's largest gradient (or to the loss)


@pytest.fixture(scope="module")
def pairs():
    """name -> (unfused model, fused deep copy); fused once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            model = H.build(name)
            if H.MODELS[name].fused:
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # no "found no GELU"
                    fused = gelu_fusion.fuse(copy.deepcopy(model))
            else:
                with pytest.warns(UserWarning, match="found no GELU"):
                    fused = gelu_fusion.fuse(copy.deepcopy(model))
            cache[name] = (model, fused)
        return cache[name]
    return get


def step(model, x):
    """Loss and gradients (by name) of one training step; dropout draws the
    same masks in both models (same seed, same calls in the same order)."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    loss = H.loss_of(model, x)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()
                           if p.grad is not None}


def op_counts(model, x):
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step(model, x)
    return {e.key: e.count for e in prof.key_averages()}


def test_every_gelu_of_the_activation_table_is_covered():
    keys = H.gelu_keys()
    assert {"gelu", "gelu_new", "quick_gelu", "gelu_10"} <= set(keys)
    covered = {spec.act for spec in H.MODELS.values()}
    assert set(keys) <= covered, f"no model uses {sorted(set(keys) - covered)}"
    for name, spec in H.MODELS.items():
        # A model is expected fused exactly when its activation is one of
        # our forms, judged by the values it computes.
        assert spec.fused == (H.form_of(spec.act) is not None), name


def test_clipped_gelu_is_a_different_function():
    assert H.form_of("gelu_10") is None
    assert H.form_of("gelu") == "none" and H.form_of("quick_gelu") == "quick"
    for key in ("gelu_new", "gelu_fast", "gelu_accurate", "gelu_pytorch_tanh",
                "gelu_python_tanh"):
        assert H.form_of(key) == "tanh", key


def known_gap(request, name):
    """Strict xfail for a model whose GELU fuse does not reach yet."""
    if H.MODELS[name].known:
        request.applymarker(pytest.mark.xfail(reason=H.MODELS[name].known, strict=True))


@pytest.mark.parametrize("name", NAMES)
def test_sites_found_and_fused(name, pairs, request):
    known_gap(request, name)
    spec = H.MODELS[name]
    model, fused = pairs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # gelu_10: "found no GELU"
        report = gelu_fusion.explain(copy.deepcopy(model), print_table=False)
        again = gelu_fusion.explain(fused, print_table=False)
    text = report.table()
    if spec.fused:
        assert len(report.sites) == spec.sites, text
        form = H.form_of(spec.act)
        assert all(s.fused and s.form == form for s in report.sites), text
    else:
        assert not report.fused, text
        assert all(s.reason for s in report.sites), text
        # Each clipped activation is named (a site, or a module not traced),
        # with the reason it stays.
        clipped = [p for p, m in model.named_modules()
                   if type(m).__name__ == "ClippedGELUActivation"]
        assert len(clipped) == spec.sites
        rows = [(s.path, s.reason) for s in report.sites] + report.untraced
        for path in clipped:
            assert any(p == path and why for p, why in rows), (path, text)
    assert len(again.fused) == len(report.fused), again.table()


@pytest.mark.parametrize("name", NAMES)
def test_no_gelu_left_on_pytorch_ops(name, pairs, request):
    known_gap(request, name)
    spec = H.MODELS[name]
    model, fused = pairs(name)
    x = H.inputs(name)
    relu = op_counts(H.build(name, act="relu"), x)  # the model without GELUs
    before, after = op_counts(model, x), op_counts(fused, x)
    parts = lambda c: {k: c.get(k, 0) for k in GELU_PARTS}  # noqa: E731
    if not spec.fused:
        assert not any(after.get(k, 0) for k in FUSED_OPS)
        assert parts(after) == parts(before)
        return
    assert any(before.get(k, 0) for k in GELU_CALLS) or parts(before) != parts(relu), \
        f"{name}: the unfused model shows no GELU in the profile"
    assert not any(after.get(k, 0) for k in GELU_CALLS), after
    assert parts(after) == parts(relu), (parts(after), parts(relu))
    assert sum(after.get(k, 0) for k in FUSED_OPS) >= spec.sites


@pytest.mark.parametrize("name", NAMES)
def test_loss_and_every_gradient_equal_unfused(name, pairs):
    model, fused = pairs(name)
    x = H.inputs(name)
    for train in (True, False):
        model.train(train)
        fused.train(train)
        l0, g0 = step(model, x)
        l1, g1 = step(fused, x)
        assert abs(float(l1 - l0)) <= TOL * abs(float(l0)), (name, float(l0), float(l1))
        assert g0.keys() == g1.keys()
        scale = max(float(g.abs().max()) for g in g0.values())
        for k in g0:
            err = float((g1[k] - g0[k]).abs().max())
            assert err <= TOL * scale, f"{name} grad {k}: {err:.3g} > {TOL} * {scale:.3g}"
    model.train()
    fused.train()


@pytest.mark.parametrize("name", NAMES)
def test_state_dict_unchanged(name, pairs):
    model, fused = pairs(name)
    want, got = model.state_dict(), fused.state_dict()
    assert list(got) == list(want)
    for k in want:
        assert torch.equal(got[k], want[k]), k
    names = [n for n, _ in model.named_parameters()]
    assert [n for n, _ in fused.named_parameters()] == names
