"""nn.TransformerEncoderLayer / nn.TransformerDecoderLayer with a GELU
activation ('gelu', F.gelu, or an nn.GELU / gelu_fusion.GELU module): the
feed-forward block becomes linear2(dropout(bias_gelu(x @ W1^T, b1))).

The layer keeps its object, Parameters, hooks and state_dict; only its
class becomes a subclass that overrides `_ff_block`. Its `forward` is
PyTorch's, so in inference the encoder layer still takes PyTorch's native
fast path (torch._transformer_encoder_layer_fwd) wherever it did; the
fused block runs in training and wherever the fast path does not apply.
"""
import torch.nn.functional as F
from torch import Tensor, nn

from . import runtime as rt
from .report import Site
from ..modules import GELU as _GELU


def _form(activation):
    if activation is F.gelu:
        return "none"
    if type(activation) in (nn.GELU, _GELU):
        return activation.approximate
    return None


class FusedFFEncoderLayer(nn.TransformerEncoderLayer):
    """nn.TransformerEncoderLayer whose feed-forward block runs through
    gelu_fusion (made by `fuse`; same Parameters and state_dict)."""
    gelu_fusion_approximate: str

    def _ff_block(self, x: Tensor) -> Tensor:
        h = rt.linear_bias_gelu(x, self.linear1.weight, self.linear1.bias,
                                self.gelu_fusion_approximate)
        return self.dropout2(self.linear2(self.dropout(h)))


class FusedFFDecoderLayer(nn.TransformerDecoderLayer):
    """nn.TransformerDecoderLayer whose feed-forward block runs through
    gelu_fusion (made by `fuse`; same Parameters and state_dict)."""
    gelu_fusion_approximate: str

    def _ff_block(self, x: Tensor) -> Tensor:
        h = rt.linear_bias_gelu(x, self.linear1.weight, self.linear1.bias,
                                self.gelu_fusion_approximate)
        return self.dropout3(self.linear2(self.dropout(h)))


_FUSED = {nn.TransformerEncoderLayer: FusedFFEncoderLayer,
          nn.TransformerDecoderLayer: FusedFFDecoderLayer}


def handles(m: nn.Module) -> bool:
    return type(m) in _FUSED or type(m) in _FUSED.values()


def fuse(m: nn.Module, path: str, apply: bool, save_memory: bool = False):
    """Fuses one layer in place (when `apply`); returns its Site, or None
    when its activation is not a GELU."""
    name = type(m).__name__
    if type(m) in _FUSED.values():
        return Site(path, "", f"gelu_fusion: {name}._ff_block", m.gelu_fusion_approximate,
                    "bias_gelu", "fused already")
    act = m.activation
    form = _form(act)
    act_name = getattr(act, "__name__", type(act).__name__)
    site = Site(path, "", f"{name}(activation={act_name})", str(form))
    if form is None:
        if "gelu" not in act_name.lower():
            return None
        site.result, site.reason = "unchanged", "activation is not a GELU fuse knows"
    elif m.linear1.bias is None:
        site.result, site.reason = "unchanged", "linear1 has no bias"
    else:
        site.result = "bias_gelu"
        site.reason = ("feed-forward block; inference keeps PyTorch's fast path"
                       if type(m) is nn.TransformerEncoderLayer else "feed-forward block")
        if save_memory:
            site.reason += ("; memory saving not applied: a dropout between the GELU "
                            "and linear2 (the dropout's input is kept)")
        if apply:
            m.gelu_fusion_approximate = form
            m.__class__ = _FUSED[type(m)]
    return site
