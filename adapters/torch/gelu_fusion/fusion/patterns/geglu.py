"""GeGLU: a GELU times the other half of the same projection.

- halves of one tensor x[..., 2H]: `a, b = x.chunk(2, -1)`,
  `x.split(H, -1)`, `torch.chunk`/`torch.split`, or the slices
  `x[..., :H]` / `x[..., H:]` (also along a dimension given as a
  non-negative number, `chunk(2, dim=1)` or `x[:, :H]`, where each call
  checks it is the last); then `gelu(a) * b` becomes geglu(x), and
  `a * gelu(b)` (diffusers' GEGLU: `h, gate = x.chunk(2, -1)`,
  `h * gelu(gate)`) geglu(x, gelu_half='second'), one pass either way.
  Each call checks that the last dimension is 2H (else the model's own
  expression).
- two nn.Linear of the same input (T5's gated FFN:
  `act(wi_0(x)) * wi_1(x)`), either order: one matmul on the two weights
  stacked (gate first), then geglu. The Linears keep their Parameters.

Every intermediate (the halves, the chunk, the Linear outputs) must have
no other use.
"""
import operator
from typing import Optional, Tuple

import torch
import torch.fx
from torch import nn
from torch.fx import Node

from .. import graph as g
from .. import runtime as rt
from ..trace import has_hooks
from ..pattern import Pattern

_MUL = (operator.mul, torch.mul)


def _halves(a: Node, b: Node) -> Optional[Tuple[Node, int, list, int, bool]]:
    """(x, H or -1 for chunk, nodes consumed, dim, whether a split) when a
    is x's first half and b its second; None otherwise. dim is -1 or a
    non-negative dimension that each call checks is x's last."""
    ga, gb = g.getitem_of(a), g.getitem_of(b)
    if ga is None or gb is None:
        return None
    if ga[0] is gb[0] and isinstance(ga[0], Node):
        src = ga[0]
        if ga[1] != 0 or gb[1] != 1:
            return None
        if g.calls(src, (torch.chunk,), ("chunk",)):
            n, dim = g.arg(src, 1, "chunks"), g.arg(src, 2, "dim", 0)
            if n == 2 and _dim(dim):
                return src.args[0], -1, [src], dim, False
        if g.calls(src, (torch.split,), ("split",)):
            size, dim = g.arg(src, 1, "split_size_or_sections",
                              src.kwargs.get("split_size")), g.arg(src, 2, "dim", 0)
            if isinstance(size, (list, tuple)) and len(size) == 2 and size[0] == size[1]:
                size = size[0]
            if isinstance(size, int) and _dim(dim):
                return src.args[0], size, [src], dim, True
        return None
    return None


def _dim(dim) -> bool:
    """A dimension the halves may be taken along: -1, or a non-negative
    one (x[:, :H] on a 2-D x, chunk(2, dim=1)) checked at each call."""
    return isinstance(dim, int) and not isinstance(dim, bool) and dim >= -1


_ALL = slice(None, None, None)


def _slices(a: Node, b: Node) -> Optional[Tuple[Node, int, list, int, bool]]:
    """x[..., :H] and x[..., H:], or x[:, :H] and x[:, H:] (the halves along
    dimension k after k full slices)."""
    ga, gb = g.getitem_of(a), g.getitem_of(b)
    if ga is None or gb is None or ga[0] is not gb[0]:
        return None
    ia, ib = ga[1], gb[1]
    if not (isinstance(ia, tuple) and isinstance(ib, tuple) and len(ia) == len(ib) >= 2
            and isinstance(ia[-1], slice) and isinstance(ib[-1], slice)):
        return None
    lead = ia[:-1]
    if lead != ib[:-1]:
        return None
    if lead == (Ellipsis,):
        dim = -1
    elif all(i == _ALL for i in lead):
        dim = len(lead)
    else:
        return None
    sa, sb = ia[-1], ib[-1]
    if sa.start in (None, 0) and sa.step is None and sb.stop is None \
            and sb.step is None and isinstance(sa.stop, int) and sa.stop == sb.start \
            and sa.stop > 0:
        return ga[0], sa.stop, [], dim, False
    return None


def _two_linears(gm, a: Node, b: Node):
    la, lb = g.module_of(gm, a), g.module_of(gm, b)
    if type(la) is not nn.Linear or type(lb) is not nn.Linear:
        return None
    if a.args[:1] != b.args[:1] or a.kwargs or b.kwargs or len(a.args) != 1:
        return None
    if la.weight.shape != lb.weight.shape or (la.bias is None) != (lb.bias is None):
        return "the two Linears differ in shape or bias"
    if has_hooks(la) or has_hooks(lb):
        return "a Linear has hooks"
    return la, lb


def fuse(gm) -> None:
    graph = gm.graph
    for node in list(graph.nodes):
        if not g.is_canonical(node) or len(node.users) != 1:
            continue
        (mul,) = node.users
        if not g.calls(mul, _MUL, ("mul",)) or len(mul.args) != 2 or mul.kwargs:
            continue
        site, gate, form = node.meta["gf_site"], node.args[0], node.args[1]
        other = mul.args[1] if mul.args[0] is node else mul.args[0]
        if not isinstance(gate, Node) or not isinstance(other, Node) or other is node:
            continue
        if not g.only_user(gate, node) or not g.only_user(other, mul):
            continue
        # Halves of one tensor, gate first (the kernel's order) ...
        found = _halves(gate, other) or _slices(gate, other)
        if found is not None:
            x, half, src, dim, split = found
            if any(len(s.users) != 2 for s in src):
                site.reason = "geglu not fused: the split has another use"
                continue
            _done(g.replace(graph, mul, rt.geglu_halves, (x, half, form, dim, split),
                            [node, gate, other] + src, meta_from=node), site,
                  "last dim 2H (checked at each call)")
            continue
        # ... or the GELU on the second half (diffusers), where the op has
        # gelu_half.
        found = _halves(other, gate) or _slices(other, gate)
        if found is not None:
            x, half, src, dim, split = found
            if not rt.HAS_GELU_HALF:
                site.reason = ("geglu not fused: the GELU is on the second half; "
                               "this build's geglu op has no gelu_half")
            elif any(len(s.users) != 2 for s in src):
                site.reason = "geglu not fused: the split has another use"
            else:
                _done(g.replace(graph, mul, rt.geglu_halves_gelu_second,
                                (x, half, form, dim, split), [node, gate, other] + src,
                                meta_from=node), site,
                      "GELU on the second half; last dim 2H (checked at each call)")
            continue
        lins = _two_linears(gm, gate, other)
        if isinstance(lins, str):
            site.reason = f"geglu not fused: {lins}"
        elif lins is not None:
            x = gate.args[0]
            with graph.inserting_before(mul):
                ws = [graph.get_attr(f"{n.target}.weight") for n in (gate, other)]
                bs = ([graph.get_attr(f"{n.target}.bias") for n in (gate, other)]
                      if lins[0].bias is not None else [])
            fn = rt.geglu_two_linears_bias if bs else rt.geglu_two_linears
            _done(g.replace(graph, mul, fn, (x, *ws, *bs, form),
                            [node, gate, other], meta_from=node), site,
                  f"{gate.target} and {other.target} as one matmul")


def _done(new, site, why) -> None:
    new.meta["gf_fused_site"] = new.meta.pop("gf_site", site)  # for save_memory
    site.result = "geglu"
    site.reason = why


PATTERN = Pattern(
    "geglu", "geglu", lambda gm, path: fuse(gm),
    "gelu(a) * b of a tensor's halves, or of two Linears, becomes geglu")
