"""`a + b` feeding a GELU, and nothing else (a residual gelu(x + f(x))),
becomes add_gelu: one pass instead of the sum's and the GELU's.

Shapes and dtypes are known only at run time: add_gelu broadcasts and
promotes as `a + b` does (one pass for one shape and dtype, bias_gelu's
kernel for a bias-shaped addend, the expanded tensors otherwise, PyTorch's
composition where no kernel applies). A constant addend (x + 1.0) is not a
sum of two tensors and is left to the plain gelu.
"""
import operator

import torch
import torch.fx

from .. import graph as g
from .. import runtime as rt
from ..pattern import Pattern


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
        site.reason = "broadcasts and promotes as a + b (checked at each call)"


PATTERN = Pattern(
    "add", "add", lambda gm, path: fuse(gm),
    "gelu(a + b) becomes add_gelu")
