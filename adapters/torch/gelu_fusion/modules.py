"""nn.Module wrappers of the ops."""
import copyreg
import sys
import types

import torch
from torch import Tensor, nn

from . import functional as _F
from ._surface import FORM_NAMES, forms_listed


def _check_approximate(approximate: str) -> None:
    if approximate not in FORM_NAMES:
        raise ValueError(f"approximate is {approximate!r}, expected {forms_listed()}")


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

    ``from_linear`` wraps an existing ``nn.Linear``'s Parameters (the same
    objects, under the same names). ``patch(model, fuse_bias=True)`` does not
    use this class: it keeps the ``nn.Linear`` and fuses at the call
    (``BiasGELU``).
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
        # Under autocast the matmul ran in bf16/f16: the bias follows, as
        # in nn.Linear (a no-op otherwise; no branch, so torch.fx traces it).
        return _F.bias_gelu(y, self.bias.to(y.dtype), self.approximate)

    def extra_repr(self) -> str:
        return "in_features={}, out_features={}, approximate={}".format(
            self.in_features, self.out_features, repr(self.approximate))


def linear_without_bias(self: nn.Linear, input: Tensor) -> Tensor:
    """The forward ``patch(model, fuse_bias=True)`` gives an ``nn.Linear``
    (on that object only; its type stays nn.Linear): the matmul without the
    bias where its Sequential runs it just before the ``BiasGELU`` that
    adds the bias; the whole Linear wherever else it is called."""
    if torch.jit.is_scripting():
        return torch.nn.functional.linear(input, self.weight)
    else:
        bias = None if _in_its_pair(self) else self.bias
        return torch.nn.functional.linear(input, self.weight, bias)


_SEQUENTIAL_FORWARD = nn.Sequential.forward.__code__


@torch.jit.unused
def _called_by(parent: nn.Module) -> bool:
    """Whether the module call running now was made by parent's
    nn.Sequential.forward (a few frames up: _call_impl and
    _wrapped_call_impl sit between)."""
    f = sys._getframe(2)
    for _ in range(8):
        if f is None:
            return False
        if f.f_code is _SEQUENTIAL_FORWARD:
            return f.f_locals.get("self") is parent
        f = f.f_back
    return False


@torch.jit.unused
def _in_its_pair(linear: nn.Linear) -> bool:
    """The Linear runs in its Sequential, and the module after it there is
    its BiasGELU (which then adds the bias)."""
    pair = linear.__dict__.get("_gelu_fusion_pair")
    if pair is None or torch.fx._symbolic_trace._is_fx_tracing_flag:
        return False  # torch.fx calls the Linear as a module of the graph
    parent, name, act = pair
    keys = list(parent._modules)
    i = keys.index(name) if name in keys else -1
    return (0 <= i < len(keys) - 1 and parent._modules[name] is linear
            and parent._modules[keys[i + 1]] is act and _called_by(parent))


def _reduce_method(m):
    """Pickles the forward patch() binds to a Linear as (function, object);
    the default reduction, getattr(linear, name), cannot find a function
    bound on the object alone. Every other bound method pickles as before."""
    if m.__func__ is linear_without_bias:
        return _bind_linear_without_bias, (m.__self__,)
    return m.__reduce__()


def _bind_linear_without_bias(linear):
    return types.MethodType(linear_without_bias, linear)


copyreg.pickle(types.MethodType, _reduce_method)


class BiasGELU(nn.Module):
    """The GELU after an ``nn.Linear`` whose bias it adds, in one fused pass:
    ``gelu(input + linear.bias)``. Made by ``patch(model, fuse_bias=True)``,
    which gives that Linear the forward ``linear_without_bias``.

    The Linear stays where it was (same object, type, Parameters, state_dict
    keys, hooks). This module owns no Parameter (optimizers and parameter
    grouping see the Linear's) and saves nothing in the state_dict: it holds
    the Linear's bias as a non-persistent buffer that aliases the Parameter
    (re-aliased after ``.to()``/``.double()``, which replace buffers).

    In eager mode and under torch.fx, the Linear leaves its bias out, and
    this adds it, only when their Sequential runs them one after the other
    with the Linear still in the slot before this one; called on its own, or
    after a Linear that was replaced (``quantize_dynamic``, a manual swap),
    this is a plain GELU and the Linear a whole Linear.
    """

    __constants__ = ["approximate"]
    __jit_ignored_attributes__ = ["_fused_with"]
    approximate: str

    def __init__(self, parent: nn.Module, linear_name: str, linear: nn.Linear,
                 approximate: str = "none") -> None:
        super().__init__()
        _check_approximate(approximate)
        self.approximate = approximate
        # Not submodules: plain references, invisible to state_dict,
        # named_modules and parameters().
        self.__dict__["_fused_with"] = (parent, linear_name, linear)
        self.register_buffer("linear_bias", linear.bias, persistent=False)

    def _fused(self) -> bool:
        parent, name, linear = self._fused_with
        return (parent._modules.get(name) is linear
                and linear.__dict__.get("forward") is not None
                and getattr(linear.forward, "__func__", None) is linear_without_bias
                and _in_its_pair(linear) and _called_by(parent))

    def _apply(self, fn):
        super()._apply(fn)
        bias = self._fused_with[2].bias
        if bias is not None:
            self._buffers["linear_bias"] = bias
        return self

    def forward(self, input: Tensor) -> Tensor:
        if torch.jit.is_scripting():
            return _F.bias_gelu(input, self.linear_bias.to(input.dtype),
                                self.approximate)
        if not self._fused():
            return _F.gelu(input, self.approximate)
        # Under autocast the matmul ran in bf16/f16: the bias follows, as in
        # nn.Linear (a no-op otherwise; no branch, so torch.fx traces it).
        return _F.bias_gelu(input, self._fused_with[2].bias.to(input.dtype),
                            self.approximate)

    def extra_repr(self) -> str:
        return "approximate={}, bias of {!r}".format(repr(self.approximate),
                                                    self._fused_with[1])
