"""Hugging Face's Conv1D (GPT-2's MLP) as the Linear after a GELU, for the
memory-saving pass (patterns/save_memory.py).

Conv1D is a Linear with its weight stored [in, out]; traced through, its
forward on the GELU's output y reads

    size_out = y.size()[:-1] + (nf,)
    flat = y.view(-1, y.size(-1))
    out = torch.addmm(bias, flat, weight).view(size_out)

Matched: y's tensor use is that one view/reshape to (-1, y's last size),
whose only user is torch.addmm(bias, flat, weight) (no beta/alpha; bias and
weight read from the module), whose only user is a view/reshape. y's other
uses may only ask its shape (size(), size(d), .shape, dim()).

Rewritten: the fused node computes F.linear(gelu(...), weight.t(), bias),
shaped [..., out] where y is [..., in]; the final view takes it in place of
addmm's [N, out] (the same row-major values). weight.t() is a view of the
Parameter, so its gradient flows back through the transpose to the
Parameter itself. y's shape queries are answered from the node's output and
the weight (conv1d_input_size), so nothing keeps y.
"""
from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import torch
import torch.fx
from torch import nn
from torch.fx import Node

from . import graph as g
from . import runtime as rt

_VIEWS = (torch.reshape,)
_VIEW_METHODS = ("view", "reshape")
ANOTHER_USE = "the GELU's output has another use than the Conv1D"


def is_conv1d(m: Optional[nn.Module]) -> bool:
    """Hugging Face's Conv1D (transformers.pytorch_utils.Conv1D), by name:
    gelu_fusion does not import transformers."""
    return m is not None and type(m).__name__ == "Conv1D"


@dataclass
class Conv1DUse:
    """A Conv1D traced through, reading y (see the module's docstring)."""
    flat: Node
    addmm: Node
    out: Node
    weight: str            # get_attr targets: "c_proj.weight", "c_proj.bias"
    bias: str
    shape_queries: List[Node] = field(default_factory=list)

    @property
    def module(self) -> str:
        return self.weight.rpartition(".")[0]


def _shape_query(u: Node, y: Node) -> bool:
    """u only asks y's shape: y.size(), y.size(d), y.shape, y.dim()."""
    if u.kwargs or not u.args or u.args[0] is not y:
        return False
    if g.calls(u, (), ("size",)):
        return len(u.args) == 1 or (len(u.args) == 2 and isinstance(u.args[1], int))
    if g.calls(u, (), ("dim",)):
        return len(u.args) == 1
    return g.calls(u, (getattr,)) and u.args[1:] == ("shape",)


def _last_size_of(k, y: Node) -> bool:
    """k is y.size(-1) or y.shape[-1]."""
    if g.calls(k, (), ("size",)) and k.args == (y, -1) and not k.kwargs:
        return True
    item = g.getitem_of(k)
    return item is not None and item[1] == -1 and isinstance(item[0], Node) \
        and _shape_query(item[0], y) and len(item[0].args) == 1 \
        and not g.calls(item[0], (), ("dim",))


def _flat_view(u: Node, y: Node) -> bool:
    """u is y.view(-1, y.size(-1)) (or reshape, or with the shape as one
    tuple)."""
    if not g.calls(u, _VIEWS, _VIEW_METHODS) or u.kwargs or u.args[:1] != (y,):
        return False
    rest = list(u.args[1:])
    if len(rest) == 1 and isinstance(rest[0], (tuple, list)):
        rest = list(rest[0])
    return len(rest) == 2 and rest[0] == -1 and _last_size_of(rest[1], y)


def _last_size_node(flat: Node) -> Node:
    rest = list(flat.args[1:])
    return (list(rest[0]) if len(rest) == 1 else rest)[1]


def _addmm_of(flat: Node) -> Optional[Node]:
    if len(flat.users) != 1:
        return None
    (mm,) = flat.users
    if not g.calls(mm, (torch.addmm,)) or mm.kwargs or len(mm.args) != 3 \
            or mm.args[1] is not flat or flat in (mm.args[0], mm.args[2]):
        return None
    if not all(isinstance(a, Node) and a.op == "get_attr" for a in (mm.args[0], mm.args[2])):
        return None
    return mm


def match(y: Node) -> Tuple[Optional[Conv1DUse], str]:
    """(the Conv1D reading y, "") or (None, why): why is ANOTHER_USE where a
    Conv1D reads y and y has another use, else ""."""
    queries = [u for u in y.users if _shape_query(u, y)]
    tensor_users = [u for u in y.users if u not in queries]
    chains = []
    for u in tensor_users:
        mm = _addmm_of(u) if _flat_view(u, y) else None
        if mm is not None:
            chains.append((u, mm))
    if not chains:
        return None, ""
    flat, mm = chains[0]
    if len(tensor_users) != 1:
        return None, ANOTHER_USE
    outs = list(mm.users)
    if len(outs) != 1 or not g.calls(outs[0], _VIEWS, _VIEW_METHODS) \
            or outs[0].args[:1] != (mm,):
        return None, ""
    return Conv1DUse(flat, mm, outs[0], mm.args[2].target, mm.args[0].target, queries), ""


def rewrite(graph: torch.fx.Graph, use: Conv1DUse, y: Node, fn,
            args_with: Callable[[Node, Node], tuple], erase: List[Node]) -> Node:
    """Puts fn(*args_with(weight.t(), bias)) right after y, takes it as the
    final view's input, answers y's shape queries from it and erases y's
    Conv1D nodes and `erase` (the GELU and what lay between)."""
    with graph.inserting_before(y.next):
        w = graph.get_attr(use.weight)
        b = graph.get_attr(use.bias)
        wt = graph.call_method("t", (w,))
        new = graph.call_function(fn, args_with(wt, b))
    use.out.replace_input_with(use.addmm, new)
    attrs = (use.addmm.args[0], use.addmm.args[2])
    graph.erase_node(use.addmm)
    for a in attrs:  # read again before the new node
        if not a.users:
            graph.erase_node(a)
    last = _last_size_node(use.flat)
    graph.erase_node(use.flat)
    if last not in use.shape_queries and not last.users:  # y.shape[-1]
        graph.erase_node(last)
    for q in use.shape_queries:
        if not q.users:  # y.size(-1) that fed the flat view
            graph.erase_node(q)
            continue
        with graph.inserting_before(q):
            if g.calls(q, (), ("dim",)):
                a = graph.call_method("dim", (new,))
            else:
                if len(q.args) == 2 and q.op == "call_method":  # y.size(d)
                    a = graph.call_function(rt.conv1d_input_size_at, (new, w, q.args[1]))
                else:
                    a = graph.call_function(rt.conv1d_input_size, (new, w))
        q.replace_all_uses_with(a)
        graph.erase_node(q)
    order = {n: i for i, n in enumerate(graph.nodes)}
    for n in sorted(set(erase), key=lambda n: -order[n]):
        if not n.users:
            graph.erase_node(n)
    return new
