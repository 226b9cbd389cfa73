"""`a + b` feeding a GELU, and nothing else (a residual gelu(x + f(x))),
becomes add_gelu: one pass instead of the sum's and the GELU's.

Shapes and dtypes are known only at run time: each call checks that a and b
have one shape and one dtype (today's add_gelu kernel) and otherwise
computes the sum, then gelu. A constant addend (x + 1.0) is not a sum of
two tensors and is left to the plain gelu.
"""
import operator

import torch
import torch.fx

from . import fusion_graph as g
from . import fusion_runtime as rt


def fuse(gm) -> None:
    graph = gm.graph
    for node in list(graph.nodes):
        if not g.is_canonical(node):
            continue
        site, s, form = node.meta["gf_site"], node.args[0], node.args[1]
        if not g.calls(s, (operator.add, torch.add), ("add",)):
            continue
        if s.kwargs or len(s.args) != 2 or any(g.not_a_tensor(a) for a in s.args):
            continue
        if not g.only_user(s, node):
            site.reason = "add not fused: the sum has another use"
            continue
        new = g.replace(graph, node, rt.add_gelu_or_add, (*s.args, form), [s])
        new.meta.pop("gf_site", None)
        site.result = "add_gelu"
        site.reason = "same shape and dtype (checked at each call)"
