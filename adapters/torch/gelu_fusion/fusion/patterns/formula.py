"""GELU formulas spelled out in model code, matched by their algebra rather
than by one spelling:

- erf form:   0.5 * x * (1 + erf(x / sqrt(2)))   (x * 0.70710678... too)
- tanh form:  0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x**3)))
              (torch.pow(x, 3.0), x * x * x, x * (1 + 0.044715 * x * x), ...)
- quick form: x * sigmoid(1.702 * x)

Around each erf/tanh/sigmoid call, the arithmetic (+, -, *, / by a
constant, neg, integer powers) is read as a polynomial: the argument in x,
the result in x and the erf/tanh/sigmoid value. A site matches when both
polynomials are the form's, each coefficient within CONSTANT_RTOL; the
association and order of the factors do not matter. ONNX Runtime's
fusion_gelu.py / fusion_fastgelu.py match the same three forms by fixed
spellings.

A match whose intermediate has another use is left (as ONNX Runtime does):
fusing it would keep the formula's work and add ours.
"""
import operator
from typing import Dict, List, Optional, Tuple

import torch
import torch.fx
from torch.fx import Node

from .. import graph as g
from ..._surface import FORMS
from ..report import Site
from ..pattern import Pattern

# Relative tolerance on each constant: accepts 1.4142 or 0.7071 for sqrt(2)
# and 1/sqrt(2) (relative error 1e-5), 0.7978846 for sqrt(2/pi); refuses a
# constant that would move the result by more than the kernels' own error.
CONSTANT_RTOL = 1e-4

# The forms' constants, the library's own (_surface.FORMS).
SQRT1_2 = FORMS["inv_sqrt2"]               # erf form: erf(x / sqrt 2)
SQRT_2_OVER_PI = FORMS["sqrt_2_over_pi"]   # tanh form
TANH_CUBIC = FORMS["tanh_cubic"]           # tanh form's cubic coefficient
QUICK = FORMS["quick_scale"]               # quick form: x * sigmoid(QUICK x)

_ADD = (operator.add, torch.add)
_SUB = (operator.sub, torch.sub)
_MUL = (operator.mul, torch.mul)
_DIV = (operator.truediv, torch.div, torch.true_divide)
_POW = (operator.pow, torch.pow)
_NEG = (operator.neg, torch.neg)
_ERF = (torch.erf, torch.special.erf)
_TANH = (torch.tanh, torch.nn.functional.tanh)
_SIGMOID = (torch.sigmoid, torch.nn.functional.sigmoid, torch.special.expit)

Poly = Dict[Tuple[int, ...], float]


def _add(p: Poly, q: Poly, s: float = 1.0) -> Poly:
    r = dict(p)
    for k, v in q.items():
        r[k] = r.get(k, 0.0) + s * v
    return r


def _mul(p: Poly, q: Poly) -> Poly:
    r: Poly = {}
    for k1, v1 in p.items():
        for k2, v2 in q.items():
            k = tuple(a + b for a, b in zip(k1, k2))
            r[k] = r.get(k, 0.0) + v1 * v2
    return r


class _Reader:
    """Reads nodes as polynomials in `variables`; `used` collects the
    arithmetic nodes a polynomial was read from."""

    MAX_DEGREE = 4

    def __init__(self, variables: List[Node]):
        self.vars = variables
        self.memo: Dict[Node, Optional[Poly]] = {}
        self.used = set()

    def const(self, c: float) -> Poly:
        return {(0,) * len(self.vars): c}

    def read(self, a) -> Optional[Poly]:
        c = g.number(a)
        if c is not None:
            return self.const(c)
        if not isinstance(a, Node):
            return None
        if a in self.vars:
            k = [0] * len(self.vars)
            k[self.vars.index(a)] = 1
            return {tuple(k): 1.0}
        if a not in self.memo:
            self.memo[a] = None  # no cycles in a graph; guards recursion
            p = self._read_op(a)
            if p is not None and max(sum(k) for k in p) > self.MAX_DEGREE:
                p = None
            self.memo[a] = p
        p = self.memo[a]
        if p is not None:
            self.used.add(a)
        return p

    def _read_op(self, n: Node) -> Optional[Poly]:
        if n.op not in ("call_function", "call_method"):
            return None
        extra = set(n.kwargs) - {"other", "input", "exponent"}
        if extra:  # alpha=, rounding_mode=, out=: not plain arithmetic
            return None
        args = list(n.args) + [n.kwargs[k] for k in ("input", "other", "exponent")
                               if k in n.kwargs]
        if g.calls(n, _NEG, ("neg",)) and len(args) == 1:
            p = self.read(args[0])
            return None if p is None else {k: -v for k, v in p.items()}
        if len(args) != 2:
            return None
        a, b = args
        if g.calls(n, _ADD, ("add",)) or g.calls(n, _SUB, ("sub",)):
            p, q = self.read(a), self.read(b)
            if p is None or q is None:
                return None
            return _add(p, q, -1.0 if g.calls(n, _SUB, ("sub",)) else 1.0)
        if g.calls(n, _MUL, ("mul",)):
            p, q = self.read(a), self.read(b)
            return None if p is None or q is None else _mul(p, q)
        if g.calls(n, _DIV, ("div", "true_divide")):
            d = g.number(b)
            p = self.read(a)
            return None if p is None or not d else {k: v / d for k, v in p.items()}
        if g.calls(n, _POW, ("pow",)):
            e = g.number(b)
            if e is None or e != int(e) or not 0 <= e <= self.MAX_DEGREE:
                return None
            p = self.read(a)
            if p is None:
                return None
            r = self.const(1.0)
            for _ in range(int(e)):
                r = _mul(r, p)
            return r
        return None


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= CONSTANT_RTOL * abs(b)


def _is(p: Poly, want: Poly) -> bool:
    keys = set(p) | set(want)
    for k in keys:
        v, w = p.get(k, 0.0), want.get(k, 0.0)
        if w == 0.0:
            if abs(v) > 1e-12:
                return False
        elif not _close(v, w):
            return False
    return True


def _leaves(n: Node, seen=None) -> set:
    """The non-arithmetic inputs under an arithmetic expression."""
    seen = set() if seen is None else seen
    out = set()
    arith = _ADD + _SUB + _MUL + _DIV + _POW + _NEG
    if isinstance(n, Node) and g.calls(n, arith, ("add", "sub", "mul", "div",
                                                  "true_divide", "pow", "neg")):
        if n in seen:
            return out
        seen.add(n)
        for a in list(n.args) + list(n.kwargs.values()):
            out |= _leaves(a, seen)
    elif isinstance(n, Node):
        out.add(n)
    return out


# (anchor functions, methods, form, argument polynomial in x as
#  {degree: coefficient}, result polynomial in (x, anchor))
def _forms():
    half = {(1, 0): 0.5, (1, 1): 0.5}
    return (
        (_ERF, ("erf",), "none", "erf formula", {1: SQRT1_2}, half),
        (_TANH, ("tanh",), "tanh", "tanh formula",
         {1: SQRT_2_OVER_PI, 3: SQRT_2_OVER_PI * TANH_CUBIC}, half),
        (_SIGMOID, ("sigmoid",), "quick", "quick formula", {1: QUICK},
         {(1, 1): 1.0}),
    )


_SEARCH_DEPTH = 6  # arithmetic steps from the anchor to the result


def find(gm, prefix: str) -> List[Site]:
    sites = []
    for anchor in list(gm.graph.nodes):
        if anchor.graph is not gm.graph:  # erased by an earlier match
            continue
        for fns, methods, form, pattern, arg_poly, out_poly in _forms():
            if g.calls(anchor, fns, methods) and len(anchor.args) == 1 \
                    and not anchor.kwargs:
                site = _match(gm, anchor, prefix, form, pattern, arg_poly, out_poly)
                if site is not None:
                    sites.append(site)
                break
    return sites


def _match(gm, anchor: Node, prefix, form, pattern, arg_poly, out_poly):
    leaves = _leaves(anchor.args[0])
    if len(leaves) != 1:
        return None
    (x,) = leaves
    r_arg = _Reader([x])
    p = r_arg.read(anchor.args[0])
    if p is None or not _is(p, {(d,): c for d, c in arg_poly.items()}):
        return None
    # The result: the nearest arithmetic node downstream whose polynomial in
    # (x, anchor) is the form's.
    frontier, out, r_out = [anchor], None, None
    for _ in range(_SEARCH_DEPTH):
        nxt = []
        for n in frontier:
            nxt.extend(u for u in n.users if u not in nxt)
        for cand in nxt:
            r = _Reader([x, anchor])
            q = r.read(cand)
            if q is not None and _is(q, out_poly):
                out, r_out = cand, r
                break
        if out is not None or not nxt:
            break
        frontier = nxt
    if out is None:
        return None
    site = g.new_site(anchor, prefix, pattern, form)
    consumed = r_arg.used | r_out.used | {anchor}
    for n in consumed - {out}:
        others = [u for u in n.users if u not in consumed]
        if others:
            site.result = "unchanged"
            site.reason = (f"intermediate {g.describe(n)} has another use "
                           f"({g.describe(others[0])})")
            return site
    new = g.replace(gm.graph, out, g.CANONICAL_GELU, (x, form), consumed,
                    meta_from=anchor)
    new.meta["gf_site"] = site
    return site


PATTERN = Pattern(
    "formula", "approximate_match", find,
    "GELU formulas spelled out (erf, tanh, quick) become gelu")
