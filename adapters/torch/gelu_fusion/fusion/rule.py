"""The rule the registry holds every fusion to, whatever pattern made it:
a fused node reads each of its inputs where the original code read it, or
nothing writes that input (nor memory it shares) from the first place the
original read it to the end of the graph.

A fused node stands where one of the nodes it replaces stood (the
GELU->Linear node at the Linear, add_gelu at the GELU), so it may read a
tensor later than the original did: `h = fc1(x); y = gelu(h); h.mul_(3);
fc2(y)` read h before the write, a node at fc2 would read it after. And it
may keep different tensors for its backward than the original did
(add_gelu keeps a and b where gelu(a + b) kept the sum), so a later write
to them would change or stop its backward where the original trained.
Both are a write to an input after the place the original first read it.
Where the graph has one, the rewrite is undone: the nodes it replaced come
back as they were, the sites it changed get back what they said before the
pattern ran, and `explain` says which write kept the pattern from applying.
Writes are found from the calls' own declarations (writes.py).

Usage, around each pattern: `before = Before(graph, sites)`, the pattern
rewrites, `enforce(gm, before, pattern_name)`.
"""
import copy
from typing import Dict, List, Set

import torch.fx
from torch.fx import Node

from .report import Site
from .writes import Effects, describe_write, written_between

_CALLS = ("call_function", "call_method", "call_module")


def _inputs(args, kwargs) -> List[Node]:
    out: List[Node] = []
    torch.fx.map_arg((args, kwargs), out.append)
    return out


def _sites_in(meta: dict) -> List[Site]:
    return [v for v in meta.values() if isinstance(v, Site)]


class Before:
    """A graph and its sites as they were before a pattern ran."""

    def __init__(self, graph: torch.fx.Graph, sites: List[Site]):
        self.nodes = list(graph.nodes)
        self.order = {n: i for i, n in enumerate(self.nodes)}
        self.calls = {n: (n.op, n.target, n.args, dict(n.kwargs)) for n in self.nodes}
        self.meta = {n: dict(n.meta) for n in self.nodes}
        every = list(sites) + [s for m in self.meta.values() for s in _sites_in(m)]
        self.sites = {id(s): copy.copy(s.__dict__) for s in every}

    def changed(self, n: Node) -> bool:
        return (n.op, n.target, n.args, dict(n.kwargs)) != self.calls[n]


def enforce(gm, before: Before, pattern: str) -> None:
    """Undoes each rewrite of `pattern` that breaks the rule (module doc)."""
    graph = gm.graph
    now = list(graph.nodes)
    new = [n for n in now if n not in before.order]
    changed = [n for n in now if n in before.order and before.changed(n)]
    if not new and not changed:
        return
    alive = set(now)
    place: Dict[Node, float] = {}
    last = -1.0
    for n in now:  # a new node sits just after the old node before it
        last = before.order.get(n, last)
        place[n] = last if n in before.order else last + 0.5
    first_read: Dict[Node, float] = {}  # an input -> the first erased reader
    for e in before.nodes:
        if e not in alive:
            for a in _inputs(*before.calls[e][2:]):
                first_read.setdefault(a, before.order[e])
    effects = Effects(graph, gm)
    bad: Dict[Node, str] = {}
    for n in new + changed:
        if n.op not in _CALLS:
            continue
        old_inputs = set(_inputs(*before.calls[n][2:])) if n in before.order else set()
        for a in n.all_input_nodes:
            if a in old_inputs or (a not in before.order and a.op != "get_attr"):
                continue  # read as before, or a new call (checked itself)
            start = min(first_read.get(a, place[n]), place[n])
            writers = written_between(effects, a, start, place, skip=(n,))
            if writers:
                bad[n] = (f"{describe_write(writers[0])} writes `{a.name}` (or memory "
                          "it shares) after the original code first reads it")
                break
    if not bad:
        return
    for group, why in _groups(set(new) | set(changed), bad):
        _undo(graph, before, group, f"{pattern} not applied: {why}")


def _groups(rewritten: Set[Node], bad: Dict[Node, str]):
    """The connected pieces of the rewritten nodes that hold a bad one,
    each with the reason of its first bad node."""
    parent = {n: n for n in rewritten}

    def find(n):
        while parent[n] is not n:
            n = parent[n]
        return n

    for n in rewritten:
        for a in n.all_input_nodes:
            if a in rewritten:
                parent[find(a)] = find(n)
    groups: Dict[Node, List[Node]] = {}
    for n in rewritten:
        groups.setdefault(find(n), []).append(n)
    for members in groups.values():
        why = next((bad[n] for n in members if n in bad), None)
        if why is not None:
            yield members, why


def _undo(graph: torch.fx.Graph, before: Before, group: List[Node], why: str) -> None:
    """Puts the nodes `group` replaced or changed back as they were."""
    restored: Dict[Node, Node] = {}
    alive = set(graph.nodes)

    def need(n: Node, out: Set[Node]) -> None:
        if n in alive or n in out:
            return
        out.add(n)
        for a in _inputs(*before.calls[n][2:]):
            need(a, out)

    wanted: Set[Node] = set()
    old = [n for n in group if n in before.order]
    for n in old:
        for a in _inputs(*before.calls[n][2:]):
            need(a, wanted)
    remap = lambda a: restored.get(a, a)  # noqa: E731
    for e in sorted(wanted, key=before.order.__getitem__):
        anchor = next(n for n in graph.nodes
                      if before.order.get(n, -1) > before.order[e])
        op, target, args, kwargs = before.calls[e]
        with graph.inserting_before(anchor):
            r = graph.create_node(op, target, torch.fx.map_arg(args, remap),
                                  torch.fx.map_arg(kwargs, remap), name=e.name)
        r.meta.update(before.meta[e])
        restored[e] = r
    for n in old:
        _, target, args, kwargs = before.calls[n]
        n.target = target
        n.args = torch.fx.map_arg(args, remap)
        n.kwargs = torch.fx.map_arg(kwargs, remap)
        n.meta.clear()
        n.meta.update(before.meta[n])
    sites = {id(s): s for n in group for s in _sites_in(n.meta)}
    sites.update((id(s), s) for r in restored.values() for s in _sites_in(r.meta))
    order = {n: i for i, n in enumerate(graph.nodes)}
    for n in sorted((n for n in group if n not in before.order), key=lambda n: -order[n]):
        graph.erase_node(n)
    for s in sites.values():
        if id(s) in before.sites:
            s.__dict__.update(before.sites[id(s)])
        else:
            s.result, s.reason = "unchanged", ""
        s.reason = f"{s.reason}; {why}" if s.reason else why
