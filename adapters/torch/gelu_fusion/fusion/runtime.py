"""The calls `fuse` puts into a fused graph where a rewrite needs a check
that only the tensors can answer (a shape, a dtype): each computes the fused
op when the tensors fit today's kernels and the original expression
otherwise, so a fused model never computes something else.

All are TorchScript-compatible (a fused model scripts where the original
did) and call the public functions of gelu_fusion.functional, whose
fallbacks and promotion rules then apply.
"""
from typing import List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..functional import add_gelu, bias_gelu, geglu, gelu

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
    to the matmul that y came from (F.linear, addmm). A bias of another
    shape broadcasts through add_gelu, as the matmul's would."""
    if _bias_fits(y, bias):
        return bias_gelu(y, bias.to(y.dtype), approximate)
    return add_gelu(y, bias.to(y.dtype), approximate)


def add_bias_gelu(y: Tensor, bias: Tensor, approximate: str) -> Tensor:
    """gelu(y + bias) written out: bias_gelu where the bias fits (promoting
    a bias of another dtype as `+` does: torch.result_type), else add_gelu
    (which broadcasts and promotes as `+` does)."""
    if _bias_fits(y, bias):
        return bias_gelu(y, bias, approximate)
    return add_gelu(y, bias, approximate)


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
    """gelu(a + b) as add_gelu, which broadcasts and promotes as `a + b`
    does (one pass for one shape and dtype; a bias-shaped addend runs
    bias_gelu's kernel); the sum then gelu where an addend is not a tensor
    (the graph cannot always tell)."""
    if not isinstance(a, Tensor) or not isinstance(b, Tensor):
        return gelu(a + b, approximate)
    return add_gelu(a, b, approximate)


def _halves_at(x: Tensor, half: int, dim: int, split: bool) -> Tuple[int, int, int, bool]:
    """(first piece's size H, second piece's start, its size, whether dim
    is x's last and its size 2H), for x's size n along dim: H is `half`, or
    chunk's ceil(n / 2) where half is -1; the second piece is the rest of
    dim, or the split's second piece (at most H) for a split."""
    if x.dim() == 0:
        return 0, 0, 0, False
    n = x.shape[dim]
    h = (n + 1) // 2 if half < 0 else half   # chunk's first piece is ceil
    rest = n - h
    second = min(h, rest) if split else rest
    return h, h, second, (dim == -1 or dim == x.dim() - 1) and 2 * h == n


def geglu_halves(x: Tensor, half: int, approximate: str, dim: int = -1,
                 split: bool = False) -> Tensor:
    """gelu(first) * second, the first two pieces of x along dim, where the
    model wrote H as a split size or slice bound (`half`), or -1 for
    chunk(2). geglu where dim is the last and its size is 2H; else the
    model's own expression."""
    h, start, second, fits = _halves_at(x, half, dim, split)
    if fits:
        return geglu(x, approximate)
    return gelu(x.narrow(dim, 0, h), approximate) * x.narrow(dim, start, second)


# Whether the geglu op takes gelu_half (the GELU on the second half).
HAS_GELU_HALF = "gelu_half" in str(torch.ops.gelu_fusion.geglu.default._schema)


def geglu_halves_gelu_second(x: Tensor, half: int, approximate: str,
                             dim: int = -1, split: bool = False) -> Tensor:
    """first * gelu(second) (diffusers' GEGLU) as geglu with
    gelu_half='second', where dim is x's last and its size is 2H; else the
    model's own expression."""
    h, start, second, fits = _halves_at(x, half, dim, split)
    if fits:
        return geglu(x, approximate, "second")
    return x.narrow(dim, 0, h) * gelu(x.narrow(dim, start, second), approximate)


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


# --- The GELU and the next Linear as one node (patterns/save_memory.py) ---------
# Each keeps the GELU's input for the backward and not its output
# (gelu_linear.py) where the tensors fit the kernels and a backward will
# run; else (TorchScript, no grad, other dtypes or devices, forward-mode
# AD) it computes the fused GELU then the Linear, as before.

def _keeps_input(h: Tensor, w2: Tensor) -> bool:
    import torch.autograd.forward_ad as fwAD
    from ..functional import _on_kernel
    from ..gelu_linear import _transformed
    if not torch.is_grad_enabled() or fwAD._current_level >= 0:
        return False
    if torch._C._get_tracing_state() is not None or _transformed(h, w2):
        return False  # torch.jit.trace, torch.func transforms
    if not (_on_kernel(h) and w2.is_cpu and h.dim() >= 1):
        return False
    return w2.dtype == h.dtype or torch.is_autocast_enabled("cpu")


@torch.jit.unused
def _eager_bias_gelu_linear(h: Tensor, b1: Optional[Tensor], w2: Tensor,
                            b2: Optional[Tensor], approximate: str) -> Tensor:
    from ..gelu_linear import bias_gelu_linear
    if (b1 is None or _bias_fits(h, b1)) and _keeps_input(h, w2):
        return bias_gelu_linear(h, b1, w2, b2, approximate)
    y = gelu(h, approximate) if b1 is None else bias_gelu_or_add(h, b1, approximate)
    return F.linear(y, w2, b2)


@torch.jit.unused
def _eager_geglu_linear(x: Tensor, w2: Tensor, b2: Optional[Tensor], approximate: str,
                        gelu_half: str) -> Tensor:
    from ..gelu_linear import geglu_linear
    if _keeps_input(x, w2) and x.shape[-1] % 2 == 0:
        return geglu_linear(x, w2, b2, approximate, gelu_half)
    h = x.shape[-1] // 2
    if gelu_half == "second":
        return F.linear(geglu_halves_gelu_second(x, h, approximate), w2, b2)
    return F.linear(geglu_halves(x, h, approximate), w2, b2)


def gelu_linear(h: Tensor, w2: Tensor, b2: Optional[Tensor], approximate: str) -> Tensor:
    """F.linear(gelu(h), w2, b2), keeping h and not gelu(h)."""
    if torch.jit.is_scripting():
        return F.linear(gelu(h, approximate), w2, b2)
    return _eager_bias_gelu_linear(h, None, w2, b2, approximate)


def linear_bias_gelu_linear(x: Tensor, w1: Tensor, b1: Tensor, w2: Tensor,
                            b2: Optional[Tensor], approximate: str) -> Tensor:
    """F.linear(gelu(F.linear(x, w1, b1)), w2, b2), keeping x and the
    bias-free F.linear(x, w1), not the GELU's output."""
    if torch.jit.is_scripting():
        return F.linear(linear_bias_gelu(x, w1, b1, approximate), w2, b2)
    h = F.linear(x, w1)
    return _eager_bias_gelu_linear(h, b1.to(h.dtype), w2, b2, approximate)


def addmm_bias_gelu_linear(bias: Tensor, a: Tensor, w: Tensor, shape: List[int],
                           w2: Tensor, b2: Optional[Tensor], approximate: str) -> Tensor:
    """F.linear(addmm_bias_gelu(bias, a, w, shape), w2, b2), keeping the
    matmul's output (reshaped), not the GELU's, where the bias fits (as
    addmm_bias_gelu checks)."""
    if torch.jit.is_scripting():
        return F.linear(addmm_bias_gelu(bias, a, w, shape, approximate), w2, b2)
    y = torch.mm(a, w)
    v = y.reshape(shape)
    if _bias_fits(y, bias) and v.dim() >= 1 and v.shape[-1] == y.shape[-1]:
        return _eager_bias_gelu_linear(v, bias.to(v.dtype), w2, b2, approximate)
    return F.linear(gelu((y + bias.to(y.dtype)).reshape(shape), approximate), w2, b2)


def conv1d_input_size(z: Tensor, weight: Tensor) -> List[int]:
    """The size of a Conv1D's input, from its output z = [..., out] and its
    weight [in, out]: what the Conv1D's own code asks of its input, once
    the input is no longer a tensor in the graph (conv1d.py). A
    torch.Size in eager, as the input's size() is (List[int] scripted)."""
    return z.size()[:-1] + (weight.shape[0],)


def conv1d_input_size_at(z: Tensor, weight: Tensor, dim: int) -> int:
    """conv1d_input_size(z, weight)[dim]."""
    if dim == -1 or dim == z.dim() - 1:
        return weight.shape[0]
    return z.size(dim)


def geglu_halves_linear(x: Tensor, half: int, w2: Tensor, b2: Optional[Tensor],
                        approximate: str, dim: int = -1, split: bool = False) -> Tensor:
    """F.linear(geglu_halves(x, half, dim, split), w2, b2), keeping x, not
    geglu(x), where the halves fit the kernel (as geglu_halves checks)."""
    if torch.jit.is_scripting() or not _halves_at(x, half, dim, split)[3]:
        return F.linear(geglu_halves(x, half, approximate, dim, split), w2, b2)
    return _eager_geglu_linear(x, w2, b2, approximate, "first")


def geglu_halves_gelu_second_linear(x: Tensor, half: int, w2: Tensor,
                                    b2: Optional[Tensor], approximate: str,
                                    dim: int = -1, split: bool = False) -> Tensor:
    """F.linear(geglu_halves_gelu_second(x, half, dim, split), w2, b2), keeping x."""
    if torch.jit.is_scripting() or not _halves_at(x, half, dim, split)[3]:
        return F.linear(geglu_halves_gelu_second(x, half, approximate, dim, split),
                        w2, b2)
    return _eager_geglu_linear(x, w2, b2, approximate, "second")


def geglu_two_linears_linear(x: Tensor, w_gate: Tensor, w_up: Tensor, w2: Tensor,
                             b2: Optional[Tensor], approximate: str) -> Tensor:
    """F.linear(geglu_two_linears(...), w2, b2), keeping the stacked
    projection, not geglu's output."""
    if torch.jit.is_scripting():
        return F.linear(geglu_two_linears(x, w_gate, w_up, approximate), w2, b2)
    return _eager_geglu_linear(F.linear(x, torch.cat([w_gate, w_up], 0)), w2, b2,
                               approximate, "first")


def geglu_two_linears_bias_linear(x: Tensor, w_gate: Tensor, w_up: Tensor,
                                  b_gate: Tensor, b_up: Tensor, w2: Tensor,
                                  b2: Optional[Tensor], approximate: str) -> Tensor:
    """As geglu_two_linears_linear, with each Linear's bias."""
    if torch.jit.is_scripting():
        return F.linear(geglu_two_linears_bias(x, w_gate, w_up, b_gate, b_up, approximate),
                        w2, b2)
    p = F.linear(x, torch.cat([w_gate, w_up], 0), torch.cat([b_gate, b_up], 0))
    return _eager_geglu_linear(p, w2, b2, approximate, "first")


_WITH_NEXT_LINEAR = {"gelu_linear": "gelu", "linear_bias_gelu_linear": "bias_gelu",
                     "addmm_bias_gelu_linear": "bias_gelu",
                     "geglu_halves_linear": "geglu",
                     "geglu_halves_gelu_second_linear": "geglu",
                     "geglu_two_linears_linear": "geglu",
                     "geglu_two_linears_bias_linear": "geglu"}
__all__ += list(_WITH_NEXT_LINEAR) + ["conv1d_input_size", "conv1d_input_size_at"]
RESULT.update(_WITH_NEXT_LINEAR)
