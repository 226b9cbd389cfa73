"""A few transformers models (hf_models.py), fused and then compiled:

- torch.compile(fuse(model), backend=gelu_fusion.backend("aot_eager")): the
  backend fuses the GELUs of each graph Dynamo captures, so a training step
  runs our ops and no GELU of PyTorch's (erf/tanh/sigmoid counts equal the
  ReLU-built model's), with loss and gradients equal to the unfused eager
  model's;
- torch.compile(fuse(model), backend="aot_eager"): the default way compiles
  the model's own forward (docs/pytorch.md), unfused, and equals it too;
- gelu_10 under the backend keeps its clip.

aot_eager: Dynamo and AOTAutograd without Inductor (fast).
"""
import copy

import pytest
import torch

import gelu_fusion
import hf_models as H
from hf_steps import GELU_CALLS, GELU_PARTS, assert_same_step, op_counts

# A decoder through Conv1D, an encoder, a GeGLU encoder-decoder, a vision model.
NAMES = ("gpt2", "bert", "t5_gated", "vit")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def _model(name):
    model = H.build(name)
    model.config.use_cache = False
    return model, gelu_fusion.fuse(copy.deepcopy(model))


@pytest.mark.parametrize("name", NAMES)
def test_fuse_then_compile_with_our_backend(name):
    model, fused = _model(name)
    backend = gelu_fusion.backend("aot_eager")
    compiled = torch.compile(fused, backend=backend)
    x = H.inputs(name)
    assert_same_step(model, fused, x, name, compiled)
    sites = [s for r in backend.reports for s in r.sites]
    assert len(sites) >= H.MODELS[name].sites and all(s.fused for s in sites), \
        "\n".join(r.table() for r in backend.reports)
    ops = op_counts(fused, x, compiled)  # compiled already: the step alone
    relu = op_counts(H.build(name, act="relu"), x)
    assert any(k.startswith("gelu_fusion::") for k in ops), sorted(ops)
    assert not any(ops.get(k, 0) for k in GELU_CALLS), ops
    assert {k: ops.get(k, 0) for k in GELU_PARTS} == {k: relu.get(k, 0) for k in GELU_PARTS}


@pytest.mark.parametrize("name", ("gpt2", "vit"))
def test_fuse_then_compile_default_backend_compiles_the_unfused_forward(name):
    model, fused = _model(name)
    compiled = torch.compile(fused, backend="aot_eager")
    x = H.inputs(name)
    assert_same_step(model, fused, x, name, compiled)
    ops = op_counts(fused, x, compiled)  # compiled already: the step alone
    assert not any(k.startswith("gelu_fusion::") for k in ops), sorted(ops)


def test_clipped_gelu_under_our_backend_keeps_its_clip():
    """gelu_10 is clip(gelu(x), -10, 10). Dynamo inlines the activation, so
    the backend sees the GELU call and may fuse it; the clip stays, and the
    model computes what it did."""
    name = "distilbert_gelu_10"
    model = H.build(name)
    fused = copy.deepcopy(model)
    compiled = torch.compile(fused, backend=gelu_fusion.backend("aot_eager"))
    x = H.inputs(name)
    assert_same_step(model, fused, x, name, compiled)
    ops, eager = op_counts(fused, x, compiled), op_counts(model, x)
    # torch.clip runs aten::clamp (eager, under aten::clip) or is one (compiled)
    assert ops.get("aten::clamp", 0) == eager.get("aten::clamp", 0) > 0
