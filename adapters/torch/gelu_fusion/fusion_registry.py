"""The fusions `fuse` and `backend` apply, in one ordered list of patterns
(fusion_pattern.Pattern), each from its own file, as Inductor's pattern
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

Every pattern, registered here or later, is held to one rule after it runs
(fusion_rule): a rewrite that would read a tensor after something wrote
it, where the original read it before, or keep a tensor that is written
later, is undone, and its site says which write stopped it.
"""
from typing import Dict, List, Optional

from . import fusion_add, fusion_bias, fusion_geglu, fusion_gelu
from . import fusion_gelu_formula, fusion_rule, fusion_save_memory
from .fusion_explain import Site
from .fusion_pattern import Pattern

PATTERNS: List[Pattern] = [
    fusion_gelu_formula.PATTERN,
    fusion_gelu.PATTERN,
    fusion_geglu.PATTERN,
    fusion_bias.PATTERN,
    fusion_add.PATTERN,
    fusion_save_memory.PATTERN,
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


def apply(gm, path: str, options: Dict[str, bool]) -> List[Site]:
    """Every enabled pattern on the graph, in order: the sites found."""
    sites: List[Site] = []
    for p in enabled(options):
        before = fusion_rule.Before(gm.graph, sites)
        sites += p.apply(gm, path) or []
        fusion_rule.enforce(gm, before, p.name)
    return sites
