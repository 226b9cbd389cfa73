"""A few transformers models (hf_models.py), fused and then compiled with
torch.compile (backend aot_eager: Dynamo and AOTAutograd, no Inductor):
the compiled fused model's loss and gradients equal the unfused eager
model's. Under torch.compile a fused module runs its own forward (what
Dynamo traces is the model's code, unfused; README); where the compiled
graph runs none of our ops the test says so as an expected failure."""
import copy

import pytest
import torch

import gelu_fusion
import hf_models as H

# A decoder through Conv1D, an encoder, a GeGLU encoder-decoder, a vision model.
NAMES = ("gpt2", "bert", "t5_gated", "vit")
TOL = 1e-5


def step(model, x, call=None):
    """Loss and gradients by parameter name; `call` runs the model (its
    compiled wrapper), `model` names the parameters."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    loss = H.loss_of(model if call is None else call, x)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()
                           if p.grad is not None}


@pytest.mark.parametrize("name", NAMES)
def test_fuse_then_compile(name):
    torch._dynamo.reset()
    model = H.build(name)
    model.config.use_cache = False
    fused = gelu_fusion.fuse(copy.deepcopy(model))
    compiled = torch.compile(fused, backend="aot_eager", fullgraph=False)
    x = H.inputs(name)
    l0, g0 = step(model, x)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        l1, g1 = step(fused, x, compiled)
    assert abs(float(l1 - l0)) <= TOL * abs(float(l0))
    assert g0.keys() == g1.keys()
    scale = max(float(g.abs().max()) for g in g0.values())
    for k in g0:
        err = float((g1[k] - g0[k]).abs().max())
        assert err <= TOL * scale, f"{name} grad {k}: {err:.3g} > {TOL} * {scale:.3g}"
    ops = {e.key for e in prof.key_averages()}
    if not any(k.startswith("gelu_fusion::") for k in ops):
        pytest.xfail("the compiled graph runs the model's own GELUs: fuse does "
                     "not act inside torch.compile yet")
    assert "aten::gelu" not in ops  # where ours run, no GELU of PyTorch's is left
