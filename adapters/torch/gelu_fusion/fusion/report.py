"""What `fuse` found: one row per GELU site (the table `explain(model)`
prints)."""
import os
from dataclasses import dataclass, field
from typing import List, Tuple



@dataclass
class Site:
    """One GELU in the model code.

    path:    module path of the code that computes it ('' for the model)
    source:  file:line of that code
    pattern: how it is written ('nn.GELU', 'F.gelu', 'tanh formula', ...)
    form:    'none' (erf), 'tanh' or 'quick'
    result:  what it became ('gelu', 'bias_gelu', 'add_gelu', 'geglu',
             'unchanged' where it was left)
    reason:  why it was left, or what was checked at each call
    checked: what the fused graph read outside the modules' own state,
             compared at each call (globals, F.gelu, class attributes)
    fixed:   what it took as fixed without a check (closure variables,
             what objects hold beyond their own attributes)
    """
    path: str
    source: str
    pattern: str
    form: str
    result: str = "gelu"
    reason: str = ""
    checked: Tuple[str, ...] = ()
    fixed: Tuple[str, ...] = ()

    @property
    def fused(self) -> bool:
        return self.result != "unchanged"


@dataclass
class Report:
    """The sites `fuse` found, and the modules it could not trace whole
    (with the reason; it fused inside them where it could)."""
    sites: List[Site] = field(default_factory=list)
    untraced: List[Tuple[str, str]] = field(default_factory=list)

    @property
    def fused(self) -> List[Site]:
        return [s for s in self.sites if s.fused]

    @property
    def left(self) -> List[Site]:
        return [s for s in self.sites if not s.fused]

    def table(self) -> str:
        head = ("module", "source", "pattern", "form", "became", "why / checks")
        rows = [(s.path or "(model)", s.source, s.pattern, s.form, s.result,
                 s.reason) for s in self.sites]
        if not rows:
            text = "gelu_fusion.fuse: no GELU found"
        else:
            w = [max(len(r[i]) for r in rows + [head]) for i in range(5)]
            fmt = "  ".join("{:<%d}" % n for n in w) + "  {}"
            lines = [fmt.format(*head), fmt.format(*("-" * n for n in w), "-" * 12)]
            last = None
            for r, site in zip(rows, self.sites):
                lines.append(fmt.format(*r).rstrip())
                if site.fused and (site.checked, site.fixed) != last:
                    last = (site.checked, site.fixed)
                    if site.checked:
                        lines.append("    checked at each call: " + ", ".join(site.checked))
                    if site.fixed:
                        lines.append("    taken as fixed: " + "; ".join(site.fixed))
            n, k = len(self.sites), len(self.fused)
            lines.append(f"{k} of {n} GELU sites fused")
            text = "\n".join(lines)
        if self.untraced:
            text += "\nnot traced whole (fused inside where possible):"
            for path, why in self.untraced:
                text += f"\n  {path or '(model)'}: {why}"
        return text

    def __str__(self) -> str:
        return self.table()


def source_of(frame_info) -> str:
    """'file.py:line' of a (filename, lineno) pair; '' when unknown."""
    if not frame_info:
        return ""
    filename, lineno = frame_info
    return f"{os.path.basename(filename)}:{lineno}"

