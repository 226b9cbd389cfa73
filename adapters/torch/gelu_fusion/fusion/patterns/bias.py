"""A matmul with a bias feeding a GELU, and nothing else, becomes the
bias-free matmul plus bias_gelu (the bias is added inside the GELU pass and
its gradient comes from the GELU backward's pass):

- nn.Linear (exact type, bias=True, no hooks) called as a module;
- F.linear(x, w, b) with a bias;
- torch.addmm(b, a, w), also through a view/reshape of its result (GPT-2's
  Conv1D);
- x + b with b a 1-D Parameter or buffer (a bias written out; a bias of
  another dtype promotes as `+` does).

The Linear keeps its type and Parameters; the graph reads its weight and
bias. Checked at each call (runtime.py): the bias is 1-D, the size of
the last dimension (else add_gelu, which broadcasts as the sum).
"""
import operator

import torch
import torch.fx
import torch.nn.functional as F
from torch import nn

from .. import graph as g
from .. import runtime as rt
from ..trace import has_hooks
from ..pattern import Pattern

_VIEWS = (torch.reshape,)
_VIEW_METHODS = ("view", "reshape")


def _weight_bias(graph: torch.fx.Graph, at, target: str):
    with graph.inserting_before(at):
        return (graph.get_attr(target + ".weight"), graph.get_attr(target + ".bias"))


def fuse(gm) -> None:
    graph = gm.graph
    for node in list(graph.nodes):
        if not g.is_canonical(node):
            continue
        site, x, form = node.meta["gf_site"], node.args[0], node.args[1]
        if not isinstance(x, torch.fx.Node):
            continue
        lin = g.module_of(gm, x)
        if type(lin) is nn.Linear:
            if lin.bias is None:
                site.reason = f"{x.target}: Linear without bias"
            elif has_hooks(lin):
                site.reason = f"bias not fused: {x.target} has hooks"
            elif not g.only_user(x, node):
                site.reason = f"bias not fused: output of {x.target} has another use"
            else:
                w, b = _weight_bias(graph, x, x.target)
                _done(g.replace(graph, node, rt.linear_bias_gelu,
                                (x.args[0], w, b, form), [x]), site)
            continue
        if g.calls(x, (F.linear,)) and len(x.args) >= 1:
            b = g.arg(x, 2, "bias")
            if b is None:
                continue
            if not g.only_user(x, node):
                site.reason = "bias not fused: F.linear's output has another use"
                continue
            _done(g.replace(graph, node, rt.linear_bias_gelu,
                            (x.args[0], g.arg(x, 1, "weight"), b, form), [x]), site)
            continue
        view, mm = None, x
        if g.calls(x, _VIEWS, _VIEW_METHODS) and isinstance(x.args[0], torch.fx.Node):
            view, mm = x, x.args[0]
        if g.calls(mm, (torch.addmm,)) and len(mm.args) == 3 and not mm.kwargs:
            chain = [mm] + ([view] if view is not None else [])
            users_ok = all(g.only_user(a, b) for a, b in zip(chain, chain[1:] + [node]))
            if not users_ok:
                site.reason = "bias not fused: addmm's output has another use"
                continue
            shape = _shape_arg(view)
            if view is not None and shape is None:
                continue
            b, a, w = mm.args
            if shape is None:
                _done(g.replace(graph, node, rt.bias_gelu_or_add,
                                (_mm(graph, node, a, w), b, form), chain), site)
            else:
                _done(g.replace(graph, node, rt.addmm_bias_gelu,
                                (b, a, w, shape, form), chain), site)
            continue
        if g.calls(x, (operator.add, torch.add), ("add",)) and not x.kwargs \
                and len(x.args) == 2 and g.only_user(x, node):
            for y, b in (x.args, x.args[::-1]):
                val = g.attr_of(gm, b)
                if isinstance(val, torch.Tensor) and val.dim() == 1 \
                        and isinstance(y, torch.fx.Node):
                    _done(g.replace(graph, node, rt.add_bias_gelu,
                                    (y, b, form), [x]), site)
                    break


def _shape_arg(view):
    """The target shape of a view/reshape node as one argument (a node or
    a list), or None."""
    if view is None:
        return None
    rest = list(view.args[1:])
    if len(rest) == 1:
        return rest[0]
    return rest if rest else None


def _mm(graph, before, a, w):
    with graph.inserting_before(before):
        return graph.call_function(torch.mm, (a, w))


def _done(new, site) -> None:
    site.result = "bias_gelu"
    site.reason = "bias 1-D of the last dim (checked at each call)"
    new.meta["gf_fused_site"] = new.meta.pop("gf_site", site)  # for save_memory


PATTERN = Pattern(
    "bias", "bias", lambda gm, path: fuse(gm),
    "a biased Linear, F.linear or addmm before a gelu becomes bias_gelu")
