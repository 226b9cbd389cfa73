"""patch(model): swap torch.nn.GELU modules for gelu-fusion's, in place."""
from torch import nn

from .modules import GELU, LinearBiasGELU


def _is_gelu(m: nn.Module) -> bool:
    return isinstance(m, (nn.GELU, GELU))


def patch(model: nn.Module, fuse_bias: bool = False) -> int:
    """Replaces every ``torch.nn.GELU`` in `model` (recursively, the model
    itself excepted) by ``gelu_fusion.GELU`` with the same ``approximate``,
    and returns how many ``nn.GELU`` it replaced.

    With ``fuse_bias=True`` it first turns each ``nn.Linear`` (with a bias)
    directly followed by a GELU inside an ``nn.Sequential`` into a
    ``LinearBiasGELU`` (a bias-free matmul plus one fused bias_gelu pass,
    sharing the Linear's Parameters) and the GELU's slot into
    ``nn.Identity``, so indices, parameter names and state_dict keys stay
    as they were. Results agree with the unpatched model within the
    library's accuracy contract.
    """
    count = 0
    for parent in list(model.modules()):
        names = list(parent._modules.keys())
        if fuse_bias and isinstance(parent, nn.Sequential):
            for first, second in zip(names, names[1:]):
                lin, act = parent._modules[first], parent._modules[second]
                if (type(lin) is nn.Linear and lin.bias is not None
                        and _is_gelu(act)):
                    parent._modules[first] = LinearBiasGELU.from_linear(
                        lin, act.approximate)
                    parent._modules[second] = nn.Identity()
                    count += isinstance(act, nn.GELU)
        for name in names:
            child = parent._modules[name]
            if isinstance(child, nn.GELU):
                parent._modules[name] = GELU(child.approximate)
                count += 1
    return count
