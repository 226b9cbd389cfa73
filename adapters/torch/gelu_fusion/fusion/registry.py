"""The fusions `fuse` and `backend` apply, in one ordered list of patterns
(pattern.Pattern), each from its own file, as Inductor's pattern
matcher keeps its passes:

    formula  GELU formulas spelled out (erf, tanh, quick) -> gelu
    gelu     nn.GELU, F.gelu, torch.gelu, activation classes -> gelu
    geglu    gelu(a) * b of a tensor's halves (or of two Linears) -> geglu
    bias     a biased Linear / F.linear / addmm before a gelu -> bias_gelu
    add      gelu(a + b) -> add_gelu
    save_memory  a gelu or geglu whose only user is a Linear -> one node
             that keeps the GELU's input, not its output

Order matters: the GELU patterns make every GELU one canonical call, which
the later ones match. A new fusion is a new file with its Pattern,
registered here in order (or with register(pattern, after=...)).

Why matchers, not torch.fx's search/replace pairs (subgraph_rewriter, as
Inductor's register_replacement): a pair matches one spelling and passes
over a near miss in silence, while a pattern here matches every spelling
of its sum or split (operator.add, torch.add, Tensor.add; chunk, split,
slicing) on the canonical GELU, and gives each GELU it leaves the reason
`explain` prints (the sum has another use, a hook, a dropout between).

Every pattern, registered here or later, is held to one rule after it runs
(rule.py): a rewrite that would read a tensor after something wrote
it, where the original read it before, or keep a tensor that is written
later, is undone, and its site says which write stopped it.
"""
from typing import Dict, List, Optional

import torch.fx
from torch import nn

from . import rule
from .pattern import Pattern
from .patterns import add, bias, formula, geglu, gelu, save_memory
from .report import Site



class GraphOf:
    """What a pattern works on: the graph, and the module it was traced
    from (its attributes, get_submodule, parameters) for its checks."""

    def __init__(self, m: nn.Module, graph: torch.fx.Graph):
        self.graph, self._m = graph, m

    def __getattr__(self, name):
        return getattr(self._m, name)


PATTERNS: List[Pattern] = [
    formula.PATTERN,
    gelu.PATTERN,
    geglu.PATTERN,
    bias.PATTERN,
    add.PATTERN,
    save_memory.PATTERN,
]


def register(pattern: Pattern, after: Optional[str] = None) -> Pattern:
    """Adds `pattern` after the pattern named `after` (last when None)."""
    if any(p.name == pattern.name for p in PATTERNS):
        raise ValueError(f"gelu_fusion: a pattern named {pattern.name!r} is registered")
    at = len(PATTERNS)
    if after is not None:
        names = [p.name for p in PATTERNS]
        if after not in names:
            raise ValueError(f"gelu_fusion: no pattern named {after!r}; "
                             f"registered: {', '.join(names)}")
        at = names.index(after) + 1
    PATTERNS.insert(at, pattern)
    return pattern


def unregister(name: str) -> None:
    PATTERNS[:] = [p for p in PATTERNS if p.name != name]


def enabled(options: Dict[str, bool]) -> List[Pattern]:
    return [p for p in PATTERNS if p.option is None or options.get(p.option, True)]


def apply(gm: GraphOf, path: str, options: Dict[str, bool]) -> List[Site]:
    """Every enabled pattern on gm's graph, in order, rewriting it in place:
    the sites found. `options`: fuse()'s keywords (a pattern whose option
    is False is skipped); `path`: the module path the sites are given."""
    sites: List[Site] = []
    for p in enabled(options):
        before = rule.Before(gm.graph, sites)
        sites += p.apply(gm, path) or []
        rule.enforce(gm, before, p.name)
    return sites
