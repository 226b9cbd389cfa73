"""fuse(model): find every GELU in a model's code and run it through
gelu_fusion's ops, with bias, add and GeGLU fused where the graph allows.

How: each module is traced with torch.fx (trace.py); where a module
cannot be traced whole, fuse descends into its children, so one
untraceable line costs only the module that holds it. In a traced graph the
registry's patterns run in their order (registry.py: formulas, GELU
calls, GeGLU, bias, add, memory saving), each matching, then rewriting or
giving its reason. Transformer layers are fused by their feed-forward block
(transformer.py).

What stays: everything. A traced module keeps its object, class,
submodules, Parameters, buffers and attributes; its calls run the fused
graph through a FusedCall (call.py) while the modules the graph was
traced through are unchanged and unhooked (guard.py), and its own
forward otherwise. So the module tree, state_dict keys and an optimizer
built before are unchanged, and whatever the user changes after `fuse`
(hooks, a swapped module, an attribute) acts as it would unfused. A module
with hooks at fuse time is traced on its own.
"""
import dataclasses
import warnings
from typing import List, Tuple

from torch import nn

from . import call, registry, transformer
from .call import FusedCall, install, installed, uninstall
from .report import Report, Site
from .trace import (Traced, Untraceable, _special_leaf,
                           check_mode_independent, code_of, holds_no_gelu, trace)


def _changed(s: Site) -> bool:
    """Whether fusing the site changed the graph (a gelu_fusion call that
    stays itself did not)."""
    return s.fused and not (s.pattern.startswith("gelu_fusion")
                            and (s.result == "gelu" or s.reason == "fused already"))


def _join(*parts: str) -> str:
    return ".".join(p for p in parts if p)


def _user_code(m: nn.Module) -> bool:
    return not type(m).__module__.startswith("torch.")


class _Run:
    def __init__(self, opts: dict, apply: bool):
        self.opts, self.apply, self.report = opts, apply, Report()

    def module(self, m: nn.Module, path: str) -> nn.Module:
        """m fused: a replacement, or m itself changed in place."""
        if transformer.handles(m):
            site = transformer.fuse(m, path, self.apply, self.opts["save_memory"])
            if site is not None:
                self.report.sites.append(site)
            return m
        if holds_no_gelu(m):
            return m
        done = installed(m)
        if done is not None and not done.pending and not done.why_unfused():
            return self.fused_already(m, done, path)
        if done is not None and self.apply:
            uninstall(m)  # changed since: fused again from its code now
        elif done is not None and not done.pending:
            self.report.untraced.append((path, "runs its own forward now: "
                                         f"{done.why_unfused()}; fuse(model) "
                                         "again fuses it as it is now"))
        try:
            traced = trace(m)
        except Untraceable as e:
            return self.untraced(m, path, e)
        return self.graph(m, traced, path)

    def fused_already(self, m: nn.Module, done: FusedCall, path: str) -> nn.Module:
        for s in done.sites:
            pattern = s.pattern if s.pattern.startswith("gelu_fusion") \
                else f"gelu_fusion: {s.pattern}"
            self.report.sites.append(dataclasses.replace(
                s, path=_join(path, s.path), pattern=pattern, reason="fused already"))
        for target in done.opts.get("_children", ()):
            parent, _, name = target.rpartition(".")
            self.children(m.get_submodule(parent), _join(path, parent), [name])
        return m

    def untraced(self, m: nn.Module, path: str, why: Untraceable) -> nn.Module:
        if _user_code(m) and type(m).forward is not nn.Module.forward:
            self.report.untraced.append((path, str(why)))
        self.children(m, path)
        return m

    def children(self, m: nn.Module, path: str, names=None) -> None:
        for name in list(m._modules) if names is None else names:
            child = m._modules[name]
            if child is None:
                continue
            new = self.module(child, _join(path, name))
            if new is not child and self.apply:
                m._modules[name] = new

    def graph(self, m: nn.Module, traced: Traced, path: str) -> nn.Module:
        graph = traced.graph
        unfused = code_of(graph)
        calls_before = _module_calls(graph)
        sites = registry.apply(registry.GraphOf(m, graph), path, self.opts)
        checked = tuple(dict.fromkeys(r.label for r in traced.global_reads))
        for s in sites:
            s.checked, s.fixed = checked, tuple(traced.unwatched)
        changed = any(_changed(s) for s in sites)
        if changed:  # only then is a second trace worth its time
            try:
                check_mode_independent(m, unfused)
            except Untraceable as e:
                return self.untraced(m, path, e)
        self.report.sites.extend(sites)
        # Modules the graph calls as they are, but that may hold GELUs.
        done, children = set(), []
        for node in graph.nodes:
            if node.op != "call_module" or node.target in done:
                continue
            done.add(node.target)
            sub = m.get_submodule(node.target)
            if _special_leaf(sub) or sub._modules:
                parent, _, name = node.target.rpartition(".")
                children.append(node.target)
                self.children(m.get_submodule(parent), _join(path, parent), [name])
        if not changed or not self.apply:
            return m
        graph.lint()
        guarded = _guarded(m, traced, calls_before, graph)
        local = [dataclasses.replace(
            s, path=s.path[len(path) + 1:] if path and s.path.startswith(path + ".")
            else ("" if s.path == path else s.path)) for s in sites]
        opts = dict(self.opts, _children=tuple(children))
        install(m, FusedCall(m, graph, traced.constants, guarded,
                             traced.global_reads, local, opts))
        return m



def _module_calls(graph) -> set:
    return {n.target for n in graph.nodes if n.op == "call_module"}


def _guarded(m: nn.Module, traced: Traced, calls_before: set, graph) -> List[nn.Module]:
    """The modules whose code or attributes the fused graph stands for:
    those traced into, those called before the passes but no longer, the
    owners of what the graph reads (get_attr), and their parents."""
    paths = set(traced.inlined) | (calls_before - _module_calls(graph))
    paths |= {n.target.rpartition(".")[0] for n in graph.nodes if n.op == "get_attr"
              and n.target not in traced.constants}
    for p in list(paths):
        parts = p.split(".") if p else []
        paths.update(".".join(parts[:i]) for i in range(len(parts)))
    return [m] + [m.get_submodule(p) for p in sorted(paths) if p]


def run_fuse(model: nn.Module, *, approximate_match: bool = True,
             bias: bool = True, add: bool = True, geglu: bool = True,
             save_memory: bool = True, apply: bool = True, warn: bool = True,
             **_ignored) -> Tuple[nn.Module, Report]:
    """fuse's work: (the fused model, what was found). With apply=False
    nothing is changed and the model is returned as it is."""
    if not isinstance(model, nn.Module):
        raise TypeError(f"gelu_fusion.fuse: model is {type(model).__name__}, "
                        "expected a torch.nn.Module")
    run = _Run(dict(approximate_match=approximate_match, bias=bias, add=add,
                    geglu=geglu, save_memory=save_memory), apply)
    out = run.module(model, "")
    if not run.report.sites and warn:
        warnings.warn("gelu_fusion.fuse: found no GELU in the model "
                      f"{type(model).__name__}; nothing was fused"
                      + (" (see gelu_fusion.explain(model) for the modules "
                         "it could not trace)" if run.report.untraced else ""),
                      stacklevel=3)
    return (out if apply else model), run.report


def fuse(model: nn.Module, *, approximate_match: bool = True, bias: bool = True,
         add: bool = True, geglu: bool = True, save_memory: bool = True,
         verbose: bool = False) -> nn.Module:
    """Returns `model` with its GELUs running through gelu_fusion's ops.

    Finds nn.GELU, F.gelu / torch.gelu (any `approximate`), activation
    classes that call them, and (with approximate_match) the erf, tanh and
    quick formulas spelled out; fuses a biased Linear / F.linear / addmm
    before a GELU into bias_gelu (bias), `gelu(a + b)` into add_gelu (add),
    and GeGLU into geglu (geglu). Transformer layers with a GELU activation
    get their feed-forward block fused. With save_memory, a GELU or GeGLU
    whose only user is a Linear (nn.Linear, F.linear, or Hugging Face's
    Conv1D traced through, as F.linear on weight.t()) becomes one node with
    it that keeps the GELU's input and not its output for the backward
    (recomputed in the fused backward pass; same results, one
    [..., hidden] tensor less per block); a dropout in between is left
    unfused (explain says which).

    Submodules are replaced inside `model`; when `model` itself is traced
    whole, the returned module replaces it, so always use the return value.
    Parameters (the same objects), names, state_dict keys and the module
    tree are unchanged. verbose=True prints the table of sites (as
    gelu_fusion.explain does); a model with no GELU found warns.
    """
    out, report = run_fuse(model, approximate_match=approximate_match,
                           bias=bias, add=add, geglu=geglu, save_memory=save_memory,
                           apply=True)
    if verbose:
        print(report.table())
    return out


def explain(model: nn.Module, *, approximate_match: bool = True,
            bias: bool = True, add: bool = True, geglu: bool = True,
            save_memory: bool = True, print_table: bool = True) -> Report:
    """Prints (and returns) the table of every GELU site `fuse` would find
    in `model` with these options: module path and source line, pattern,
    what it would become or why it would be left. The model is not
    changed."""
    _, report = run_fuse(model, approximate_match=approximate_match, bias=bias,
                      add=add, geglu=geglu, save_memory=save_memory, apply=False)
    if print_table:
        print(report.table())
    return report


# A FusedCall that was pickled fuses its module again with this at its
# first call (the call layer does not import the API above it).
call.fuse_again_with(run_fuse)
