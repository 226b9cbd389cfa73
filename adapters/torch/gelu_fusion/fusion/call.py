"""How a fused graph runs: the module stays where it was, the same object
of the same class, and calls go through a FusedCall set on the object as
its `_call_impl` (what nn.Module.__call__ runs).

At each call the FusedCall runs the fused graph, with the module as
`self` (so its Parameters, buffers and the modules the graph calls are
read then, not at fuse time), when
- the guard holds (guard.py: the modules the graph was traced through
  are the same objects, classes and attributes, without hooks);
- the module itself has no hooks;
- nothing is tracing or compiling the model (torch.fx, TorchScript,
  torch.compile: they see the module's own forward).
Otherwise it calls the module as nn.Module would: the model's own forward,
with its hooks. `forward` itself is never replaced, so TorchScript scripts
the model's own code.

A deepcopy keeps the fused graph and a guard mapped onto the copy (when
the original's guard holds; else the copy runs its own forward); a pickled
module is fused again at its first call after loading.
"""
from typing import Dict, List, Optional

import torch
import torch.fx
from torch import nn

from .guard import Guard, module_hooks

_KEY = "_call_impl"

# fuse's own work (api.run_fuse), set by the API when it is imported, which
# a pickled FusedCall calls to fuse its module again.
_run_fuse = None


def fuse_again_with(run_fuse) -> None:
    global _run_fuse
    _run_fuse = run_fuse


def installed(m: nn.Module) -> Optional["FusedCall"]:
    c = m.__dict__.get(_KEY)
    return c if isinstance(c, FusedCall) else None


def uninstall(m: nn.Module) -> None:
    if installed(m) is not None:
        del m.__dict__[_KEY]


def _busy() -> bool:
    """Something is recording the model's code rather than running it."""
    return (torch.compiler.is_compiling()
            or torch.fx._symbolic_trace.is_fx_symbolic_tracing())


class FusedCall:
    """A module's fused graph and its guard (see the module doc)."""

    def __init__(self, module: nn.Module, graph: Optional[torch.fx.Graph],
                 constants: Dict[str, torch.Tensor], modules: List[nn.Module],
                 global_reads, sites, opts: dict):
        self.module, self.sites, self.opts = module, sites, opts
        self.modules, self.global_reads = modules, global_reads
        self.fn, self.guard = None, None
        self.constants = dict(constants)
        if graph is not None:
            for node in graph.nodes:
                if node.op == "get_attr" and node.target in constants:
                    node.target = f"{_KEY}.constants.{node.target}"
            self.fn = _function_of(graph)
            self.guard = Guard(module, modules, global_reads)
        self.pending = False  # unpickled: fuse again at the first call

    def why_unfused(self) -> str:
        """'' when a call now runs the fused graph; else why not."""
        m = self.module
        if self.fn is None:
            return "the model changed before it was copied"
        if module_hooks(m):
            return f"{type(m).__name__} has hooks"
        return self.guard.why_not()

    def __call__(self, *args, **kwargs):
        m = self.module
        if self.pending:
            self._fuse_again()
            return m(*args, **kwargs)
        if self.fn is None or _busy() or module_hooks(m) or self.guard.why_not():
            return type(m)._call_impl(m, *args, **kwargs)
        return self.fn(m, *args, **kwargs)

    def _fuse_again(self) -> None:
        uninstall(self.module)
        _run_fuse(self.module, warn=False, **self.opts)

    def __deepcopy__(self, memo):
        import copy
        new = FusedCall.__new__(FusedCall)
        memo[id(self)] = new
        new.module = copy.deepcopy(self.module, memo)
        new.sites = copy.deepcopy(self.sites, memo)
        new.opts, new.fn, new.pending = dict(self.opts), self.fn, self.pending
        new.global_reads = self.global_reads
        new.modules = [copy.deepcopy(m, memo) for m in self.modules]
        new.constants = copy.deepcopy(self.constants, memo)
        new.guard = None
        if self.fn is not None and not self.pending:
            if self.guard.why_not():
                new.fn = None  # the copy runs its own forward
            else:
                new.guard = copy.deepcopy(self.guard, memo)
        return new

    def __getstate__(self):
        raise TypeError("FusedCall is pickled through __reduce__")

    def __reduce__(self):
        return (_unpickled, (self.module, self.opts))


def _unpickled(module, opts):
    c = FusedCall.__new__(FusedCall)
    c.module, c.opts, c.sites = module, opts, []
    c.fn = c.guard = None
    c.modules, c.global_reads, c.constants = [], [], {}
    c.pending = True
    return c


def install(m: nn.Module, call: FusedCall) -> None:
    m.__dict__[_KEY] = call


def _function_of(graph: torch.fx.Graph):
    code = graph.python_code(root_module="self")
    from torch.fx.graph_module import _forward_from_src
    return _forward_from_src(code.src, code.globals)
