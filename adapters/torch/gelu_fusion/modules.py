"""nn.Module wrappers of the ops."""
import torch
from torch import Tensor, nn

from . import functional as _F

_FORMS = ("none", "tanh", "quick")


def _check_approximate(approximate: str) -> None:
    if approximate not in _FORMS:
        raise ValueError(f"approximate is {approximate!r}, expected 'none', "
                         "'tanh' or 'quick'")


class GELU(nn.Module):
    """Drop-in for torch.nn.GELU (same constructor, same repr), computed by
    gelu-fusion; also accepts approximate='quick' (x * sigmoid(1.702 x))."""

    __constants__ = ["approximate"]
    approximate: str

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        _check_approximate(approximate)
        self.approximate = approximate

    def forward(self, input: Tensor) -> Tensor:
        return _F.gelu(input, self.approximate)

    def extra_repr(self) -> str:
        return "approximate={}".format(repr(self.approximate))


class LinearBiasGELU(nn.Module):
    """gelu(x @ weight.T + bias) as a bias-free matmul plus one fused
    bias_gelu pass (the bias is added inside the GELU kernel, and its
    gradient comes from the GELU backward's pass).

    Made by ``patch(model, fuse_bias=True)`` from an ``nn.Linear`` followed by
    a GELU; it keeps the Linear's ``weight`` and ``bias`` Parameters (the same
    objects, under the same names), so optimizers, state_dict keys and
    checkpoints are unchanged.
    """

    __constants__ = ["in_features", "out_features", "approximate"]
    in_features: int
    out_features: int
    approximate: str

    def __init__(self, in_features: int, out_features: int,
                 approximate: str = "none", device=None, dtype=None) -> None:
        super().__init__()
        _check_approximate(approximate)
        self.in_features = in_features
        self.out_features = out_features
        self.approximate = approximate
        kw = {"device": device, "dtype": dtype}
        self.weight = nn.Parameter(torch.empty(out_features, in_features, **kw))
        self.bias = nn.Parameter(torch.empty(out_features, **kw))
        bound = 1.0 / in_features ** 0.5 if in_features > 0 else 0.0
        nn.init.kaiming_uniform_(self.weight, a=5 ** 0.5)
        nn.init.uniform_(self.bias, -bound, bound)

    @classmethod
    def from_linear(cls, linear: nn.Linear, approximate: str = "none"):
        """Wraps `linear`'s own Parameters (shared, not copied)."""
        if linear.bias is None:
            raise ValueError("LinearBiasGELU.from_linear: the Linear has no "
                             "bias, expected one (bias=True)")
        m = cls.__new__(cls)
        nn.Module.__init__(m)
        _check_approximate(approximate)
        m.in_features = linear.in_features
        m.out_features = linear.out_features
        m.approximate = approximate
        m.weight = linear.weight
        m.bias = linear.bias
        return m

    def forward(self, input: Tensor) -> Tensor:
        y = torch.nn.functional.linear(input, self.weight)
        bias = self.bias
        if bias.dtype != y.dtype:  # autocast: the matmul ran in bf16/f16
            bias = bias.to(y.dtype)
        return _F.bias_gelu(y, bias, self.approximate)

    def extra_repr(self) -> str:
        return "in_features={}, out_features={}, approximate={}".format(
            self.in_features, self.out_features, repr(self.approximate))
