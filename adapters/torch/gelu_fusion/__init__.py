"""gelu-fusion for PyTorch: fused GELU ops with autograd, a drop-in nn.GELU
and a one-line model patch.

    import gelu_fusion
    y = gelu_fusion.gelu(x)                    # like F.gelu(x)
    y = gelu_fusion.bias_gelu(x, bias)         # gelu(x + bias), one pass
    r = gelu_fusion.patch(model, fuse_bias=True)  # int count; r.skipped
    model = torch.compile(model, backend=gelu_fusion.backend())  # fused, compiled

The fused kernels live in ``torch.ops.gelu_fusion`` (float32, bfloat16 and
float16 on CPU), so TorchScript can call them too; the functions and modules
here take any tensor F.gelu takes (PyTorch's composition where no kernel
applies). ``approximate`` is 'none' (erf),
'tanh' or 'quick' (x * sigmoid(1.702 x)).
"""
import os
import sys

import torch

from . import _load  # noqa: F401  (registers torch.ops.gelu_fusion)
from . import _surface  # noqa: F401  (fake kernels, from the op table)
from ._version import __version__  # project(gelu_fusion VERSION ...)
from .functional import add_gelu, bias_gelu, geglu, gelu
from .gelu_linear import GegluLinear, GeluLinear, bias_gelu_linear, geglu_linear
from .modules import GELU, BiasGELU, LinearBiasGELU
from .patch import PatchResult, patch
from .fusion import backend, explain, fuse
from .fusion import pattern as _pattern, registry as _registry
from .workspace import empty_cache
from . import ops  # noqa: F401  (every op of the table as a function)

__all__ = ["gelu", "bias_gelu", "add_gelu", "geglu", "GELU", "BiasGELU",
           "LinearBiasGELU", "patch", "PatchResult", "fuse", "backend", "explain", "simd_target",
           "simd_targets", "set_simd_target",
           "bias_gelu_linear", "geglu_linear", "GeluLinear", "GegluLinear", "empty_cache"]


def simd_target() -> str:
    """The SIMD target the kernels dispatch to on this CPU."""
    return torch.ops.gelu_fusion.simd_target()


def simd_targets() -> list:
    """The SIMD targets this build has that this CPU runs, best first."""
    return list(torch.ops.gelu_fusion.simd_targets())


def set_simd_target(name: str) -> None:
    """Runs every op on one of simd_targets() ('' or 'best': the best), to
    measure or test a narrower CPU's code on this one; process-wide. The
    environment variable GELU_SIMD_TARGET does the same at import."""
    torch.ops.gelu_fusion.set_simd_target(name)


# The modules a pattern of one's own was registered through before the
# fusion passes became the gelu_fusion.fusion package, under their old
# names (no files: the same module objects).
fusion_registry = sys.modules[__name__ + ".fusion_registry"] = _registry
fusion_pattern = sys.modules[__name__ + ".fusion_pattern"] = _pattern

if os.environ.get("GELU_SIMD_TARGET"):
    set_simd_target(os.environ["GELU_SIMD_TARGET"])

