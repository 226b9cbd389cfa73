"""patch(model): swap torch.nn.GELU modules for gelu-fusion's, in place,
without changing what the model computes."""
import types
from typing import List, Tuple

from torch import nn

from .modules import GELU, BiasGELU, linear_without_bias


class PatchResult(int):
    """What ``patch`` did. As an int it is the number of GELU modules it
    replaced (what ``patch`` returned before it returned this), so
    ``patch(m) == 4`` still reads as it did.

    - ``swapped``: names of the ``nn.GELU`` now ``gelu_fusion.GELU``
    - ``fused``: ``(linear, gelu)`` name pairs: the Linear computes without
      its bias and the GELU's slot is a ``BiasGELU`` that adds it
    - ``skipped``: ``(name, reason)`` for each module left as it was
    """

    swapped: List[str]
    fused: List[Tuple[str, str]]
    skipped: List[Tuple[str, str]]

    def __new__(cls, swapped, fused, skipped):
        self = super().__new__(cls, len(swapped) + len(fused))
        self.swapped, self.fused, self.skipped = swapped, fused, skipped
        return self

    def __getnewargs__(self):  # copy and pickle rebuild it through __new__
        return self.swapped, self.fused, self.skipped

    def __repr__(self) -> str:
        return (f"PatchResult(replaced={int(self)}, swapped={self.swapped!r}, "
                f"fused={self.fused!r}, skipped={self.skipped!r})")


def _qualified(prefix: str, name: str) -> str:
    return f"{prefix}.{name}" if prefix else name


def _fusion_blocker(linear: nn.Linear, places: dict):
    """Why `linear` must not have its bias moved into the next GELU, or None."""
    if len(places.get(id(linear), ())) > 1:
        return ("the Linear is also used at " + ", ".join(places[id(linear)][1:])
                + ": its GELU is swapped, not fused")
    if linear.bias is None:
        return "the Linear has no bias: its GELU is swapped, not fused"
    if linear._forward_hooks:
        return ("the Linear has forward hooks, which would see its output "
                "without the bias: its GELU is swapped, not fused")
    if "forward" in linear.__dict__:
        return "the Linear's forward is already overridden on the object"
    return None


def patch(model: nn.Module, fuse_bias: bool = False) -> PatchResult:
    """Replaces every module of type exactly ``torch.nn.GELU`` in `model`
    (recursively, the model itself excepted) by ``gelu_fusion.GELU`` with the
    same ``approximate``. Subclasses of nn.GELU are left alone (they may
    change what the module computes or own Parameters) and reported as
    skipped.

    With ``fuse_bias=True``, an ``nn.Linear`` (with a bias and without
    forward hooks, used nowhere else in the model) directly followed by
    such a GELU inside an ``nn.Sequential`` keeps its place, object, type,
    Parameters and hooks; the GELU's slot becomes a ``BiasGELU``. When the
    Sequential runs the pair, the Linear computes the matmul without the
    bias and the BiasGELU adds it inside the GELU pass (one pass forward,
    and dbias from the GELU backward's pass); called anywhere else, the
    Linear is a whole Linear and the BiasGELU a plain GELU. State_dict
    keys, parameter names and ``isinstance(m, nn.Linear)`` stay as they
    were; forward hooks added to that Linear afterwards see its output
    without the bias. A Linear registered at more than one place is left
    unfused and reported in ``skipped``.

    Returns a ``PatchResult``: an int (the number of GELUs replaced) with
    the lists ``swapped``, ``fused`` and ``skipped`` (name and reason).
    Results agree with the unpatched model within the library's accuracy
    contract. Calling it again does nothing (and returns 0).
    """
    swapped: List[str] = []
    fused: List[Tuple[str, str]] = []
    skipped: List[Tuple[str, str]] = []
    if isinstance(model, (nn.GELU, GELU)):
        skipped.append(("", "the model itself cannot be replaced in place; "
                            "use gelu_fusion.GELU(model.approximate)"))
    places = {}  # id -> every name the module has in the model
    for name, m in model.named_modules(remove_duplicate=False):
        places.setdefault(id(m), []).append(name or "(model)")
    for prefix, parent in list(model.named_modules()):
        names = list(parent._modules.keys())
        if fuse_bias and isinstance(parent, nn.Sequential):
            for first, second in zip(names, names[1:]):
                lin, act = parent._modules[first], parent._modules[second]
                if type(lin) is not nn.Linear or type(act) not in (nn.GELU, GELU):
                    continue
                why = _fusion_blocker(lin, places)
                if why is not None:
                    skipped.append((_qualified(prefix, first), why))
                    continue
                lin.forward = types.MethodType(linear_without_bias, lin)
                # TorchScript shares compiled methods between modules of one
                # class whose attributes match; this attribute keeps a
                # patched Linear's forward apart from a plain Linear's.
                lin.gelu_fusion_bias_in_next_module = True
                parent._modules[second] = act = BiasGELU(parent, first, lin,
                                                         act.approximate)
                # Not a submodule: a plain reference, as BiasGELU's own.
                lin.__dict__["_gelu_fusion_pair"] = (parent, first, act)
                fused.append((_qualified(prefix, first),
                              _qualified(prefix, second)))
        for name in names:
            child = parent._modules[name]
            if type(child) is nn.GELU:
                parent._modules[name] = GELU(child.approximate)
                swapped.append(_qualified(prefix, name))
            elif isinstance(child, nn.GELU):
                skipped.append((_qualified(prefix, name),
                                f"{type(child).__name__} is a subclass of "
                                "nn.GELU: only nn.GELU itself is swapped"))
    return PatchResult(swapped, fused, skipped)
