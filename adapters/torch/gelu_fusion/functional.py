"""The functional API: thin, TorchScript-compatible calls of the ops.

Every function takes CPU tensors of float32, bfloat16 or float16 and returns
a new tensor of the same dtype; inputs may be non-contiguous. Gradients flow
to every input that requires them. Wrong device, dtype or shape raise
RuntimeError naming the op, the argument and what was expected.
"""
import torch
from torch import Tensor


def gelu(x: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x); like torch.nn.functional.gelu, plus approximate='quick'."""
    return torch.ops.gelu_fusion.gelu(x, approximate=approximate)


def bias_gelu(x: Tensor, bias: Tensor, approximate: str = "none") -> Tensor:
    """gelu(x + bias) in one pass; bias is 1-D, the size of x's last dim."""
    return torch.ops.gelu_fusion.bias_gelu(x, bias, approximate=approximate)


def add_gelu(a: Tensor, b: Tensor, approximate: str = "none") -> Tensor:
    """gelu(a + b) in one pass; a and b of one shape and dtype."""
    return torch.ops.gelu_fusion.add_gelu(a, b, approximate=approximate)


def geglu(x: Tensor, approximate: str = "none") -> Tensor:
    """GeGLU: x [..., 2H] -> gelu(x[..., :H]) * x[..., H:], shape [..., H]."""
    return torch.ops.gelu_fusion.geglu(x, approximate=approximate)
