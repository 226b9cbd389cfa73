"""Python behaviour a torch.fx trace cannot keep, found while tracing.

A trace runs forward once with stand-in tensors and records the tensor
operations; everything else the forward does in Python happens once, at
fuse time, and is gone from the graph. `Watch` (a context around the
trace) refuses what would then change what the model computes or how it
trains:

- grad-mode and autocast contexts (`with torch.no_grad():` around a frozen
  teacher, `torch.autocast`, `torch.inference_mode`) and reads of those
  modes (`if torch.is_grad_enabled():`);
- randomness drawn in Python (`random.random()` for a LayerDrop, NumPy's
  generators, a `torch.rand` whose result the graph does not compute);
- attributes the forward writes (a step counter), compared before and
  after the trace.

It also lists what the model code read outside the modules' own state (a
module-level constant, a functional such as F.gelu, a class attribute),
which the fused graph has folded in (reads.py); guard.py checks
them at each call.
"""
import os
import random
import sys
import sysconfig
import types
from typing import List, Set, Tuple

import torch
from torch import nn

from .guard import freeze
from .reads import scan

_TORCH_DIR = os.path.dirname(os.path.abspath(torch.__file__))
_OUR_DIR = os.path.dirname(os.path.abspath(__file__))
_STDLIB = os.path.abspath(sysconfig.get_paths()["stdlib"])


class PythonState(Exception):
    """What the forward does in Python that a trace would fix."""


def _code(fn):
    return getattr(fn, "__code__", None)


def _entered_codes():
    """Code objects of the Python context managers that switch modes."""
    gm = torch.autograd.grad_mode
    out = {}
    for cls, what in ((gm.no_grad, "a torch.no_grad() block"),
                      (gm.enable_grad, "a torch.enable_grad() block"),
                      (gm.inference_mode, "a torch.inference_mode() block"),
                      (torch.amp.autocast, "a torch.autocast block")):
        c = _code(cls.__enter__)
        if c is not None:
            out[c] = what
    return out


_ENTERED = _entered_codes()
# C functions that switch or read a mode the trace would fix.
_MODE_CALLS = {torch._C._set_grad_enabled: "torch.set_grad_enabled",
               torch.is_grad_enabled: "torch.is_grad_enabled()",
               torch.is_inference_mode_enabled: "torch.is_inference_mode_enabled()",
               torch.is_autocast_enabled: "torch.is_autocast_enabled()",
               torch.set_autocast_enabled: "torch.set_autocast_enabled"}
_TORCH_RANDOM = {torch.rand, torch.randn, torch.randint, torch.randperm,
                 torch.bernoulli, torch.multinomial, torch.normal, torch.poisson,
                 torch.rand_like, torch.randn_like, torch.randint_like}


def _user_file(filename: str) -> bool:
    f = os.path.abspath(filename)
    return not (f.startswith(_TORCH_DIR) or f.startswith(_OUR_DIR)
                or f.startswith(_STDLIB) or filename.startswith("<"))


def _is_python_random(fn) -> bool:
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, random.Random):
        return True
    mod = type(owner).__module__ if owner is not None else ""
    return mod.startswith("numpy.random")


class Watch:
    """Context around a trace of `root`; raises PythonState on exit when
    the forward did something a trace cannot keep (see the module doc)."""

    def __init__(self, root: nn.Module):
        self.root = root
        self.found: List[str] = []
        self.codes: Set[Tuple[types.CodeType, int]] = set()
        self.globals_of = {}
        self.torch_random: Set = set()

    def _profile(self, frame, event, arg):
        if event == "call":
            code = frame.f_code
            what = _ENTERED.get(code)
            if what is not None:
                self.found.append(what)
            elif _user_file(code.co_filename) and code not in self.globals_of:
                self.globals_of[code] = frame.f_globals
        elif event == "c_call":
            what = _MODE_CALLS.get(arg)
            if what is not None:
                self.found.append(what)
            elif _is_python_random(arg):
                name = getattr(arg, "__name__", arg)
                self.found.append(f"Python randomness ({name})")
            elif arg in _TORCH_RANDOM and _user_file(frame.f_code.co_filename):
                self.torch_random.add(arg)

    def __enter__(self):
        self._before = {id(m): (m, _writable(m)) for m in self.root.modules()}
        self._values = {id(m): dict(m.__dict__) for m in self.root.modules()}
        self._old = sys.getprofile()
        sys.setprofile(self._profile)
        return self

    def __exit__(self, kind, value, tb):
        sys.setprofile(self._old)
        self.writes = self._undo_writes()
        return False

    def _undo_writes(self) -> List[str]:
        """Puts back the attributes the traced forward set (a trace must
        leave the model as it was); returns 'Class.name' of each."""
        from .guard import _MODULE_INTERNALS
        out = []
        for m, _ in self._before.values():
            old = self._values[id(m)]
            for k in list(m.__dict__):
                if k in _MODULE_INTERNALS or k.startswith("_tensor_constant"):
                    continue
                if k not in old:
                    del m.__dict__[k]
                elif m.__dict__[k] is not old[k]:
                    m.__dict__[k] = old[k]
                else:
                    continue
                out.append(f"{type(m).__name__}.{k}")
            for k in old:
                if k not in m.__dict__:
                    m.__dict__[k] = old[k]
                    out.append(f"{type(m).__name__}.{k}")
        return out

    def check(self, graph: torch.fx.Graph, constants) -> None:
        """Raises PythonState for what the trace (that gave `graph`) saw."""
        if self.found:
            raise PythonState(f"forward uses {self.found[0]}, which a trace would drop")
        drawn = {n.target for n in graph.nodes if n.op == "call_function"}
        if self.torch_random - drawn:
            fn = sorted(self.torch_random - drawn, key=str)[0]
            raise PythonState(f"forward draws torch.{fn.__name__} outside the "
                              "graph; a trace would fix its outcome")
        if self.writes:
            raise PythonState(f"forward sets {self.writes[0]}; a trace would do "
                              "it once, at fuse time")
        for m, attrs in self._before.values():
            now = _writable(m)
            for k in constants:
                now.pop(k, None)
            if now != attrs:  # changed in place (a list appended to)
                raise PythonState(f"forward changes an attribute of "
                                  f"{type(m).__name__}; a trace would do it once, "
                                  "at fuse time")

    def reads(self, modules):
        """(the reads the guard watches, the facts it cannot watch) of the
        model code that ran during the trace (reads.py), for the
        modules traced into."""
        return scan(self.globals_of.items(), modules)


def _writable(m: nn.Module) -> dict:
    from .guard import _MODULE_INTERNALS
    return {k: freeze(v) for k, v in m.__dict__.items() if k not in _MODULE_INTERNALS}
