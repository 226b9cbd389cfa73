"""The calls `fuse` puts into a fused graph where a rewrite needs a check
that only the tensors can answer (a shape, a dtype): each computes the fused
op when the tensors fit today's kernels and the original expression
otherwise, so a fused model never computes something else.

All are TorchScript-compatible (a fused model scripts where the original
did) and call the public functions of gelu_fusion.functional, whose
fallbacks and promotion rules then apply.
"""
from typing import List

import torch
import torch.nn.functional as F
from torch import Tensor

from .functional import add_gelu, bias_gelu, geglu, gelu

__all__ = ["bias_gelu_or_add", "add_bias_gelu", "linear_bias_gelu", "addmm_bias_gelu",
           "add_gelu_or_add", "geglu_halves", "geglu_halves_gelu_second",
           "geglu_two_linears", "geglu_two_linears_bias"]

# What each call computes, as `fuse` reports it.
RESULT = {"bias_gelu_or_add": "bias_gelu", "add_bias_gelu": "bias_gelu",
          "linear_bias_gelu": "bias_gelu",
          "addmm_bias_gelu": "bias_gelu", "add_gelu_or_add": "add_gelu",
          "geglu_halves": "geglu", "geglu_halves_gelu_second": "geglu",
          "geglu_two_linears": "geglu",
          "geglu_two_linears_bias": "geglu"}


def _bias_fits(y: Tensor, bias: Tensor) -> bool:
    # The bias_gelu kernel: a 1-D bias the size of y's last dimension.
    return y.dim() >= 1 and bias.dim() == 1 and y.shape[-1] == bias.shape[0]


def bias_gelu_or_add(y: Tensor, bias: Tensor, approximate: str) -> Tensor:
    """gelu(y + bias). The bias takes y's dtype first, as autocast gives it
    to the matmul that y came from (F.linear, addmm)."""
    if _bias_fits(y, bias):
        return bias_gelu(y, bias.to(y.dtype), approximate)
    return gelu(y + bias, approximate)


def add_bias_gelu(y: Tensor, bias: Tensor, approximate: str) -> Tensor:
    """gelu(y + bias) written out: bias_gelu where the bias fits and has
    y's dtype (else `+` would promote, and so does the fallback)."""
    if _bias_fits(y, bias) and bias.dtype == y.dtype:
        return bias_gelu(y, bias, approximate)
    return gelu(y + bias, approximate)


def linear_bias_gelu(x: Tensor, weight: Tensor, bias: Tensor,
                     approximate: str) -> Tensor:
    """gelu(F.linear(x, weight, bias)) as a bias-free matmul and bias_gelu."""
    return bias_gelu_or_add(F.linear(x, weight), bias, approximate)


def addmm_bias_gelu(bias: Tensor, a: Tensor, w: Tensor, shape: List[int],
                    approximate: str) -> Tensor:
    """gelu(torch.addmm(bias, a, w).view(shape)) (GPT-2's Conv1D); the view
    must keep the matmul's last dimension for the bias to move past it."""
    y = torch.mm(a, w)
    v = y.reshape(shape)
    if _bias_fits(y, bias) and v.dim() >= 1 and v.shape[-1] == y.shape[-1]:
        return bias_gelu(v, bias.to(v.dtype), approximate)
    return gelu((y + bias.to(y.dtype)).reshape(shape), approximate)


def add_gelu_or_add(a: Tensor, b: Tensor, approximate: str) -> Tensor:
    """gelu(a + b): add_gelu where a and b have one shape and dtype (today's
    kernel), else the sum then gelu (also where an addend is not a tensor:
    the graph cannot always tell)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return gelu(a + b, approximate)
    if a.shape == b.shape and a.dtype == b.dtype:
        return add_gelu(a, b, approximate)
    return gelu(a + b, approximate)


def geglu_halves(x: Tensor, half: int, approximate: str) -> Tensor:
    """gelu(x[..., :H]) * x[..., H:] where x's last dimension is 2H; `half`
    is H as the model wrote it (split size or slice bound), or -1 for
    chunk(2, -1). Other splits compute the model's own expression."""
    n = x.shape[-1] if x.dim() >= 1 else 0
    h = (n + 1) // 2 if half < 0 else half   # chunk's first piece is ceil
    if x.dim() >= 1 and 2 * h == n:
        return geglu(x, approximate)
    return gelu(x[..., :h], approximate) * x[..., h:]


# Whether the geglu op takes gelu_half (the GELU on the second half).
HAS_GELU_HALF = "gelu_half" in str(torch.ops.gelu_fusion.geglu.default._schema)


def geglu_halves_gelu_second(x: Tensor, half: int, approximate: str) -> Tensor:
    """x[..., :H] * gelu(x[..., H:]) (diffusers' GEGLU) as geglu with
    gelu_half='second', where x's last dimension is 2H and the kernel takes
    x's dtype and device; else the model's own expression."""
    n = x.shape[-1] if x.dim() >= 1 else 0
    h = (n + 1) // 2 if half < 0 else half
    kernel_dtype = (x.dtype == torch.float32 or x.dtype == torch.bfloat16
                    or x.dtype == torch.float16)
    if x.dim() >= 1 and 2 * h == n and kernel_dtype and x.device.type == "cpu":
        return torch.ops.gelu_fusion.geglu(x, approximate=approximate,
                                           gelu_half="second")
    return x[..., :h] * gelu(x[..., h:], approximate)


def geglu_two_linears(x: Tensor, w_gate: Tensor, w_up: Tensor,
                      approximate: str) -> Tensor:
    """gelu(F.linear(x, w_gate)) * F.linear(x, w_up) (T5's gated FFN) as one
    matmul on the stacked weights and geglu; gradients reach both weights
    through the cat."""
    return geglu(F.linear(x, torch.cat([w_gate, w_up], 0)), approximate)


def geglu_two_linears_bias(x: Tensor, w_gate: Tensor, w_up: Tensor,
                           b_gate: Tensor, b_up: Tensor,
                           approximate: str) -> Tensor:
    """As geglu_two_linears, with each Linear's bias."""
    w = torch.cat([w_gate, w_up], 0)
    b = torch.cat([b_gate, b_up], 0)
    return geglu(F.linear(x, w, b), approximate)
