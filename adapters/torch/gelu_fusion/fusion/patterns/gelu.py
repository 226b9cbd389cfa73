"""GELU calls: nn.GELU (exact type; a subclass is traced into, so the
F.gelu inside it is found and what the subclass adds is kept),
gelu_fusion.GELU, F.gelu / torch.gelu / Tensor.gelu with any `approximate`,
and gelu_fusion.gelu. Activation classes that call these (HF's
GELUActivation) are found by tracing into them.

Each becomes the canonical gelu_fusion.gelu(x, form) node that the other
passes match; a call whose `approximate` is not a constant is left.
"""
from typing import List

from torch import nn

from ... import functional as _functional
from .. import graph as g
from .. import runtime as _runtime
from ..report import Site
from ..trace import has_hooks
from ...modules import GELU as _GELU
from ..pattern import Pattern
from ..._surface import FORM_NAMES

_FORMS = FORM_NAMES


def _form_of_call(node):
    if node.op == "call_module":
        return None
    return g.arg(node, 1, "approximate", "none")


# Calls that are fused already (a model fused twice, or written with them).
_FUSED = {getattr(_runtime, n): r for n, r in _runtime.RESULT.items()}
_FUSED.update({_functional.bias_gelu: "bias_gelu", _functional.add_gelu: "add_gelu",
               _functional.geglu: "geglu"})


_CLIPS = ("clip", "clamp")


def _clipped(node) -> bool:
    """The GELU's only use clips it (a clipped GELU such as gelu_10)."""
    users = list(node.users)
    if len(users) != 1:
        return False
    u = users[0]
    if u.op == "call_method":
        return u.target in _CLIPS
    return u.op == "call_function" and getattr(u.target, "__name__", "") in _CLIPS


def find(gm, prefix: str) -> List[Site]:
    sites = []
    for node in list(gm.graph.nodes):
        if g.is_canonical(node):
            continue
        if node.op == "call_function" and node.target in _FUSED:
            name = getattr(node.target, "__name__", str(node.target))
            sites.append(g.new_site(node, prefix, f"gelu_fusion: {name}",
                                    str(node.args[-1]) if node.args else "?"))
            sites[-1].result, sites[-1].reason = _FUSED[node.target], "fused already"
            continue
        mod = g.module_of(gm, node)
        if mod is not None:
            if type(mod) is nn.GELU:
                pattern = "nn.GELU"
            elif type(mod) is _GELU:
                pattern = "gelu_fusion.GELU"
            else:
                continue
            form = mod.approximate
            if has_hooks(mod):
                site = g.new_site(node, prefix, pattern, str(form))
                site.result, site.reason = "unchanged", (
                    f"{node.target} has hooks (they run on the module's call)")
                sites.append(site)
                continue
        elif g.calls(node, g.FUNCTIONAL_GELUS, ("gelu",)):
            pattern = ("Tensor.gelu" if node.op == "call_method"
                       else "F.gelu" if node.target is g.FUNCTIONAL_GELUS[0]
                       else "torch.gelu")
            form = _form_of_call(node)
        elif g.calls(node, (g.CANONICAL_GELU,)):
            pattern, form = "gelu_fusion.gelu", _form_of_call(node)
        else:
            continue
        if len(node.args) < 1 or (node.op != "call_module" and
                                  set(node.kwargs) - {"approximate"}):
            continue
        site = g.new_site(node, prefix, pattern, str(form))
        sites.append(site)
        if _clipped(node):
            site.result, site.reason = "unchanged", (
                "clipped after it (torch.clip/clamp: transformers' gelu_10): "
                "a different function, left as written")
            continue
        if form not in _FORMS:
            site.result, site.reason = "unchanged", (
                f"approximate is {form!r}, not a constant form")
            continue
        new = g.replace(gm.graph, node, g.CANONICAL_GELU, (node.args[0], form))
        new.meta["gf_site"] = site
    return sites


PATTERN = Pattern(
    "gelu", None, find,
    "nn.GELU, F.gelu, torch.gelu and the activation classes that call them "
    "become gelu")
