"""backend(): a torch.compile backend that fuses the GELUs of the graphs
Dynamo captures, then hands each graph to an inner backend (Inductor by
default).

    model = torch.compile(model, backend=gelu_fusion.backend())

Dynamo inlines the modules: a graph holds F.linear, F.gelu, `+` and the
chunks of a GeGLU as calls, the Parameters as its inputs. The passes of
`fuse` (fusion.py) run on it unchanged: formulas, GELU calls, GeGLU, bias,
add, and the GELU with the next Linear as one node that keeps the GELU's
input for the backward (patterns/save_memory.py; under compile the node calls
the functional *_and_value ops, gelu_linear.py). Bodies of higher-order
ops (torch.utils.checkpoint's) are fused the same way.

What Dynamo guards (grad mode, module attributes and identity, hooks,
Python globals) makes it recompile, and each new graph is fused again, so
a compiled model follows what the user changes as the unfused one does.
Within a graph, a context Dynamo records as calls (`torch.no_grad()`,
`torch.autocast`) splits it into regions: no fusion spans two of them.
"""
from typing import Callable, Dict, List, Union

import torch
import torch.fx
from torch.fx import Node

from . import registry
from .report import Report
from .writes import Effects

_OPTIONS = ("approximate_match", "bias", "add", "geglu", "save_memory")


def _region_edge(x):
    """Stands between a value and its users in another grad-mode or
    autocast region while the passes run: no pattern matches across it."""
    return x


def _changes_mode(node: Node) -> bool:
    """The call changes grad mode or autocast for what follows it."""
    if node.op != "call_function":
        return False
    name = getattr(node.target, "__name__", "")
    return ("grad_enabled" in name or "autocast" in name or "inference_mode" in name
            or name.startswith(("_enter_", "_exit_")))


def _add_edges(graph: torch.fx.Graph) -> List[Node]:
    """Puts a _region_edge between each value and its users in a later
    region (one per value and region, at the region's start)."""
    region, starts, n = {}, {0: None}, 0
    for node in graph.nodes:
        if _changes_mode(node):
            n += 1
            starts[n] = node
        region[node] = n
    edges = []
    for node in list(graph.nodes):
        if node.op in ("placeholder", "get_attr", "output"):
            continue
        later = {}
        for user in list(node.users):
            r = region.get(user, n)
            if user.op == "output" or r == region[node]:
                continue
            if r not in later:
                with graph.inserting_after(starts[r]):
                    later[r] = graph.call_function(_region_edge, (node,))
                edges.append(later[r])
            user.replace_input_with(node, later[r])
    return edges


def _drop_edges(graph: torch.fx.Graph) -> None:
    for node in list(graph.nodes):
        if node.op == "call_function" and node.target is _region_edge:
            node.replace_all_uses_with(node.args[0])
            graph.erase_node(node)


def fuse_graph(gm: torch.fx.GraphModule, options: Dict[str, bool],
               report: Report, prefix: str = "") -> None:
    """Runs fuse's passes on a Dynamo graph (and on the graphs of its
    higher-order ops), in place."""
    for name, sub in list(gm.named_children()):
        if isinstance(sub, torch.fx.GraphModule):
            fuse_graph(sub, options, report, f"{prefix}{name}.")
    _add_edges(gm.graph)
    report.sites.extend(registry.apply(registry.GraphOf(gm, gm.graph),
                                       prefix.rstrip("."), dict(options)))
    _drop_edges(gm.graph)
    # Dead code is what the rewrites left unused; a call that writes a
    # tensor (h.mul_(3), whose result nobody uses) is not dead.
    effects = Effects(gm.graph, gm)
    gm.graph.eliminate_dead_code(
        is_impure_node=lambda n: n.is_impure() or bool(effects.writes(n)))
    gm.graph.lint()
    gm.recompile()


def _inner(inner: Union[str, Callable]) -> Callable:
    if callable(inner):
        return inner
    from torch._dynamo import lookup_backend
    return lookup_backend(inner)


class Backend:
    """The backend `backend()` returns; `reports` holds what each graph
    compiled so far was fused into (gelu_fusion.explain's Report)."""

    def __init__(self, inner, options: Dict[str, bool]):
        self.inner, self.options = inner, options
        self.reports: List[Report] = []

    def __call__(self, gm: torch.fx.GraphModule, example_inputs):
        report = Report()
        fuse_graph(gm, self.options, report)
        self.reports.append(report)
        return _inner(self.inner)(gm, example_inputs)


def backend(inner: Union[str, Callable] = "inductor", *, approximate_match: bool = True,
            bias: bool = True, add: bool = True, geglu: bool = True,
            save_memory: bool = True) -> Backend:
    """A torch.compile backend: fuse's passes on each captured graph, then
    `inner` (a backend name such as 'inductor' or 'aot_eager', or a
    backend callable). Options as fuse's.

        torch.compile(model, backend=gelu_fusion.backend())
    """
    options = dict(approximate_match=approximate_match, bias=bias, add=add,
                   geglu=geglu, save_memory=save_memory)
    return Backend(inner, options)
