"""Tracing a module for `fuse`: a torch.fx Tracer that records, for every
node, the module path and source line of the code that made it, keeps our
own ops and modules opaque, and refuses traces that would fix a choice the
model makes at run time.

A trace is refused (and `fuse` then descends into the module's children)
when:
- forward has an argument defaulting to None (the trace would fix one side
  of every `if arg is None` it meets);
- tracing raises (data-dependent control flow, *args, no forward, ...);
- the graph traced in training mode differs from the one in eval mode
  (`F.dropout(x, p, self.training)` and `if self.training:` would be fixed
  to the mode at fuse time);
- forward does something in Python that the graph cannot keep: a grad-mode
  or autocast context, randomness, an attribute it writes
  (pystate.py).

A trace also says which modules it went into (`Traced.inlined`): the
graph stands for their code, and guard.py checks at each call that
they are still what runs.
"""
import dis
import inspect
import operator
import os
import sys
from typing import Dict, Optional, Tuple

import torch
import torch.fx
from torch import nn

from .. import functional as _functional
from . import runtime as _runtime
from .pystate import PythonState, Watch
from ..modules import GELU as _GELU, LinearBiasGELU as _LinearBiasGELU

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_OUR_DIR = os.path.dirname(os.path.abspath(__file__))
# Our functions stay calls in a graph (a fused model traces again).
RUNTIME_FUNCTIONS = tuple(getattr(_runtime, n) for n in _runtime.__all__)
_OPAQUE_FUNCTIONS = (_functional.gelu, _functional.bias_gelu,
                     _functional.add_gelu, _functional.geglu) + RUNTIME_FUNCTIONS


class Untraceable(Exception):
    """Why a module is not traced whole."""


def has_hooks(m: nn.Module) -> bool:
    return bool(m._forward_hooks or m._forward_pre_hooks or m._backward_hooks)


def _special_leaf(m: nn.Module) -> bool:
    """Modules the graph calls as they are: ours, the transformer layers
    (fused by transformer.py, which keeps their native fast path) and
    any module with hooks (traced on its own, so its hooks still fire)."""
    return (isinstance(m, (_GELU, _LinearBiasGELU,
                           nn.TransformerEncoderLayer, nn.TransformerDecoderLayer))
            or has_hooks(m))


class _Proxy(torch.fx.Proxy):
    """torch.fx.Proxy whose tuple unpacking (`a, b = x.chunk(2, -1)`) also
    works on Python 3.11, where torch 1.13 finds the wrong instruction
    (it indexes instructions by f_lasti // 2, which cache entries break),
    and which records in-place writes as the code makes them: `h += 1` as
    operator.iadd (torch.fx's Proxy has no __iadd__, so Python would fall
    back to an out-of-place `h = h + 1` and the write would be lost) and
    `h[i] = v` as operator.setitem (which torch.fx refuses). The graph then
    writes where the code writes, and rule.py sees it."""

    def __setitem__(self, key, value):
        self.tracer.create_proxy("call_function", operator.setitem, (self, key, value), {})

    def __iter__(self):
        frame = inspect.currentframe().f_back
        for inst in dis.get_instructions(frame.f_code):
            if inst.offset == frame.f_lasti:
                if inst.opname == "UNPACK_SEQUENCE":
                    return (self[i] for i in range(inst.argval))
                break
        return self.tracer.iter(self)


def _inplace(op):
    def method(self, other):
        return self.tracer.create_proxy("call_function", op, (self, other), {})
    return method


for _name in torch.fx.graph.inplace_methods:
    if _name != "setitem":
        setattr(_Proxy, f"__{_name}__", _inplace(getattr(operator, _name)))


class SiteTracer(torch.fx.Tracer):
    """Records node.meta['gf_path'] (module path, relative to the root) and
    node.meta['gf_source'] ((file, line) of the model code)."""

    # Buffers as graph values, so model code may index them with traced
    # sizes (nanoGPT's causal mask: self.bias[:, :, :T, :T]).
    proxy_buffer_attributes = True

    def __init__(self):
        super().__init__(autowrap_functions=_OPAQUE_FUNCTIONS)
        self._stack = [""]
        self.inlined: Dict[str, nn.Module] = {}  # path -> module traced into

    def proxy(self, node):
        return _Proxy(node, self)

    def is_leaf_module(self, m: nn.Module, qualname: str) -> bool:
        return _special_leaf(m) or super().is_leaf_module(m, qualname)

    def call_module(self, m, forward, args, kwargs):
        try:
            path = self.path_of_module(m)
        except NameError:
            # A module called but not installed as a submodule (a module-
            # level activation object: transformers' `gelu` in RoBERTa's LM
            # head, inside gelu_10): traced into when it holds no state of
            # its own, as a function would be; the global it was read from
            # is watched by the guard like any other.
            if list(m.parameters()) or list(m.buffers()) or has_hooks(m):
                raise
            return forward(*args, **kwargs)
        if not self.is_leaf_module(m, path):
            self.inlined.setdefault(path, m)
        self._stack.append(path)
        try:
            return super().call_module(m, forward, args, kwargs)
        finally:
            self._stack.pop()

    def create_node(self, kind, target, args, kwargs, name=None, type_expr=None):
        node = super().create_node(kind, target, args, kwargs, name, type_expr)
        node.meta["gf_path"] = target if kind == "call_module" else self._stack[-1]
        node.meta["gf_source"] = _user_frame()
        return node


def _user_frame() -> Optional[Tuple[str, int]]:
    """The innermost frame of model code; None when the call came from
    torch itself (nn.Sequential's forward), reached before our own frames."""
    f = sys._getframe(2)
    while f is not None:
        name = os.path.abspath(f.f_code.co_filename)
        if name.startswith(_OUR_DIR):
            return None
        if not name.startswith(_TORCH_DIR):
            return (f.f_code.co_filename, f.f_lineno)
        f = f.f_back
    return None


def _check_signature(m: nn.Module) -> None:
    try:
        sig = inspect.signature(m.forward)
    except (TypeError, ValueError) as e:
        raise Untraceable(f"no signature for forward: {e}") from None
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise Untraceable(f"forward takes {p}")
        if p.default is None:
            raise Untraceable(
                f"forward has an optional argument '{p.name}=None'; a trace "
                "would fix its `is None` branches")


def _set_training(m: nn.Module, modes: Dict[nn.Module, bool], mode: Optional[bool]):
    for sub in m.modules():
        sub.training = modes[sub] if mode is None else mode


def holds_no_gelu(m: nn.Module) -> bool:
    """A torch.nn module without children that is not nn.GELU (Linear,
    LayerNorm, Dropout, ...): nothing to trace."""
    return (not m._modules and type(m) is not nn.GELU
            and type(m).__module__.startswith("torch.nn."))


class Traced:
    """A module's graph, the tensors the trace had to keep as constants
    (`_tensor_constant<n>`: get_attr targets that are no attribute of the
    module), the modules it went into (path -> module, '' the module
    itself), what the code read outside their state that the guard
    watches (reads.Read: globals, F.gelu, class attributes) and
    what it took as fixed without a check (closures: `unwatched`)."""

    def __init__(self, graph, constants, inlined, global_reads, unwatched=()):
        self.graph, self.constants = graph, constants
        self.inlined, self.global_reads = inlined, global_reads
        self.unwatched = list(unwatched)


def _trace_in(m: nn.Module, mode: Optional[bool]) -> Traced:
    """m's trace with every module in `mode` (None: as they are)."""
    modes = {sub: sub.training for sub in m.modules()}
    before = set(m.__dict__)
    tracer = SiteTracer()
    try:
        _set_training(m, modes, mode)
        with Watch(m) as watch:
            graph = tracer.trace(m)
        # The tracer stows tensors it met outside the module on m itself.
        constants = {k: m.__dict__.pop(k) for k in set(m.__dict__) - before}
        watch.check(graph, constants)
    except PythonState as e:
        raise Untraceable(str(e)) from None
    except Exception as e:  # any failure: trace the children instead
        first = str(e).strip().splitlines()[0] if str(e).strip() else ""
        raise Untraceable(f"torch.fx: {type(e).__name__}: {first[:120]}") from None
    finally:
        _set_training(m, modes, None)
        for k in set(m.__dict__) - before:
            del m.__dict__[k]
    inlined = dict(tracer.inlined, **{"": m})
    reads, unwatched = watch.reads(inlined.values())
    return Traced(graph, constants, inlined, reads, unwatched)


def trace(m: nn.Module) -> Traced:
    """m's trace in its current training mode, or Untraceable. Before a
    graph replaces m's forward, check_mode_independent(m, code)."""
    if type(m).forward is nn.Module.forward:
        raise Untraceable("no forward (a container)")
    _check_signature(m)
    return _trace_in(m, None)


def check_mode_independent(m: nn.Module, code: str) -> None:
    """Untraceable when m's graph with every module flipped to the other
    training mode differs from `code` (code_of the graph traced as m is)."""
    if code != code_of(_trace_in(m, not m.training).graph):
        raise Untraceable("forward depends on self.training; a trace would fix it")


def code_of(g: torch.fx.Graph) -> str:
    """The graph's code: equal codes, equal computations."""
    return g.python_code("self").src
