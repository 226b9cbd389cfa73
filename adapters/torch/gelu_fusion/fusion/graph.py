"""Graph helpers shared by the fusion passes: what a node calls, its single
user, constants, and replacing a matched subgraph by one call.

A pass takes `gm`: the traced graph (gm.graph) and the traced module's
submodules and attributes (gm.get_submodule, gm.<name>). It sees GELUs in
one canonical form, made by patterns/gelu.py and
patterns/formula.py: a call of gelu_fusion.gelu(x, form) whose
node.meta['gf_site'] is the Site it reports on.
"""
import operator
from typing import Callable, Iterable, Optional, Sequence

import torch
import torch.fx
from torch import nn
from torch.fx import Node

from .. import functional as _functional
from .report import Site, source_of

CANONICAL_GELU = _functional.gelu


def calls(node, functions: Iterable = (), methods: Iterable[str] = ()) -> bool:
    """node calls one of `functions` (call_function) or `methods`
    (call_method, by name)."""
    if not isinstance(node, Node):
        return False
    if node.op == "call_function":
        return any(node.target is f for f in functions)
    if node.op == "call_method":
        return node.target in methods
    return False


def module_of(gm_root: nn.Module, node) -> Optional[nn.Module]:
    if isinstance(node, Node) and node.op == "call_module":
        return gm_root.get_submodule(node.target)
    return None


def attr_of(gm_root: nn.Module, node):
    """The value of a get_attr node (a Parameter or buffer), else None."""
    if not (isinstance(node, Node) and node.op == "get_attr"):
        return None
    obj = gm_root
    for part in node.target.split("."):
        obj = getattr(obj, part, None)
        if obj is None:
            return None
    return obj


def only_user(node: Node, user: Node) -> bool:
    return isinstance(node, Node) and list(node.users) == [user]


def number(a) -> Optional[float]:
    """A Python int/float constant (not bool), as float; else None."""
    if isinstance(a, bool) or not isinstance(a, (int, float)):
        return None
    return float(a)


def arg(node: Node, i: int, name: str, default=None):
    """Argument i (positional) or `name` (keyword) of a call."""
    if len(node.args) > i:
        return node.args[i]
    return node.kwargs.get(name, default)


def describe(node: Node) -> str:
    """A short name for a node in a reason ('`fc1` (file.py:12)')."""
    where = source_of(node.meta.get("gf_source"))
    return f"`{node.name}`" + (f" ({where})" if where else "")


def new_site(node: Node, prefix: str, pattern: str, form: str) -> Site:
    path = node.meta.get("gf_path", "")
    full = ".".join(p for p in (prefix, path) if p)
    return Site(full, source_of(node.meta.get("gf_source")), pattern, form)


def is_canonical(node) -> bool:
    return (isinstance(node, Node) and node.op == "call_function"
            and node.target is CANONICAL_GELU and "gf_site" in node.meta)


def replace(graph: torch.fx.Graph, out: Node, fn: Callable, args: Sequence,
            consumed: Iterable[Node] = (), meta_from: Optional[Node] = None) -> Node:
    """Inserts fn(*args) after `out`, routes out's users to it and erases
    `out` and the `consumed` nodes that are left without users."""
    with graph.inserting_after(out):
        new = graph.call_function(fn, tuple(args))
    new.meta.update((meta_from or out).meta)
    out.replace_all_uses_with(new)
    # Erase from the last node back, so users go before what they use.
    order = {n: i for i, n in enumerate(graph.nodes)}
    for n in sorted(set(consumed) | {out}, key=lambda n: -order[n]):
        if n is not new and not n.users:
            graph.erase_node(n)
    return new


_NOT_TENSOR_METHODS = ("size", "dim", "numel", "item", "tolist", "stride",
                       "__len__", "element_size", "nelement")


def not_a_tensor(node) -> bool:
    """node is known not to be a tensor: a number, a size, or arithmetic and
    indexing over those (x.size(-1), x.shape[0] * 2)."""
    if not isinstance(node, Node):
        return True
    if node.op == "call_method":
        return node.target in _NOT_TENSOR_METHODS
    if node.op == "call_function" and node.target in (len, getattr):
        return True
    if node.op == "call_function" and getattr(node.target, "__module__", "") in (
            "_operator", "operator"):
        return all(not_a_tensor(a) for a in node.args)
    return False


def getitem_of(node) -> Optional[tuple]:
    """(source, index) for `source[index]`, else None."""
    if calls(node, (operator.getitem,)) and len(node.args) == 2:
        return node.args[0], node.args[1]
    return None


FUNCTIONAL_GELUS = tuple(f for f in (torch.nn.functional.gelu, getattr(torch, "gelu", None),
                                  torch._C._nn.gelu) if f is not None)
