"""One training step of a transformers model (hf_models.py) for the tests:
its loss and gradients, the comparison of a fused step with the unfused
one, and the PyTorch ops a step runs (torch.profiler)."""
import copy

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
    assert g0.keys() == g1.keys()
    scale = max(float(g.abs().max()) for g in g0.values())
    far = abs(float(l1 - l0)) > TOL * abs(float(l0)) or any(
        float((g1[k] - g0[k]).abs().max()) > TOL * scale for k in g0)
    if far:  # closer than the f32 models' own rounding? ask the f64 model
        _no_less_accurate(ref, x, what, (l0, g0), (l1, g1), scale)


def _no_less_accurate(ref, x, what, unfused, fused, scale):
    """The fused step is no further from the unfused model's step in f64
    than twice the unfused f32 step is (or within TOL of it): rounding in
    deep models (a tied embedding's gradient sums over every token and
    both stacks) can exceed TOL, and differ from CPU to CPU."""
    m64 = copy.deepcopy(ref).double()
    x64 = {k: v.double() if torch.is_floating_point(v) else v for k, v in x.items()}
    l64, g64 = step(m64, x64)
    for name, a, b, want, tol in (
            [("loss", unfused[0], fused[0], l64, TOL * abs(float(l64)))]
            + [(f"grad {k}", unfused[1][k], fused[1][k], g64[k], TOL * scale)
               for k in g64]):
        e_unfused = float((a.double() - want).abs().max())
        e_fused = float((b.double() - want).abs().max())
        assert e_fused <= max(2 * e_unfused, tol), (
            f"{what} {name}: {e_fused:.3g} from the f64 step, the unfused f32 "
            f"step {e_unfused:.3g} (tolerance {tol:.3g})")


def op_counts(model, x, call=None):
    """How many times each op ran in one step (forward and backward)."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        step(model, x, call)
    return {e.key: e.count for e in prof.key_averages()}
