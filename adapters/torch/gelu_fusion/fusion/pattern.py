"""One fusion of `fuse`, as the registry (registry.py) applies it."""
from dataclasses import dataclass
from typing import Callable, List, Optional


@dataclass(frozen=True)
class Pattern:
    """A fusion: `apply(gm, path)` finds each match of it in a traced graph
    (gm: the graph and the module it was traced from, for its submodules
    and Parameters), then rewrites the match or leaves it as written with
    the reason on its site (Site.result, Site.reason: what `explain`
    prints). It returns the GELU sites it found; a pattern that fuses
    around sites found before it returns none and updates theirs.

    `option` is the keyword of fuse() and backend() that turns it off
    (None: always on)."""

    name: str
    option: Optional[str]
    apply: Callable[..., List]
    summary: str
