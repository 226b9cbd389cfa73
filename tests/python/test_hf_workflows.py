"""What users do to a transformers model after fusing it, done the same way
to the fused model and to an unfused copy: the fused one must train as the
unfused one does (loss and every gradient, hf_steps.assert_same_step).

- a frozen submodule (the embeddings and the first block);
- a LoRA adapter swapped in for every Linear (and GPT-2's Conv1D);
- a forward hook on every Linear that changes its output;
- an attribute changed after fuse: each activation replaced by ReLU;
- the model switched to eval mode (dropout off).
"""
import copy
import warnings

import pytest
import torch
from torch import nn
from transformers.pytorch_utils import Conv1D

import gelu_fusion
import hf_models as H
from hf_steps import assert_same_step

MODELS = ("gpt2", "bert", "t5_gated", "vit")


def _pair(name):
    model = H.build(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fused = gelu_fusion.fuse(copy.deepcopy(model))
    return model, fused


def _freeze(model):
    for n, p in model.named_parameters():
        if "embed" in n or ".0." in n:
            p.requires_grad_(False)


class LoRA(nn.Module):
    """A LoRA adapter around a Linear (or Conv1D): base(x) + x A B, with a
    non-zero B so that it changes the output."""

    def __init__(self, base, rank=2, seed=0):
        super().__init__()
        self.base = base
        w = base.weight
        d_in, d_out = ((w.shape[0], w.shape[1]) if isinstance(base, Conv1D)
                       else (w.shape[1], w.shape[0]))
        g = torch.Generator().manual_seed(seed)
        self.a = nn.Parameter(torch.randn(d_in, rank, generator=g) / d_in ** 0.5)
        self.b = nn.Parameter(torch.randn(rank, d_out, generator=g) * 0.1)

    # As peft's layers: model code that reads .weight (T5 checks its dtype)
    # sees the base layer's.
    @property
    def weight(self):
        return self.base.weight

    def forward(self, x):
        return self.base(x) + x @ self.a @ self.b


def _lora(model):
    targets = [(n, m) for n, m in model.named_modules()
               if isinstance(m, (nn.Linear, Conv1D)) and "head" not in n]
    for i, (n, m) in enumerate(targets):
        parent, _, child = n.rpartition(".")
        setattr(model.get_submodule(parent), child, LoRA(m, seed=i))


def _hooks(model):
    for m in model.modules():
        if isinstance(m, (nn.Linear, Conv1D)):
            m.register_forward_hook(lambda mod, args, out: out * 0.75 + 0.01)


_ACT_ATTRS = ("act", "act_fn", "intermediate_act_fn", "activation", "activation_fn",
              "transform_act_fn")


def _relu_activations(model):
    """Every activation attribute set to ReLU (a plain attribute for some
    models, a submodule for others)."""
    changed = 0
    for m in model.modules():
        for a in _ACT_ATTRS:
            if a in m.__dict__ or a in m._modules:
                setattr(m, a, nn.ReLU())
                changed += 1
    assert changed, "no activation attribute found"


def _eval(model):
    model.eval()


@pytest.mark.parametrize("change", [_freeze, _lora, _hooks, _relu_activations, _eval],
                         ids=lambda f: f.__name__.strip("_"))
@pytest.mark.parametrize("name", MODELS)
def test_change_after_fuse(name, change):
    ref, fused = _pair(name)
    change(ref)
    change(fused)
    assert_same_step(ref, fused, H.inputs(name), f"{name} after {change.__name__}")
