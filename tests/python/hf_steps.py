"""One training step of a transformers model (hf_models.py) for the tests:
its loss and gradients, the comparison of a fused step with the unfused
one, and the PyTorch ops a step runs (torch.profiler)."""
import torch

import hf_models as H

TOL = 1e-5  # f32, relative to the model's largest gradient (or to the loss)
FUSED_OPS = ("gelu_fusion::gelu", "gelu_fusion::bias_gelu", "gelu_fusion::add_gelu",
             "gelu_fusion::geglu")
# PyTorch ops a GELU leaves in a step, called or spelled out.
GELU_CALLS = ("aten::gelu", "aten::gelu_backward")
GELU_PARTS = ("aten::erf", "aten::tanh", "aten::sigmoid", "aten::tanh_backward",
              "aten::sigmoid_backward")


def step(model, x, call=None):
    """Loss and gradients (by parameter name) of one training step; `call`
    runs the model where it is wrapped (compiled). Dropout draws the same
    masks in two models (same seed, same calls in the same order)."""
    model.zero_grad(set_to_none=True)
    torch.manual_seed(7)
    loss = H.loss_of(model if call is None else call, x)
    loss.backward()
    return loss.detach(), {n: p.grad for n, p in model.named_parameters()
                           if p.grad is not None}


def assert_same_step(ref, fused, x, what, call=None):
    """The fused model's loss and every gradient equal the reference's:
    the loss within TOL relative, each gradient within TOL of the largest
    (some are zero in theory and hold only rounding noise)."""
    l0, g0 = step(ref, x)
    l1, g1 = step(fused, x, call)
    assert abs(float(l1 - l0)) <= TOL * abs(float(l0)), (what, float(l0), float(l1))
    assert g0.keys() == g1.keys()
    scale = max(float(g.abs().max()) for g in g0.values())
    for k in g0:
        err = float((g1[k] - g0[k]).abs().max())
        assert err <= TOL * scale, f"{what} grad {k}: {err:.3g} > {TOL} * {scale:.3g}"


def op_counts(model, x, call=None):
    """How many times each op ran in one step (forward and backward)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step(model, x, call)
    return {e.key: e.count for e in prof.key_averages()}
