"""The functional API: thin, TorchScript-compatible calls of the ops.

Every function takes CPU tensors of float32, bfloat16 or float16 and returns
a new tensor of the same dtype; inputs may be non-contiguous. Gradients flow
to every input that requires them. Wrong device, dtype or shape raise
RuntimeError naming the op, the argument and what was expected.

In eager mode the calls go to the ops' C++ entry points directly, skipping
the torch.ops attribute lookups and keyword parsing where they can: a call
costs within a microsecond of torch.nn.functional.gelu's.
"""
import torch
from torch import Tensor

# The ops' raw entry points (what torch.ops.gelu_fusion.<op>(...) calls).
_gelu = torch.ops.gelu_fusion.gelu._op
_bias_gelu = torch.ops.gelu_fusion.bias_gelu._op
_add_gelu = torch.ops.gelu_fusion.add_gelu._op
_geglu = torch.ops.gelu_fusion.geglu._op


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x); like torch.nn.functional.gelu, plus approximate='quick'."""
    if torch.jit.is_scripting():
        return torch.ops.gelu_fusion.gelu(x, approximate=approximate)
    if approximate == "none":
        return _gelu(x)
    return _gelu(x, approximate=approximate)


def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias) in one pass; bias is 1-D, the size of x's last dim."""
    if torch.jit.is_scripting():
        return torch.ops.gelu_fusion.bias_gelu(x, bias, approximate=approximate)
    if approximate == "none":
        return _bias_gelu(x, bias)
    return _bias_gelu(x, bias, approximate=approximate)


def add_gelu(a: Tensor, b: Tensor, approximate: str = "none") -> Tensor:
    """gelu(a + b) in one pass; a and b of one shape and dtype."""
    if torch.jit.is_scripting():
        return torch.ops.gelu_fusion.add_gelu(a, b, approximate=approximate)
    if approximate == "none":
        return _add_gelu(a, b)
    return _add_gelu(a, b, approximate=approximate)


def geglu(x: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU: x [..., 2H] -> gelu(x[..., :H]) * x[..., H:], shape [..., H]."""
    if torch.jit.is_scripting():
        return torch.ops.gelu_fusion.geglu(x, approximate=approximate)
    if approximate == "none":
        return _geglu(x)
    return _geglu(x, approximate=approximate)
